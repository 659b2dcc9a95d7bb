"""Checks shared by the GPU chapters (06 to 08): the same small programs, computed on a device
and on the NUMPY reference device, must agree."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from chapters.grading import expect_close, expect_equal
from tinyfw import Tensor, dtypes
from tinyfw.device import Device
from tinyfw.engine import program

RNG = np.random.default_rng(6)


@dataclass(frozen=True)
class Case:
    """A computation on tensors, the arrays it starts from, and what it exercises."""
    name: str
    fn: Callable[..., Tensor]
    arrays: tuple[np.ndarray, ...]
    why: str


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ints(*shape: int, low: int = -9, high: int = 10) -> np.ndarray:
    return RNG.integers(low, high, shape).astype(np.int32)


CASES = [
    Case("fused_chain", lambda x: ((x * 2 + 1).relu() * x).exp2(), (floats(300),),
         "an elementwise chain in one kernel, more elements than one block or workgroup"),
    Case("row_sum", lambda x, w: (x * w).sum(1), (floats(5, 7), floats(7)),
         "a reduce loop with an accumulator; a broadcast input (stride 0)"),
    Case("column_max", lambda x: x.max(0), (floats(6, 4),),
         "a max accumulator reading down the columns"),
    Case("nan_max", lambda x: x.maximum(Tensor(np.float32(0.5), device=x.device)),
         (np.array([np.nan, 1.0, 0.0, -np.inf, np.inf], np.float32),),
         "MAX propagates NaN; infinities as literals and values"),
    Case("transpose_2d", lambda x: x.permute(1, 0) + 1, (floats(3, 5),),
         "two global indices unraveled from one thread id; a strided read"),
    Case("padded", lambda x: x.pad(((1, 2),)) * 3, (floats(4),),
         "a masked load: elements outside the input read as 0"),
    Case("int_division", lambda a, b: a // b + a % b.maximum(Tensor(1, device=b.device)),
         (ints(9), np.array([3, -2, -1, 1, 5, -4, -7, 2, 7], np.int32)),
         "integer division rounds toward zero (floor division corrects it)"),
    Case("bool_logic", lambda a, b: (a < b) | (a > b * 2), (floats(8), floats(8)),
         "bool results stored in memory and read back"),
    Case("where", lambda c, a: (c > 0).where(a, -a), (floats(10), floats(10)),
         "a select between two values"),
    Case("half", lambda x: (x.cast(dtypes.float16) * 3).sqrt(), (np.abs(floats(12)),),
         "float16 in memory, float in registers"),
    Case("cast_int", lambda x: (x * 10).cast(dtypes.int32), (floats(9),),
         "a float to int cast truncates"),
]


def compute(case: Case, device: str) -> np.ndarray:
    """The case's result computed on device."""
    return case.fn(*[Tensor(a, device=device) for a in case.arrays]).numpy()


def check_case(case: Case, device: str) -> None:
    """The case on device agrees with the NUMPY reference device."""
    expected = compute(case, "NUMPY")
    actual = compute(case, device)
    what = f"{case.name} on {device} ({case.why})"
    if expected.dtype.kind in "biu":
        expect_equal(actual, expected, what=what)
    else:
        expect_close(actual, expected, rtol=1e-3, atol=1e-3, what=what)


def forget_programs(device: str) -> None:
    """Drops a device's built programs, so the next kernels are built again (by your code)."""
    Device[device]  # starts the device: fails where its hardware is missing
    program.forget(device)
