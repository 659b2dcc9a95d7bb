"""PyTorch checkpoints without torch: tinyfw.nn.state.torch_load (and tinyfw.torch.load) read
files torch.save writes, zip and legacy (every dtype tinyfw has, views sharing a storage,
non-contiguous tensors, parameters, nested containers), refuse any other pickle global with
torch's pickle.UnpicklingError, and fail on malformed files with a clear error; tinyfw.torch
.save writes files torch.load reads."""
from __future__ import annotations

import io
import os
import pickle
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
import torch

import tinyfw.torch as tt
from tinyfw import Tensor
from tinyfw.nn.state import torch_load, torch_save

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool, torch.uint16, torch.uint32,
          torch.uint64]


def saved(obj: Any, legacy: bool = False) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=not legacy)
    return buf.getvalue()


def as_numpy(t: torch.Tensor) -> np.ndarray:
    return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()


def check(ours: Any, theirs: Any) -> None:
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, Tensor), type(ours)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), (ours.dtype, theirs)
        got = ours.float().numpy() if theirs.dtype == torch.bfloat16 else ours.numpy()
        np.testing.assert_array_equal(got, as_numpy(theirs.detach()))
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for k in theirs:
            check(ours[k], theirs[k])
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            check(a, b)
    else:
        assert ours == theirs


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_every_dtype(legacy: bool) -> None:
    obj = {str(dt): (torch.arange(6) % 3 - (1 if dt.is_signed else 0)).to(dt).reshape(2, 3)
           for dt in DTYPES if not (legacy and dt in (torch.uint16, torch.uint32, torch.uint64))}
    obj["scalar"] = torch.tensor(2.5)
    obj["empty"] = torch.zeros(0, 3)
    check(torch_load(saved(obj, legacy)), obj)


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_views_sharing_a_storage_and_non_contiguous(legacy: bool) -> None:
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    obj = OrderedDict([("base", base), ("rows", base[1:3]), ("cols", base[:, ::2]),
                       ("t", base.T), ("expanded", torch.ones(3, 1).expand(3, 4)),
                       ("permuted", torch.randn(2, 3, 4).permute(2, 0, 1))])
    check(torch_load(saved(obj, legacy)), obj)


def test_a_state_dict_and_nested_containers() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2))
    obj = {"model": model.state_dict(), "epoch": 3, "loss": 0.25, "name": "ckpt",
           "opt": torch.optim.SGD(model.parameters(), lr=0.1).state_dict(),
           "shapes": (torch.Size([2, 3]), [1, None, True]), "param": torch.nn.Parameter(
               torch.ones(2))}
    out = torch_load(saved(obj))
    check(out["model"], obj["model"])
    assert out["epoch"] == 3 and out["name"] == "ckpt" and out["shapes"] == ((2, 3),
                                                                             [1, None, True])
    assert out["opt"]["param_groups"][0]["lr"] == 0.1
    assert out["param"].requires_grad


def test_torch_module_load_and_a_path(tmp_path: Any) -> None:
    path = tmp_path / "weights.pt"
    torch.save({"w": torch.ones(2, 2)}, path)
    assert tt.load(path)["w"].numpy().sum() == 4
    assert tt.load(str(path), map_location="cpu")["w"].device == "CPU"
    assert torch_load(open(path, "rb"))["w"].shape == (2, 2)


class Evil:
    def __reduce__(self) -> Any:
        return (os.system, ("echo pwned",))


def test_any_other_global_is_refused_as_torch() -> None:
    data = saved({"w": torch.ones(1), "evil": Evil()})
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        torch_load(data)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(data), weights_only=True)  # torch refuses it too
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        torch_load(saved({"a": np.zeros(2)}))
    with pytest.raises(TypeError, match="(?i)complex"):
        torch_load(saved({"c": torch.zeros(2, dtype=torch.complex64)}))
    with pytest.raises(NotImplementedError):
        tt.load(io.BytesIO(saved({})), weights_only=False)


def _rewritten(data: bytes, name: str, content: bytes | None) -> bytes:
    """The zip with one record replaced (or left out)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for item in src.namelist():
            if item.endswith(name):
                if content is not None:
                    dst.writestr(item, content)
            else:
                dst.writestr(item, src.read(item))
    return out.getvalue()


def test_malformed_files_give_a_clear_error() -> None:
    good = saved({"w": torch.arange(10.0)})
    cases = {
        "random bytes": os.urandom(64),
        "empty": b"",
        "truncated zip": good[:len(good) // 2],
        "a zip without data.pkl": _rewritten(good, "data.pkl", None),
        "a storage left out": _rewritten(good, "data/0", None),
        "a storage cut short": _rewritten(good, "data/0", b"\0" * 8),
        "garbage for the pickle": _rewritten(good, "data.pkl", b"\x80\x02garbage"),
        "truncated legacy": saved({"w": torch.arange(10.0)}, legacy=True)[:-20],
    }
    for what, data in cases.items():
        with pytest.raises((RuntimeError, pickle.UnpicklingError)) as info:
            torch_load(data)
        assert str(info.value), what


def test_save_is_read_by_torch(tmp_path: Any) -> None:
    rng = np.random.default_rng(0)
    weights = OrderedDict([("w", tt.tensor(rng.standard_normal((3, 2)).astype(np.float32))),
                           ("i", tt.tensor([1, 2, 3])), ("h", tt.ones(2, dtype=tt.float16)),
                           ("b", tt.tensor([1.5], dtype=tt.bfloat16)),
                           ("u", tt.tensor([7], dtype=tt.uint16))])
    obj = {"state": weights, "step": 7, "names": ["a", "b"]}
    path = tmp_path / "ours.pt"
    tt.save(obj, path)
    theirs = torch.load(path, weights_only=True)
    assert list(theirs["state"]) == list(weights) and theirs["step"] == 7
    for k, t in weights.items():
        assert str(theirs["state"][k].dtype) == f"torch.{t.dtype.name}"
        np.testing.assert_array_equal(as_numpy(theirs["state"][k]),
                                      t.float().numpy() if k == "b" else t.numpy())
    check(torch_load(path)["state"], theirs["state"])
    with pytest.raises(TypeError, match="writes tensors"):
        torch_save({"x": object()}, io.BytesIO())
