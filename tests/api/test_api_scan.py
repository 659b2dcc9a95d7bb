"""Scans and sorting (tinyfw/mixin/scan.py) give PyTorch's values, indices and gradients."""
from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import pytest
import torch

from tests.helpers import check, check_error, same_dtype
from tinyfw import Device, Tensor, dtypes
from tinyfw.mixin.core import index_dtype
from tinyfw.mixin.scan import RANK_SORT_MAX

# On a backend device only the distinct cases of each parametrized test run (the device
# subset, tests/conftest.py); CPU and NUMPY run them all.
pytestmark = pytest.mark.device_subset

# The needs_dtypes fixture (tests/conftest.py): a block that needs dtypes the device may lack.
NeedsDtypesFixture = Callable[..., AbstractContextManager[None]]

NAN, INF = float("nan"), float("inf")
# Edge values: zeros, negatives, ties, infinities and NaNs in one row.
EDGES = np.array([[0.0, -1.5, 2.0, 2.0, -INF, 0.0, INF, 1.0, -1.5],
                  [NAN, 1.0, -2.0, NAN, 3.0, 3.0, -0.0, 0.0, 5.0]], dtype=np.float32)


def _cummax(dim: int) -> Callable[[Any], Any]:
    """x.cummax(dim) in either framework."""
    return lambda x: tuple(x.cummax(dim))


def _cummin(dim: int) -> Callable[[Any], Any]:
    """x.cummin(dim) in either framework."""
    return lambda x: tuple(x.cummin(dim))


def _torch_sort(dim: int = -1, descending: bool = False) -> Callable[[torch.Tensor], Any]:
    """torch's stable sort: tinyfw's sort is always stable."""
    return lambda x: tuple(torch.sort(x, dim=dim, descending=descending, stable=True))


def _sort(dim: int = -1, descending: bool = False) -> Callable[[Tensor], Any]:
    """tinyfw's sort."""
    return lambda x: x.sort(dim, descending)

# ---------------------------------------------------------------------------------------------
# scans


@pytest.mark.parametrize("shape, dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2),
                                        ((1,), -1), ((), 0), ((2, 33), 1)], ids=str)
def test_cumsum_cumprod(shape: tuple[int, ...], dim: int) -> None:
    """cumsum and cumprod along any axis (negative too, 0-d too), values and gradients."""
    check([shape], lambda x: x.cumsum(dim))
    check([shape], lambda x: x.cumprod(dim), low=0.5, high=1.5)


def test_cumprod_gradient_with_zeros() -> None:
    """The gradient of cumprod is exact at zeros, one zero or several (no division by x)."""
    x = np.array([[2.0, 0.0, 3.0, -1.0, 0.5], [0.0, 0.0, 2.0, 1.5, -2.0],
                  [1.0, 2.0, 3.0, 4.0, 0.0]], dtype=np.float32)
    check([x], lambda t: t.cumprod(1))
    check([x], lambda t: t.cumprod(0))


def test_scans_of_edge_values() -> None:
    """0, negatives, infinities and NaN go through as in torch (NaN sticks once seen)."""
    for fn in (lambda x: x.cumsum(1), lambda x: x.cumprod(1), lambda x: x.logcumsumexp(1),
               _cummax(1), _cummin(1), _cummax(0), _cummin(0)):
        check([EDGES], fn, grad=False)


@pytest.mark.parametrize("shape, dim", [((0,), 0), ((2, 0, 3), 1), ((2, 0, 3), 2)], ids=str)
def test_scans_of_empty_tensors(shape: tuple[int, ...], dim: int) -> None:
    """An empty tensor scans to an empty tensor of the same shape (and int64-like indices)."""
    for fn in (lambda x: x.cumsum(dim), lambda x: x.cumprod(dim),
               lambda x: x.logcumsumexp(dim), _cummax(dim), _cummin(dim)):
        check([shape], fn)


def test_int_and_bool_scans() -> None:
    """Ints and bools cumsum and cumprod into int64, as torch; cummax keeps the dtype."""
    ints = [[3, -1, 4, 4, -5, 0, 2], [0, 7, -7, 1, 1, 2, -3]]
    for fn in (_cummax(1), _cummin(1), _cummax(0)):
        check([ints], fn)
        check([[[True, False, True], [False, False, True]]], fn)
    t = Tensor(ints, dtype=dtypes.int32).cumsum(1)
    assert t.dtype == dtypes.int64  # torch's int64 for an int cumsum, not the default int


