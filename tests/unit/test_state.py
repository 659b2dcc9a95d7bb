"""tinyfw.nn.state: naming a model's tensors, loading them, and real safetensors files (read and
written by the safetensors package too)."""
from __future__ import annotations

import json
import struct
from collections import namedtuple
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from tinyfw import DType, Tensor, dtypes
from tinyfw.nn.state import (
    get_parameters,
    get_state_dict,
    load_state_dict,
    safe_load,
    safe_metadata,
    safe_save,
)

NeedsDtypesFixture = Callable[..., AbstractContextManager[None]]


class Layer:
    def __init__(self, n_in: int, n_out: int, bias: bool = True):
        self.weight = Tensor.randn(n_out, n_in, requires_grad=True)
        self.bias = Tensor.zeros(n_out, requires_grad=True) if bias else None
        self.name, self.sizes = "layer", (n_in, n_out)  # not tensors: ignored


Pair = namedtuple("Pair", ["left", "right"])


class Model:
    def __init__(self) -> None:
        self.l1 = Layer(3, 4)
        self.layers = [Layer(4, 4), Layer(4, 2, bias=False)]
        self.heads = {"a": Tensor.ones(2), "b": (Tensor.zeros(1), 7)}
        self.pair = Pair(Tensor.ones(3), None)
        self.tied = self.l1.weight  # the same tensor under a second name
        self.parent = self  # a cycle: must not loop forever


NAMES = ["l1.weight", "l1.bias", "layers.0.weight", "layers.0.bias", "layers.1.weight",
         "heads.a", "heads.b.0", "pair.left", "tied"]


def test_state_dict_names() -> None:
    """Dotted names in attribute order, for attributes, list items, dict keys, namedtuple fields;
    a prefix is put before each name as given."""
    m = Model()
    sd = get_state_dict(m)
    assert list(sd) == NAMES
    assert sd["l1.weight"] is m.l1.weight and sd["tied"] is m.l1.weight
    assert sd["layers.1.weight"] is m.layers[1].weight and sd["heads.b.0"] is m.heads["b"][0]
    assert list(get_state_dict(m, prefix="model.")) == ["model." + n for n in NAMES]
    assert list(get_state_dict([Tensor.ones(1), {"x": Tensor.ones(1)}])) == ["0", "1.x"]
    assert get_state_dict(Layer(2, 2, bias=False)).keys() == {"weight"}


def test_get_parameters() -> None:
    """Every tensor once, in state-dict order (the tied one at its first name)."""
    m = Model()
    params = get_parameters(m)
    sd = get_state_dict(m)
    assert len(params) == len(NAMES) - 1
    assert [id(p) for p in params] == [id(sd[n]) for n in NAMES[:-1]]
    assert not {id(p) for p in get_parameters(Model())} & {id(p) for p in params}
    assert get_parameters(3) == [] and get_parameters("text") == []


def test_load_state_dict_copies_values() -> None:
    """Values land in the model's own tensors (same objects, dtype, requires_grad); a float64
    or numpy value is cast to the tensor's dtype."""
    src, dst = Model(), Model()
    params = get_parameters(dst)
    sd = get_state_dict(src)
    sd["l1.bias"] = Tensor(np.arange(4.0))  # float64, cast to float32
    sd["heads.a"] = np.array([5.0, 6.0])  # numpy works too
    load_state_dict(dst, sd)
    assert all(a is b for a, b in zip(get_parameters(dst), params, strict=True))
    for name, t in get_state_dict(dst).items():
        value = sd[name].numpy() if isinstance(sd[name], Tensor) else sd[name]
        assert t.dtype == dtypes.float32, name
        np.testing.assert_array_equal(t.numpy(), value.astype(np.float32), err_msg=name)
    assert dst.l1.weight.requires_grad and not dst.heads["a"].requires_grad


def test_models_loaded_from_one_dict_stay_apart() -> None:
    """Each loaded tensor gets its own copy: backward through one model leaves the other's
    gradients alone, and changing the source changes neither."""
    src = Layer(3, 2)
    a, b = Layer(3, 2), Layer(3, 2)
    load_state_dict(a, get_state_dict(src))
    load_state_dict(b, get_state_dict(src))
    (Tensor.ones(1, 3) @ a.weight.T + a.bias).sum().backward()
    assert a.weight.grad is not None and b.weight.grad is None
    before = a.weight.numpy()
    src.weight.assign(src.weight * 0)
    np.testing.assert_array_equal(a.weight.numpy(), before)


