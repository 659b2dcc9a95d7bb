"""Indexing (tinyfw/mixin/indexing.py) gives PyTorch's values, shapes, dtypes, gradients and
exception types: advanced x[...], x[...] = v, gather, scatter, scatter_reduce, masked_fill,
masked_select, nonzero."""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tests.helpers import check, check_error, same_dtype
from tinyfw import Device, Tensor, dtypes
from tinyfw.mixin.core import index_dtype

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 10
I2 = np.array([[0, 1], [1, 0]], dtype=np.int64)


def _both(index: tuple) -> tuple[tuple, tuple]:
    """The same index for torch and for tinyfw: numpy int arrays become tensors of each."""
    def conv(i: Any, make: Callable[[np.ndarray], Any]) -> Any:
        return make(i) if isinstance(i, np.ndarray) and i.dtype != np.int8 else i
    return (tuple(conv(i, torch.tensor) for i in index),
            tuple(conv(i, lambda a: Tensor(a.astype(np.int32) if a.dtype.kind == "i" else a))
                  for i in index))


GET_INDICES = [
    (np.array([1, 0, 1]),), ([1, -1],), ([[0, 1], [1, 1]],), (0, slice(None), [0, 3]),
    ([0, 1], slice(None), 0), (slice(None), 0, [0, 2]), ([1, 0], [2, 1]), (I2, I2, 0),
    (I2, slice(None), I2), (Ellipsis, [3, 0]), (None, [1], slice(1, None), None),
    (slice(None), [[0, 2]], slice(None, None, 2)), (np.array(1),), ([],),
    (A > 0,), (A[..., 0] > -5,), (slice(None), A[0, :, 0] > -9), (True,), (False,),
    ([True, False],), (slice(None), np.array([-3, -1]), 1), (1, [0, 0, 2], [3]),
]


@pytest.mark.parametrize("index", GET_INDICES, ids=str)
def test_getitem_advanced(index: tuple) -> None:
    """Values, shapes and gradients of mixed advanced and basic indices, as torch."""
    t_index, f_index = _both(index)
    check([A], lambda x: x[t_index], lambda x: x[f_index])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_, np.float16])
def test_getitem_dtypes(dtype: Any, needs_dtypes: Any) -> None:
    """A pick keeps the dtype of the tensor."""
    data = (A > 0) if dtype == np.bool_ else A.astype(dtype)
    needed = {np.int64: dtypes.int64, np.float16: dtypes.float16}.get(dtype)
    with needs_dtypes(*([needed] if needed else [])):
        check([data], lambda x: x[[1, 0], :, [2, 3]], grad=False)


def test_getitem_tensor_index_int64_and_empty() -> None:
    """int64 index tensors (on WEBGPU, which has no int64, read on the host), an empty index,
    an empty tensor, a 0-d pick."""
    out = Tensor(A)[Tensor(np.array([1, 0], dtype=np.int64))]
    np.testing.assert_array_equal(out.numpy(), A[[1, 0]])
    assert Tensor(A)[Tensor(np.zeros(0, dtype=np.int32))].shape == (0, 3, 4)
    assert Tensor(np.zeros((0, 3), np.float32))[[], 1].shape == (0,)
    assert Tensor(A)[1, 2, Tensor(np.array(3, dtype=np.int32))].item() == A[1, 2, 3]


@pytest.mark.parametrize("bad", [
    ([5],), (slice(None), [-4]), (0, 0, [4]), (1.5,), (A > 0, A > 0),
    ([0, 1], [0, 1, 1]), (A[0] > 0,), (0, 0, 0, 0)], ids=str)
def test_getitem_errors(bad: tuple) -> None:
    """Out of range, float, mask-shape and broadcast errors: torch's IndexError."""
    t_index, f_index = _both(bad)
    check_error([A], lambda x: x[t_index], lambda x: x[f_index])


def test_getitem_tensor_out_of_range() -> None:
    """A tensor index out of range raises IndexError (when computed) naming index, dim, size."""
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 3"):
        Tensor(A)[:, Tensor([5])].numpy()
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        Tensor(A)[Tensor([1.0])]
    with pytest.raises(IndexError, match="0-dim"):
        Tensor(3.0)[Tensor([0])]


