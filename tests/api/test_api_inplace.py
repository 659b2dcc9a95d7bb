"""In-place operators (a += b and the rest) write into the tensor, as torch's do (issue 11): the
same object, its dtype and shape kept, views and aliases seeing the write, and torch's errors
for a result that cannot be cast, a shape that does not broadcast and a leaf requiring grad."""
from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np
import pytest
import torch

import tinyfw.torch as tinyfw_torch
from tinyfw import Tensor, dtypes

FLOAT_OPS: list[tuple[str, Callable]] = [
    ("iadd", operator.iadd), ("isub", operator.isub), ("imul", operator.imul),
    ("itruediv", operator.itruediv), ("ifloordiv", operator.ifloordiv),
    ("imod", operator.imod), ("ipow", operator.ipow),
]
INT_OPS: list[tuple[str, Callable]] = [
    ("iadd", operator.iadd), ("isub", operator.isub), ("imul", operator.imul),
    ("ifloordiv", operator.ifloordiv), ("imod", operator.imod), ("iand", operator.iand),
    ("ior", operator.ior), ("ixor", operator.ixor), ("ilshift", operator.ilshift),
    ("irshift", operator.irshift),
]
A_FLOAT = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.25]], np.float32)
B_FLOAT = np.array([2.0, 0.5, -3.0], np.float32)
A_INT = np.array([[7, -3, 4], [2, 9, -8]], np.int32)
B_INT = np.array([2, 3, 1], np.int32)


def _both(op: Callable, a: np.ndarray, b: np.ndarray | int | float) -> tuple[Tensor, Tensor,
                                                                            torch.Tensor]:
    """op applied in place to a tinyfw and a torch copy of a; returns the tinyfw tensor before
    (the same object must come back), after, and torch's result."""
    x = Tensor(a.copy())
    other = Tensor(b) if isinstance(b, np.ndarray) else b
    ref = torch.tensor(a.copy())
    ref_other = torch.tensor(b) if isinstance(b, np.ndarray) else b
    before = x
    x = op(x, other)
    ref = op(ref, ref_other)
    return before, x, ref


@pytest.mark.parametrize("name, op", FLOAT_OPS, ids=[n for n, _ in FLOAT_OPS])
@pytest.mark.parametrize("other", ["tensor", "scalar"])
def test_float_inplace(name: str, op: Callable, other: str) -> None:
    """a op= b on float32: torch's values, the same object, dtype and shape kept."""
    b = B_FLOAT if other == "tensor" else 2.0
    before, x, ref = _both(op, A_FLOAT, b)
    assert x is before
    assert x.dtype == dtypes.float32 and x.shape == (2, 3)
    np.testing.assert_allclose(x.numpy(), ref.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name, op", INT_OPS, ids=[n for n, _ in INT_OPS])
@pytest.mark.parametrize("other", ["tensor", "scalar"])
def test_int_inplace(name: str, op: Callable, other: str) -> None:
    """a op= b on int32, exact, as torch."""
    b: np.ndarray | int = B_INT if other == "tensor" else 2
    if name in ("ilshift", "irshift") and other == "tensor":
        pytest.skip("tinyfw shifts by a Python int only (a shift by a tensor is not supported)")
    before, x, ref = _both(op, A_INT, b)
    assert x is before and x.dtype == dtypes.int32
    np.testing.assert_array_equal(x.numpy(), ref.numpy())


def test_imatmul() -> None:
    """a @= b with a square b keeps a's shape, as torch."""
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.eye(3, dtype=np.float32) * 2
    before, x, ref = _both(operator.imatmul, a, b)
    assert x is before
    np.testing.assert_allclose(x.numpy(), ref.numpy())


def test_alias_sees_the_write() -> None:
    """b = a; a += 1: b is a, so b shows the new value."""
    a = Tensor([1.0, 2.0])
    b = a
    a += 1
    np.testing.assert_array_equal(b.numpy(), [2.0, 3.0])


def test_write_through_a_view() -> None:
    """a[1:] += 1 and v = a[0]; v *= 5 change a, as in torch."""
    a, ref = Tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    a[1:] += 1
    ref[1:] += 1
    v, rv = a[0], ref[0]
    v *= 5
    rv *= 5
    np.testing.assert_array_equal(a.numpy(), ref.numpy())


def test_int_tensor_plus_float_is_refused() -> None:
    """int += float: torch's RuntimeError naming both dtypes; the tensor is unchanged."""
    x = Tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Int"):
        x += 0.5
    with pytest.raises(RuntimeError, match="can't be cast"):
        t = torch.tensor([1, 2], dtype=torch.int32)
        t += 0.5
    with pytest.raises(RuntimeError, match="can't be cast"):
        x /= 2
    np.testing.assert_array_equal(x.numpy(), [1, 2])


def test_shape_that_would_grow_is_refused() -> None:
    """a += b where the broadcast shape is bigger than a's: torch's RuntimeError."""
    x = Tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x += Tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        t = torch.tensor([1.0, 2.0, 3.0])
        t += torch.ones(2, 3)


def test_leaf_requiring_grad_is_refused() -> None:
    """w += 1 on a parameter: torch's RuntimeError (use w.assign, or an optimizer)."""
    w = Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w += 1
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        tw = torch.tensor([1.0, 2.0], requires_grad=True)
        tw += 1


def test_gradient_flows_through_inplace_on_non_leaf() -> None:
    """y = w * 2; y += w; y *= 3: the gradient to w is torch's (3 * (2 + 1) = 9)."""
    w = Tensor([1.0, -2.0], requires_grad=True)
    y = w * 2
    y += w
    y *= 3
    y.sum().backward()
    assert w.grad is not None
    tw = torch.tensor([1.0, -2.0], requires_grad=True)
    ty = tw * 2
    ty += tw
    ty *= 3
    ty.sum().backward()
    assert tw.grad is not None
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


def test_inplace_on_a_view_of_a_grad_tensor_keeps_the_gradient() -> None:
    """A write through a view of a tensor that requires grad: the gradient flows to what was
    written and to what was not overwritten, as torch's (torch-named in-place methods, the
    operators and setitem alike)."""
    for write in (lambda v: v.__iadd__(1), lambda v: v.mul_(3), lambda v: v.__setitem__(0, 5.0),
                  lambda v: v.zero_()):
        grads = []
        for lib in (tinyfw_torch, torch):
            w = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
            y = w * 2
            write(y[0:2])
            (y * y).sum().backward()
            grads.append(w.grad.tolist())
        assert grads[0] == grads[1]


def test_to_moves_in_place() -> None:
    """x.to_(device) is x, on the device, same values."""
    x = Tensor([1.0, 2.0])
    same = x.to_("NUMPY")
    assert same is x and x.device == "NUMPY"
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
