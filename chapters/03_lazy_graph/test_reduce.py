"""Reduce: sum or max over axes kept as size 1, float16 sums in float32, the max of nothing."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from tinyfw import Tensor, dtypes
from tinyfw.runtime.ops_numpy import reduce_axes
from tinyfw.uop.ops import Ops

pytestmark = pytest.mark.task("03.reduce")

RNG = np.random.default_rng(4)
AXES = [(0,), (1,), (2,), (0, 2), (1, 2), (0, 1, 2)]


def test_sum_keeps_reduced_axes() -> None:
    """Sums over each set of axes of a (2, 3, 4) array, as numpy's with keepdims."""
    x = RNG.standard_normal((2, 3, 4))
    for axes in AXES:
        expect_close(reduce_axes(x, Ops.ADD, axes, dtypes.float64),
                     x.sum(axis=axes, keepdims=True), rtol=1e-12, what=f"sum over {axes}",
                     dtype=np.float64)


def test_max_keeps_reduced_axes() -> None:
    """Maxes over each set of axes, of floats and of ints."""
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    n = RNG.integers(-100, 100, (2, 3, 4)).astype(np.int32)
    for axes in AXES:
        expect_equal(reduce_axes(x, Ops.MAX, axes, dtypes.float32),
                     x.max(axis=axes, keepdims=True), what=f"max over {axes}", dtype=np.float32)
        expect_equal(reduce_axes(n, Ops.MAX, axes, dtypes.int32),
                     n.max(axis=axes, keepdims=True), what=f"int max over {axes}",
                     dtype=np.int32)


def test_float16_sums_add_up_in_float32() -> None:
    """60000 + 60000 - 60000 - 60000 is 0, not inf (float16 stops at 65504), and 5000 ones are
    5000, not 2048 (where float16 stops counting by 1); the result is float16."""
    big = np.array([[60000, 1], [60000, 2], [-60000, 3], [-60000, 4]], dtype=np.float16)
    expect_equal(reduce_axes(big, Ops.ADD, (0,), dtypes.float16),
                 np.array([[0, 10]], dtype=np.float16), what="float16 sums over axis 0",
                 dtype=np.float16)
    ones = np.ones((5000, 2), dtype=np.float16)
    expect_equal(reduce_axes(ones, Ops.ADD, (0,), dtypes.float16),
                 np.array([[5000, 5000]], dtype=np.float16), what="5000 float16 ones",
                 dtype=np.float16)


def test_empty_axes_and_integer_sums() -> None:
    """The max of nothing is the dtype's smallest value, the sum of nothing 0; ints wrap."""
    empty = np.zeros((2, 0), dtype=np.float32)
    expect_equal(reduce_axes(empty, Ops.MAX, (1,), dtypes.float32),
                 np.full((2, 1), -np.inf, np.float32), what="max over an empty axis",
                 dtype=np.float32)
    expect_equal(reduce_axes(empty.astype(np.int32), Ops.MAX, (1,), dtypes.int32),
                 np.full((2, 1), np.iinfo(np.int32).min, np.int32), what="int max of nothing",
                 dtype=np.int32)
    expect_equal(reduce_axes(empty, Ops.ADD, (1,), dtypes.float32), np.zeros((2, 1), np.float32),
                 what="sum over an empty axis", dtype=np.float32)
    wrapped = reduce_axes(np.array([100, 100, 1], np.int8), Ops.ADD, (0,), dtypes.int8)
    expect_equal(wrapped, np.array([-55], np.int8), what="int8 sum (wraps as in C)",
                 dtype=np.int8)


def test_tensor_reductions() -> None:
    """sum, max and mean of tensors, through realize()."""
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    t = Tensor(x, device="NUMPY")
    expect_close(t.sum(1).numpy(), x.sum(1), what="sum(1)")
    expect_equal(t.max(0).numpy(), x.max(0), what="max(0)")
    expect_close(t.mean().numpy(), x.mean(), what="mean()")
    expect_close((t * t).sum(0, keepdim=True).numpy(), (x * x).sum(0, keepdims=True),
                 what="(x * x).sum(0, keepdim=True)")