# A list index as torch reads it: floats are truncated toward 0 (torch makes an int64 tensor of
# the list), and a list holding a list, a slice, None or '...' is read as a tuple (torch's
# legacy reading, which it warns about: x[[[0, 1], [1, 2]]] is x[[0, 1], [1, 2]]).
LIST_INDICES = [([1.5],), ([-1.5],), ([0.9, -0.5],), ([True, 1.5],), (0, [1.5, 2.5]),
                ([0.5, 1.5], slice(None), [3.9]), ([[1, 0], [2, 1]],), ([[1]],), ([0, [1, 2]],),
                ([0, None],), ([1, slice(None), 2],), ([Ellipsis, 1],), ([[0.5, 1.5], [2.5, 0]],),
                ([[True, False]],)]


@pytest.mark.parametrize("index", LIST_INDICES, ids=str)
def test_getitem_list_index_as_torch(index: tuple) -> None:
    """Values, shapes and gradients of float and nested list indices, as torch."""
    whole = index[0] if len(index) == 1 else index  # a list alone, not in a tuple
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's deprecation of a nested list
        check([A], lambda x: x[whole])


def test_getitem_numpy_float_index_truncates_as_torch() -> None:
    """A numpy float index is cast to int64 as torch casts it (toward 0; a nan then out of
    range), not refused."""
    check([A], lambda x: x[np.array([1.5, -0.5])], grad=False)
    check([A], lambda x: x[:, np.array([[2.9], [0.1]])], grad=False)
    check_error([A], lambda x: x[np.array([np.nan])])


@pytest.mark.parametrize("bad", [[np.nan], [1e19], [-math.inf], [2.5], [-3.5], [1 + 0j], ["a"],
                                 "a", (0, "a"), [np.float32(1.7)], [1, np.float16(0.0)],
                                 [[np.float32(1.0)]]], ids=str)
def test_getitem_list_index_errors_as_torch(bad: Any) -> None:
    """A float list index that is nan or past int64: torch's RuntimeError; out of range after
    truncation: IndexError; a complex number, a string or a numpy float32 or float16 (not a
    Python float, as np.float64 is): TypeError."""
    check_error([A], lambda x: x[bad])


ELLIPSES = [(Ellipsis, 0, Ellipsis), (0, Ellipsis, Ellipsis), (Ellipsis, Ellipsis),
            (Ellipsis, None, Ellipsis), (Ellipsis, [0, 1], Ellipsis), (Ellipsis, 1, 2, 3, Ellipsis),
            (Ellipsis, Ellipsis, slice(None)), (Ellipsis, 0, Ellipsis, Ellipsis),
            (slice(1, None), Ellipsis, Ellipsis, slice(0, None, 1))]


@pytest.mark.parametrize("index", ELLIPSES, ids=str)
def test_getitem_more_than_one_ellipsis_as_torch(index: tuple) -> None:
    """torch takes more than one '...': each moves on by the axes the rest leave, so
    x[..., 0, ...] is x[..., 0] (numpy refuses it)."""
    check([A], lambda x: x[index])


@pytest.mark.parametrize("index", [(Ellipsis, 0, Ellipsis, 1), (Ellipsis, Ellipsis, 0),
                                   (0, Ellipsis, Ellipsis, [0]), (Ellipsis, Ellipsis, None),
                                   (Ellipsis, Ellipsis, slice(1, None)),
                                   (Ellipsis, None, Ellipsis, None)], ids=str)
def test_getitem_more_than_one_ellipsis_errors_as_torch(index: tuple) -> None:
    """What a second '...' moves past the last axis raises torch's IndexError."""
    check_error([A], lambda x: x[index])


def test_setitem_nested_list_and_ellipses_as_torch() -> None:
    """x[[[0, 1], [1, 2]]] = v writes x[0, 1] and x[1, 2], and x[..., 0, ...] = v writes
    x[..., 0], as torch."""
    for index in [[[0, 1], [1, 2]], (Ellipsis, 0, Ellipsis), [1.5]]:
        t, f = torch.tensor(A), Tensor(A)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch's deprecation of nested lists
            t[index] = -1.0
        f[index] = -1.0
        np.testing.assert_array_equal(f.numpy(), t.numpy(), err_msg=str(index))