def test_load_state_dict_strict_errors() -> None:
    """strict: missing and unexpected names are listed in one RuntimeError and nothing loads;
    not strict: the names that match load, the others are skipped."""
    m = Layer(2, 3)
    before = m.weight.numpy()
    with pytest.raises(RuntimeError) as e:
        load_state_dict(m, {"weight": Tensor.ones(3, 2), "extra": Tensor.ones(1)})
    assert "Missing key(s) in state_dict: 'bias'" in str(e.value)
    assert "Unexpected key(s) in state_dict: 'extra'" in str(e.value)
    np.testing.assert_array_equal(m.weight.numpy(), before)
    load_state_dict(m, {"weight": Tensor.ones(3, 2), "extra": Tensor.ones(1)}, strict=False)
    np.testing.assert_array_equal(m.weight.numpy(), np.ones((3, 2)))
    np.testing.assert_array_equal(m.bias.numpy(), np.zeros(3))


@pytest.mark.parametrize("strict", [True, False])
def test_load_state_dict_shape_mismatch(strict: bool) -> None:
    """A wrong shape is an error even when not strict, naming the key and both shapes."""
    m = Layer(2, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a value of shape "
                       r"\[2, 3\] from the state dict, the shape in the model is \[3, 2\]"):
        load_state_dict(m, {"weight": Tensor.ones(2, 3), "bias": Tensor.ones(3)}, strict=strict)
    np.testing.assert_array_equal(m.bias.numpy(), np.zeros(3))  # nothing was loaded


# ---------------------------------------------------------------------------------------------
# safetensors

# one array of each dtype, with its edge values
ARRAYS: dict[str, np.ndarray] = {
    "bool": np.array([[True, False, True], [False, False, True]]),
    "uint8": np.array([0, 1, 127, 128, 255], np.uint8),
    "int8": np.array([-128, -1, 0, 1, 127], np.int8),
    "int16": np.array([-32768, -2, 300, 32767], np.int16).reshape(2, 2),
    "int32": np.array([-2**31, -5, 0, 70000, 2**31 - 1], np.int32),
    "int64": np.array([-2**63, -3, 2**40, 2**63 - 1], np.int64),
    "uint16": np.array([0, 1, 40000, 65535], np.uint16),
    "uint32": np.array([0, 7, 2**31, 2**32 - 1], np.uint32),
    "uint64": np.array([0, 9, 2**63, 2**64 - 1], np.uint64),
    "float16": np.array([-0.0, 1.5, 65504, -np.inf, 6e-8, np.nan], np.float16).reshape(3, 2, 1),
    "float32": np.array([[1e-38, -3.25, np.inf], [np.nan, 3.4e38, -0.0]], np.float32),
    "float64": np.array([np.pi, -1e-300, 1e300, np.nan], np.float64),
}
BFLOAT16 = np.array([-0.0, 1.5, 3.3895314e38, -np.inf, 1e-40, np.nan],
                    np.float32).astype(dtypes.bfloat16.np)  # no numpy dtype: not in ARRAYS
NEEDS = {"int64": dtypes.int64, "uint64": dtypes.uint64, "float16": dtypes.float16,
         "float64": dtypes.float64}