def test_int64_scans(needs_dtypes: NeedsDtypesFixture) -> None:
    """int64 cumsum and cumprod (WEBGPU has no int64: NotSupportedError, then skipped)."""
    with needs_dtypes(dtypes.int64):
        big = np.array([[2**40, 3, -2**41, 5], [1, -1, 1, -1]], dtype=np.int64)
        check([big], lambda x: x.cumsum(1))
        check([np.array([[3, -2, 5, 0, 7]], dtype=np.int64)], lambda x: x.cumprod(1))
        check([[[3, 1, 2], [True, False, True]]], lambda x: x.cumsum(1))


def test_float64_scans(needs_dtypes: NeedsDtypesFixture) -> None:
    """float64 keeps its dtype and precision."""
    with needs_dtypes(dtypes.float64):
        for fn in (lambda x: x.cumsum(1), lambda x: x.logcumsumexp(1), _cummax(1)):
            check([(3, 20)], fn, dtype=np.float64, atol=1e-12, rtol=1e-12)


def test_cumsum_dtype_argument() -> None:
    """dtype= casts first, as torch's."""
    check([[[1, 2, 3]]], lambda x: x.cumsum(1, dtype=torch.float32),
          lambda x: x.cumsum(1, dtype=dtypes.float32))


def test_long_cumsum_is_accurate() -> None:
    """A float32 cumsum of 5000 values is a tree sum: close to the float64 truth (about
    log2(n) roundings each), not drifting like a running float32 sum."""
    x = np.random.default_rng(3).uniform(0, 1, size=(2, 5000)).astype(np.float32)
    out = Tensor(x).cumsum(1).numpy()
    truth = np.cumsum(x.astype(np.float64), axis=1)
    np.testing.assert_allclose(out, truth, rtol=2e-6)


def test_logcumsumexp() -> None:
    """logcumsumexp is stable for large values and its gradient is a running softmax."""
    check([(3, 9)], lambda x: x.logcumsumexp(1))
    check([(4, 3)], lambda x: x.logcumsumexp(-2))
    check([(2, 6)], lambda x: x.logcumsumexp(1), low=80.0, high=100.0, rtol=1e-5)
    check([np.array([[1.0, 1.0, 1.0, -3.0]], dtype=np.float32)], lambda x: x.logcumsumexp(1))


def test_cummax_cummin_ties_and_gradients() -> None:
    """On a tie the later index wins (torch's rule); the gradient goes to that element."""
    x = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.5], [2.0, 2.0, -1.0, -1.0, 4.0, -1.0]],
                 dtype=np.float32)
    for fn in (_cummax(1), _cummin(1), _cummax(0), _cummin(0)):
        check([x], fn)
    check([(3, 4, 5)], _cummax(-1))
    check([(3, 4, 5)], _cummin(1))


# ---------------------------------------------------------------------------------------------
# sorting


@pytest.mark.parametrize("shape, dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2),
                                        ((2, 17), -1), ((1, 64), 1), ((1,), 0), ((), 0)],
                         ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(shape: tuple[int, ...], dim: int, descending: bool) -> None:
    """sort gives torch's values and indices along any axis; its values' gradient flows to
    the elements they came from; argsort is sort's indices."""
    check([shape], _torch_sort(dim, descending), _sort(dim, descending))
    check([shape], lambda x: torch.argsort(x, dim=dim, descending=descending, stable=True),
          lambda x: x.argsort(dim, descending))


def test_sort_ties_are_stable_and_nan_is_largest() -> None:
    """Equal values keep their input order (in both directions, as torch's stable=True);
    NaN sorts as the largest value (last ascending, first descending)."""
    for descending in (False, True):
        check([EDGES], _torch_sort(1, descending), _sort(1, descending), grad=False)
        check([EDGES], _torch_sort(0, descending), _sort(0, descending), grad=False)
    ties = np.array([[1.0, 0.0, 1.0, 0.0, 1.0, 2.0, 0.0]], dtype=np.float32)
    check([ties], _torch_sort(1), _sort(1))
    check([ties], _torch_sort(1, True), _sort(1, True))