# -0.0, nan, the infinities and a subnormal: a pick is the element itself, bit for bit
SPECIAL = np.array([[-0.0, 0.0, np.nan, -np.inf], [np.inf, 1e-45, -1e-45, -0.0],
                    [3.0, -0.0, -2.5, 1e38]], dtype=np.float32)


def _bits(a: Any) -> np.ndarray:
    """The bits of a float32 array (nan payload kept as is)."""
    return np.asarray(a, dtype=np.float32).view(np.uint32)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_pick_keeps_the_exact_bits(requires_grad: bool) -> None:
    """x[idx], x[:, idx], x[mask], gather and take_along_dim give the picked element's bits
    (-0.0 stays -0.0, as torch), with or without a gradient."""
    t = torch.tensor(SPECIAL)
    f = Tensor(SPECIAL, requires_grad=requires_grad)
    i = [[0, 3], [1, 0], [2, 1]]
    cases: list[tuple[str, Any, Any]] = [
        ("x[idx]", t[[0, 2, 1, 0]], f[[0, 2, 1, 0]]),
        ("x[tensor idx]", t[torch.tensor([1, 0])], f[Tensor([1, 0])]),
        ("x[:, idx]", t[:, [0, 3, 3]], f[:, [0, 3, 3]]),
        ("x[idx, idx]", t[[0, 1, 2], [0, 3, 1]], f[[0, 1, 2], [0, 3, 1]]),
        ("x[mask]", t[t != 1.0], f[f != 1.0]),
        ("gather", t.gather(1, torch.tensor(i)), f.gather(1, Tensor(i))),
    ]
    for name, want, got in cases:
        np.testing.assert_array_equal(_bits(got.numpy()), _bits(want.numpy()), err_msg=name)


def test_write_keeps_the_exact_bits() -> None:
    """x[idx] = v and scatter write v's bits (-0.0 stays -0.0, as torch)."""
    v = np.array([[-0.0, np.nan, -np.inf, 1e-45]], dtype=np.float32)
    t, f = torch.ones(3, 4), Tensor.ones(3, 4).contiguous()
    t[[2, 0]] = torch.tensor(v)
    f[[2, 0]] = Tensor(v)
    np.testing.assert_array_equal(_bits(f.numpy()), _bits(t.numpy()), err_msg="x[idx] = v")
    index = [[1, 0, 2, 1]]
    want = torch.ones(3, 4).scatter(0, torch.tensor(index), torch.tensor(v))
    got = Tensor.ones(3, 4).scatter(0, Tensor(index), Tensor(v))
    np.testing.assert_array_equal(_bits(got.numpy()), _bits(want.numpy()), err_msg="scatter")


def test_exact_pick_keeps_the_gradient() -> None:
    """The gradient of a pick is the sum's: all of it to the element picked, also where that is
    -inf or nan (a max would share it among ties or give none), as torch."""
    check([SPECIAL], lambda x: x[[0, 2, 1, 0, 0]], weighted=True)
    check([SPECIAL], lambda x: x.gather(1, torch.tensor([[3, 3], [1, 0], [2, 1]])),
          lambda x: x.gather(1, Tensor([[3, 3], [1, 0], [2, 1]])))
    check([SPECIAL, (1, 4)], lambda x, s: x.scatter(0, torch.tensor([[1, 0, 2, 1]]), s),
          lambda x, s: x.scatter(0, Tensor([[1, 0, 2, 1]]), s))


def test_getitem_big_one_hot_pick_needs_no_big_memory() -> None:
    """A table pick (3000 x 64, 128 rows) with a gradient: one fused kernel, right values."""
    table = np.random.default_rng(0).standard_normal((3000, 64)).astype(np.float32)
    rows = np.random.default_rng(1).integers(0, 3000, 128)
    x = Tensor(table, requires_grad=True)
    out = x[Tensor(rows.astype(np.int32))]
    np.testing.assert_array_equal(out.numpy(), table[rows])
    out.sum().backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), np.bincount(rows, minlength=3000)[:, None]
                                  * np.ones((1, 64), np.float32))