def assert_same_bits(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Same dtype, shape and bytes (so nan, -0.0 and inf count too)."""
    __tracebackhide__ = True
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, \
        f"{what}: {actual.dtype}{actual.shape}, expected {expected.dtype}{expected.shape}"
    assert actual.tobytes() == expected.tobytes(), f"{what}: {actual} != {expected}"


def needed(names: list[str]) -> list[DType]:
    return [NEEDS[n] for n in names if n in NEEDS]


@pytest.mark.parametrize("name", list(ARRAYS))
def test_round_trip_each_dtype(name: str, tmp_path: Path,
                               needs_dtypes: NeedsDtypesFixture) -> None:
    """safe_save then safe_load gives the same dtype, shape and bits."""
    with needs_dtypes(*needed([name])):
        path = tmp_path / "t.safetensors"
        safe_save({name: Tensor(ARRAYS[name])}, path)
        loaded = safe_load(path)
        assert list(loaded) == [name] and loaded[name].dtype.name == name
        assert_same_bits(loaded[name].numpy(), ARRAYS[name], name)


def test_bfloat16_round_trip_and_torch_reads_it(tmp_path: Path) -> None:
    """bfloat16 (BF16) is saved as its 16 bits, loads back bit for bit, and safetensors.torch
    (numpy has no bfloat16) reads the same values."""
    from safetensors.torch import load_file as torch_load_file
    path = tmp_path / "bf16.safetensors"
    safe_save({"w": Tensor(BFLOAT16)}, path)
    loaded = safe_load(path)["w"]
    assert loaded.dtype == dtypes.bfloat16
    assert_same_bits(loaded.numpy(), BFLOAT16, "bfloat16")
    theirs = torch_load_file(path)["w"]
    assert str(theirs.dtype) == "torch.bfloat16"
    assert_same_bits(theirs.float().numpy(), BFLOAT16.astype(np.float32), "read by torch")


def test_round_trip_odd_shapes_and_lazy_tensors(tmp_path: Path) -> None:
    """Scalars, empty tensors and lazy (unrealized) tensors save and load."""
    lazy = Tensor([1.0, 2.0, 3.0]) * 2 + 1
    tensors = {"scalar": Tensor(2.5), "empty": Tensor.zeros(0, 3), "lazy": lazy,
               "int_scalar": Tensor(7)}
    safe_save(tensors, tmp_path / "t.safetensors")
    loaded = safe_load(tmp_path / "t.safetensors")
    assert list(loaded) == list(tensors)
    for k, t in tensors.items():
        assert loaded[k].shape == t.shape and loaded[k].dtype == t.dtype
        np.testing.assert_array_equal(loaded[k].numpy(), t.numpy())


def test_file_layout(tmp_path: Path) -> None:
    """The bytes are the format: u64 header length, JSON header (padded to 8 bytes), raw data
    back to back in little-endian order."""
    path = tmp_path / "t.safetensors"
    safe_save({"a": Tensor(np.array([1, 2], np.int16)), "b": Tensor(np.array([1.0], np.float32))},
              path, metadata={"format": "np"})
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header == {"__metadata__": {"format": "np"},
                      "a": {"dtype": "I16", "shape": [2], "data_offsets": [0, 4]},
                      "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}
    assert raw[8 + n:] == b"\x01\x00\x02\x00" + struct.pack("<f", 1.0)


def test_safetensors_package_reads_our_files(tmp_path: Path,
                                             needs_dtypes: NeedsDtypesFixture) -> None:
    """Every dtype written by safe_save is read back by safetensors.numpy.load_file."""
    with needs_dtypes(*needed(list(ARRAYS))):
        path = tmp_path / "ours.safetensors"
        safe_save({k: Tensor(a) for k, a in ARRAYS.items()}, path,
                  metadata={"author": "tinyfw"})
        theirs = load_file(path)
        assert set(theirs) == set(ARRAYS)
        for k, a in ARRAYS.items():
            assert_same_bits(theirs[k], a, k)


def test_we_read_safetensors_package_files(tmp_path: Path,
                                           needs_dtypes: NeedsDtypesFixture) -> None:
    """Every dtype written by safetensors.numpy.save_file (which sorts and aligns the data its
    own way) is read by safe_load, and its metadata by safe_metadata."""
    with needs_dtypes(*needed(list(ARRAYS))):
        path = tmp_path / "theirs.safetensors"
        arrays = {**ARRAYS, "scalar": np.array(1.25, np.float32),
                  "empty": np.zeros((2, 0), np.int32)}
        save_file(arrays, path, metadata={"epoch": "3", "note": "ünïcode"})
        ours = safe_load(path)
        assert set(ours) == set(arrays)
        for k, a in arrays.items():
            assert_same_bits(ours[k].numpy(), a, k)
        assert safe_metadata(path) == {"epoch": "3", "note": "ünïcode"}
        save_file({"x": np.ones(1, np.float32)}, tmp_path / "plain.safetensors")
        assert safe_metadata(tmp_path / "plain.safetensors") == {}


def test_model_checkpoint(tmp_path: Path) -> None:
    """The whole path: state dict -> file -> another model, equal values."""
    src, dst = Model(), Model()
    safe_save(get_state_dict(src), tmp_path / "model.safetensors")
    load_state_dict(dst, safe_load(tmp_path / "model.safetensors"))
    for name, t in get_state_dict(dst).items():
        np.testing.assert_array_equal(t.numpy(), get_state_dict(src)[name].numpy(), name)


def test_safetensors_errors(tmp_path: Path) -> None:
    """Clear errors: reserved names, bad metadata, files that aren't safetensors, dtypes tinyfw
    lacks."""
    path = tmp_path / "t.safetensors"
    with pytest.raises(ValueError, match="reserved"):
        safe_save({"__metadata__": Tensor.ones(1)}, path)
    with pytest.raises(TypeError, match="strings to strings"):
        safe_save({"a": Tensor.ones(1)}, path, metadata={"epoch": 3})  # type: ignore[dict-item]
    path.write_bytes(b"\x05\x00")
    with pytest.raises(ValueError, match="not a safetensors file"):
        safe_load(path)
    path.write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(ValueError, match="header length"):
        safe_load(path)
    path.write_bytes(struct.pack("<Q", 4) + b"nope")
    with pytest.raises(ValueError, match="not JSON"):
        safe_load(path)
    header = b'{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}'
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    with pytest.raises(ValueError, match="does not hold F32 of shape"):
        safe_load(path)
    header = b'{"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}'
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(1))
    with pytest.raises(TypeError, match="no dtype for safetensors F8_E4M3"):
        safe_load(path)