def test_sort_ints_and_bools() -> None:
    """Ints (with ties) and bools sort as in torch; the indices are int64, as torch's (int32 on
    WEBGPU, which has no 64-bit ints: index_dtype)."""
    ints = np.random.default_rng(1).integers(-4, 4, size=(3, 37)).astype(np.int32)
    for descending in (False, True):
        check([ints], _torch_sort(1, descending), _sort(1, descending))
        check([[[True, False, True, False]]], _torch_sort(1, descending), _sort(1, descending))
    extremes = np.array([[2**31 - 1, -2**31, 0, -1, 2**31 - 1, -2**31]], dtype=np.int32)
    check([extremes], _torch_sort(1), _sort(1))
    assert Tensor([3, 1, 2]).sort()[1].dtype == index_dtype(Device.DEFAULT)


def test_sort_float64(needs_dtypes: NeedsDtypesFixture) -> None:
    """float64 sorts in float64."""
    with needs_dtypes(dtypes.float64):
        check([(3, 11)], _torch_sort(1), _sort(1), dtype=np.float64)


def test_sort_long_axis() -> None:
    """More values than RANK_SORT_MAX (the bitonic network), not a power of two, sort exactly."""
    x = np.random.default_rng(2).normal(size=(2, 300)).astype(np.float32)
    assert x.shape[1] > RANK_SORT_MAX  # this test is the bitonic network's
    values, indices = Tensor(x).sort(1)
    np.testing.assert_array_equal(values.numpy(), np.sort(x, axis=1))
    np.testing.assert_array_equal(indices.numpy(), np.argsort(x, axis=1, kind="stable"))


@pytest.mark.parametrize("shape, dim", [((0,), 0), ((3, 0), 1), ((0, 3), 0)], ids=str)
def test_sort_empty(shape: tuple[int, ...], dim: int) -> None:
    """An empty axis sorts to empty values and indices."""
    check([shape], _torch_sort(dim), _sort(dim))
    check([shape], lambda x: tuple(x.topk(0, dim)))


@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(k: int, largest: bool) -> None:
    """topk's values and indices (distinct values: torch does not fix the order of ties),
    the gradient flowing to the selected elements."""
    x = np.random.default_rng(4).permutation(7 * 4).reshape(4, 7).astype(np.float32)
    check([x], lambda t: tuple(t.topk(k, 1, largest)))
    if k <= 4:
        check([x], lambda t: tuple(t.topk(k, 0, largest)))
    # sorted=False: torch's order is then unspecified; tinyfw's is sorted anyway
    check([x], lambda t: tuple(t.topk(k, -1, largest, True)),
          lambda t: tuple(t.topk(k, -1, largest, False)))


def test_topk_ties_and_nan() -> None:
    """With ties torch may pick any of the equal values: the values must match and each index
    must point at its value. NaN counts as the largest."""
    x = np.array([[1.0, 3.0, 3.0, 0.0, 3.0, NAN], [2.0, 2.0, 2.0, 2.0, -1.0, 5.0]],
                 dtype=np.float32)
    for largest in (True, False):
        values, indices = Tensor(x).topk(3, 1, largest)
        ref = torch.tensor(x).topk(3, 1, largest)
        np.testing.assert_array_equal(values.numpy(), ref.values.numpy())
        picked = np.take_along_axis(x, indices.numpy().astype(np.int64), axis=1)
        np.testing.assert_array_equal(picked, values.numpy())
        assert same_dtype(indices.dtype, ref.indices.dtype)


def test_topk_ints() -> None:
    """Int topk keeps the dtype."""
    check([[[5, -3, 9, 0, 2], [1, 4, -8, 7, 6]]], lambda t: tuple(t.topk(2)))


# ---------------------------------------------------------------------------------------------
# bad input: torch's exception types


def test_bad_dims_raise_index_error() -> None:
    """A dim out of range is torch's IndexError for every op here."""
    for fn in (lambda x: x.cumsum(2), lambda x: x.cumprod(-3), lambda x: x.cummax(2),
               lambda x: x.cummin(5), lambda x: x.logcumsumexp(-3), lambda x: x.sort(2),
               lambda x: x.argsort(-3), lambda x: x.topk(1, 2)):
        check_error([(2, 3)], fn)
    check_error([()], lambda x: x.cumsum(1))


def test_topk_bad_k() -> None:
    """k larger than the axis, or negative, is torch's RuntimeError."""
    check_error([(2, 3)], lambda x: x.topk(4))
    check_error([(2, 3)], lambda x: x.topk(-1))
    check_error([()], lambda x: x.topk(2))


def test_logcumsumexp_of_ints_is_not_implemented() -> None:
    """logcumsumexp has no int kernel in torch: NotImplementedError naming the dtype."""
    _, err = check_error([[[1, 2, 3]]], lambda x: x.logcumsumexp(1))
    assert "int" in str(err)