SET_INDICES = [(0,), (slice(None), slice(1, None, 2)), (Ellipsis, 1), ([1, 0],), ([0, 0, 1],),
               (slice(None), [2, 0], 1), (I2, 0, I2), (A > 0,), (1, A[1, :, 0] > -2), (None, 1),
               (np.array([-1]), slice(None), [-1])]


@pytest.mark.parametrize("index", SET_INDICES, ids=str)
@pytest.mark.parametrize("value", ["scalar", "tensor"])
def test_setitem(index: tuple, value: str) -> None:
    """x[index] = value writes into x as torch does (a repeated index: the last value)."""
    t_index, f_index = _both(index)
    t, f = torch.tensor(A), Tensor(A)
    shape = t[t_index].shape
    v = np.arange(int(np.prod(shape[-1:])), dtype=np.float32) + 100 if value == "tensor" else 7
    t[t_index] = torch.tensor(v) if value == "tensor" else v
    f[f_index] = Tensor(v) if value == "tensor" else v
    np.testing.assert_array_equal(f.numpy(), t.numpy())


def test_setitem_dtypes_and_errors() -> None:
    """A number takes x's dtype; a tensor of another dtype: torch's RuntimeError; a leaf that
    requires grad refuses, as torch."""
    t, f = torch.zeros(5, dtype=torch.int32), Tensor.zeros(5, dtype=dtypes.int32)
    t[[0, 1]] = 2.7
    f[[0, 1]] = 2.7
    assert f.dtype == dtypes.int32 and f.tolist() == t.tolist()
    f[1:3] = Tensor([1.9, 3.2])  # a basic index casts (copy_)
    assert f.tolist() == [2, 1, 3, 0, 0]
    with pytest.raises(RuntimeError, match="dtypes match"):
        f[[0]] = Tensor([1.5])
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        f[[0, 1]] = Tensor([1, 2, 3], dtype=dtypes.int32)
    w = Tensor.zeros(3, requires_grad=True)
    for index in (0, [0], slice(1, None)):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            w[index] = 1.0
    with pytest.raises(TypeError, match="does not support deleting"):
        del f[0]
    b = Tensor.zeros(4, dtype=dtypes.bool)
    b[[1, 3]] = True
    assert b.tolist() == [False, True, False, True]


def test_setitem_with_tensor_index_keeps_tensor() -> None:
    """x stays the same Tensor; a view of x written through writes x."""
    f = Tensor(A)
    same = f
    f[Tensor([1]), 0, Tensor([0, 3])] = -1.0
    ref = A.copy()
    ref[[1], 0, [0, 3]] = -1
    assert same is f
    np.testing.assert_array_equal(f.numpy(), ref)
    view = f[0]
    view[[2]] = 5.0
    ref[0, [2]] = 5
    np.testing.assert_array_equal(f.numpy(), ref)


GATHER = np.array([[[0, 1, 1, 0], [1, 1, 0, 0]]], dtype=np.int64)


@pytest.mark.parametrize("dim, index", [
    (0, GATHER), (1, np.array([[[2, 0], [1, 1], [0, 2]]])), (-1, np.array([[[3, 3, 0]]])),
    (2, np.zeros((2, 3, 0), dtype=np.int64))], ids=str)
def test_gather(dim: int, index: np.ndarray) -> None:
    """gather's values and gradients (index smaller than self on other axes, empty too)."""
    check([A], lambda x: x.gather(dim, torch.tensor(index)),
          lambda x: x.gather(dim, Tensor(index.astype(np.int32))))


def test_gather_int_and_errors() -> None:
    """gather of ints keeps the dtype; bad index dtype, rank, size, range: torch's errors."""
    check([A.astype(np.int32)], lambda x: x.gather(0, torch.tensor(GATHER)),
          lambda x: x.gather(0, Tensor(GATHER.astype(np.int32))), grad=False)
    idx = Tensor(GATHER.astype(np.int32))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        Tensor(A).gather(0, idx.float())
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        Tensor(A).gather(0, Tensor([[0]]))
    with pytest.raises(RuntimeError, match="Size does not match"):
        Tensor(A).gather(0, Tensor(np.zeros((1, 3, 5), np.int32)))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0"):
        Tensor(A).gather(0, Tensor([[[5]]])).numpy()
    with pytest.raises(IndexError, match="Dimension out of range"):
        Tensor(A).gather(3, idx)


SCATTER_INDEX = np.array([[0, 1, 2, 0], [2, 2, 1, 0]], dtype=np.int64)  # repeats in column 3


@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_scatter(reduce: str | None) -> None:
    """scatter with a tensor and a number, replace / add / multiply, src's gradient."""
    index = SCATTER_INDEX if reduce else np.array([[0, 1, 2, 0], [2, 0, 1, 1]])
    kw = {} if reduce is None else {"reduce": reduce}
    check([(3, 4), (2, 4)], lambda x, s: x.scatter(0, torch.tensor(index), s, **kw),
          lambda x, s: x.scatter(0, Tensor(index.astype(np.int32)), s, **kw),
          grad=reduce is None)  # torch has no derivative with reduce
    check([(3, 5)], lambda x: x.scatter(1, torch.tensor(index[:, :3]), 2.5, **kw),
          lambda x: x.scatter(1, Tensor(index[:, :3].astype(np.int32)), 2.5, **kw),
          grad=reduce is None)


@pytest.mark.parametrize("shapes", [((3, 4), (0, 4)), ((0, 4), (0, 4)), ((3, 4), (2, 0))],
                         ids=str)
def test_scatter_with_nothing_to_write(shapes: tuple[tuple[int, ...], ...]) -> None:
    """An empty index (or self) writes nothing: scatter and scatter_reduce give self, as torch."""
    shape, index_shape = shapes
    index = np.zeros(index_shape, np.int64)
    # (values only: torch's own backward fails here, its gradient to src has index's shape)
    check([shape, (2, 4)], lambda x, s: x.scatter(0, torch.tensor(index), s),
          lambda x, s: x.scatter(0, Tensor(index.astype(np.int32)), s), grad=False)
    check([shape, (2, 4)], lambda x, s: x.scatter_reduce(0, torch.tensor(index), s, "sum"),
          lambda x, s: x.scatter_reduce(0, Tensor(index.astype(np.int32)), s, "sum"), grad=False)


def test_scatter_errors_and_ints() -> None:
    """Int scatter keeps the dtype; torch's errors for dtypes, reduce, sizes, range."""
    i = Tensor(SCATTER_INDEX.astype(np.int32))
    out = Tensor.zeros(3, 4, dtype=dtypes.int32).scatter(0, i, 1.5, reduce="add")
    ref = torch.zeros(3, 4, dtype=torch.int32).scatter(0, torch.tensor(SCATTER_INDEX), 1.5,
                                                      reduce="add")
    assert out.dtype == dtypes.int32 and out.tolist() == ref.tolist()
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64"):
        Tensor.zeros(3, 4).scatter(0, i.float(), 1.0)
    with pytest.raises(RuntimeError, match="self.dtype to be equal to src.dtype"):
        Tensor.zeros(3, 4).scatter(0, i, Tensor.ones(2, 4, dtype=dtypes.int32))
    with pytest.raises(RuntimeError, match="add or multiply"):
        Tensor.zeros(3, 4).scatter(0, i, 1.0, reduce="mean")
    with pytest.raises(RuntimeError, match="no larger"):
        Tensor.zeros(3, 4).scatter(0, Tensor([[0, 0, 0, 0, 0]]), Tensor.ones(1, 5))
    with pytest.raises(RuntimeError, match="out of bounds"):
        Tensor.zeros(3, 4).scatter(0, Tensor([[5]]), 1.0).numpy()


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce: str, include_self: bool) -> None:
    """scatter_reduce's five reductions, with and without self, duplicates included."""
    index = torch.tensor(SCATTER_INDEX)
    grad = reduce in ("sum", "mean")
    check([(3, 4), (2, 4)],
          lambda x, s: x.scatter_reduce(0, index, s, reduce, include_self=include_self),
          lambda x, s: x.scatter_reduce(0, Tensor(SCATTER_INDEX.astype(np.int32)), s, reduce,
                                        include_self=include_self), grad=grad)


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_extreme_shares_the_gradient_among_ties(reduce: str) -> None:
    """amax/amin with self included: every value equal to the result, self's and src's, gets an
    even share of its gradient, as torch's."""
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], np.float32)
    src = np.array([[3.0, 1.0, 3.0], [2.0, 5.0, 0.0]], np.float32)
    index = np.array([[1, 0, 1], [0, 2, 2]])
    check([x, src], lambda a, s: a.scatter_reduce(1, torch.tensor(index), s, reduce),
          lambda a, s: a.scatter_reduce(1, Tensor(index.astype(np.int32)), s, reduce))


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax"])
def test_scatter_reduce_ints(reduce: str) -> None:
    """Int scatter_reduce (mean floors, as torch)."""
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    src = np.array([[5, -3, 7, 1], [2, 9, -8, 4]], dtype=np.int32)
    ref = torch.tensor(x).scatter_reduce(0, torch.tensor(SCATTER_INDEX), torch.tensor(src),
                                         reduce)
    out = Tensor(x).scatter_reduce(0, Tensor(SCATTER_INDEX.astype(np.int32)), Tensor(src),
                                   reduce)
    assert out.dtype == dtypes.int32 and out.tolist() == ref.tolist()
    with pytest.raises(RuntimeError, match="sum, prod, mean, amax or amin"):
        Tensor(x).scatter_reduce(0, Tensor(SCATTER_INDEX.astype(np.int32)), Tensor(src), "maximum")


def test_masked_fill() -> None:
    """masked_fill with a number and a 0-d tensor (both get gradients), broadcast, dtypes."""
    mask = A[0] > -6
    check([A], lambda x: x.masked_fill(torch.tensor(mask), -1.5),
          lambda x: x.masked_fill(Tensor(mask), -1.5))
    check([A, np.array(2.0, np.float32)], lambda x, v: x.masked_fill(torch.tensor(mask), v),
          lambda x, v: x.masked_fill(Tensor(mask), v))
    check([np.arange(4, dtype=np.int32)], lambda x: x.masked_fill(torch.tensor(
        [True, False, True, False]), 2.7), lambda x: x.masked_fill(Tensor(
            [True, False, True, False]), 2.7), grad=False)
    with pytest.raises(RuntimeError, match="boolean masks"):
        Tensor(A).masked_fill(Tensor([1]), 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        Tensor(A).masked_fill(Tensor([True]), Tensor([1.0, 2.0]))


def test_masked_select_and_nonzero() -> None:
    """masked_select (broadcast, all-False, gradient) and nonzero's int64 (n, ndim)."""
    check([A], lambda x: x.masked_select(torch.tensor(A[0] > -3)),
          lambda x: x.masked_select(Tensor(A[0] > -3)))
    check([A], lambda x: x.masked_select(torch.tensor(A < -100)),
          lambda x: x.masked_select(Tensor(A < -100)))
    with pytest.raises(RuntimeError, match="BoolTensor"):
        Tensor(A).masked_select(Tensor([1]))
    # nonzero's result is int64 as torch's, int32 on WEBGPU (no 64-bit ints: index_dtype)
    for data in (A, A > 0, np.zeros((0, 3), np.float32), np.array(3.0), np.array(0)):
        ref = torch.tensor(data).nonzero()
        out = Tensor(data).nonzero()
        assert same_dtype(out.dtype, ref.dtype) and out.dtype == index_dtype(Device.DEFAULT)
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
    cols = Tensor(A > 5).nonzero(as_tuple=True)
    for c, r in zip(cols, torch.tensor(A > 5).nonzero(as_tuple=True)):
        np.testing.assert_array_equal(c.numpy(), r.numpy())
