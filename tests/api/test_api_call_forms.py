"""Functions callable as Tensor.f(a, b) and as a.f(b) give one answer, torch's (issue 11).

tinygrad's binary functions are methods, so Tensor.f(a, b) is a.f(b) and the operator (a + b)
calls it too. torch has a function torch.f(a, b) beside the method. Each form is checked against
torch with tensors of two dtypes, broadcast, and a Python scalar in either place. A scalar first
(Tensor.add(2, a)) is where the two differ: torch.add(2, t) works, tinygrad's method does not;
tinyfw computes it as torch does (and raises torch's TypeError where torch does).
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tests.helpers import same_dtype
from tinyfw import Tensor, dtypes

pytestmark = pytest.mark.device_subset

# tinyfw name, torch name, the Python operator, whether torch takes a scalar as second operand
# and as first (torch.f(2, t)).
BINARY: list[tuple[str, str, Callable[[Any, Any], Any] | None, bool, bool]] = [
    ("add", "add", operator.add, True, True),
    ("sub", "sub", operator.sub, True, True),
    ("mul", "mul", operator.mul, True, True),
    ("div", "div", operator.truediv, True, True),
    ("floordiv", "floor_divide", operator.floordiv, True, True),
    ("mod", "remainder", operator.mod, True, True),
    ("pow", "pow", operator.pow, True, True),
    ("maximum", "maximum", None, False, False),
    ("minimum", "minimum", None, False, False),
]
NAMES = [row[0] for row in BINARY]

FLOATS = (np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.25]], np.float32),
          np.array([2.0, 0.5, -3.0], np.float32))
INTS = (np.array([[7, -3, 4], [2, 9, -8]], np.int32), np.array([2, 3, 5], np.int32))

def same(tiny: Tensor, ref: torch.Tensor) -> None:
    """Same shape, dtype and values (NaN equal to NaN)."""
    assert tiny.shape == tuple(ref.shape)
    assert same_dtype(tiny.dtype, ref.dtype), (tiny.dtype, ref.dtype)
    np.testing.assert_allclose(tiny.numpy(), ref.numpy(), rtol=1e-6, equal_nan=True)


def row(name: str) -> tuple[str, str, Callable[[Any, Any], Any] | None, bool, bool]:
    """The BINARY entry of a tinyfw name."""
    return next(r for r in BINARY if r[0] == name)


@pytest.mark.parametrize("arrays", [FLOATS, INTS, (INTS[0], FLOATS[1])], ids=["f", "i", "if"])
@pytest.mark.parametrize("name", NAMES)
def test_tensor_tensor(name: str, arrays: tuple[np.ndarray, np.ndarray]) -> None:
    """Tensor.f(a, b), a.f(b), the operator and torch.f agree, broadcast and promoted."""
    _, torch_name, op, _, _ = row(name)
    a, b = (Tensor(x) for x in arrays)
    ta, tb = (torch.tensor(x) for x in arrays)
    ref = getattr(torch, torch_name)(ta, tb)
    same(getattr(Tensor, name)(a, b), ref)
    same(getattr(a, name)(b), ref)
    same(getattr(b.reshape(1, 3), name)(a), getattr(torch, torch_name)(tb.reshape(1, 3), ta))
    if op is not None:
        same(op(a, b), op(ta, tb))


@pytest.mark.parametrize("scalar", [2, 2.5, -0.5], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_tensor_scalar(name: str, scalar: int | float) -> None:
    """A Python scalar second: both forms give torch's value (and dtype). Where torch.f refuses
    a scalar (maximum), tinygrad's signature takes one: the value is torch's with the scalar
    as a tensor of the weak dtype torch gives Python scalars."""
    _, torch_name, op, torch_scalar, _ = row(name)
    for arr in (FLOATS[0], INTS[0]):
        a, ta = Tensor(arr), torch.tensor(arr)
        fn = getattr(torch, torch_name)
        if torch_scalar:
            ref = fn(ta, scalar)
        else:
            with pytest.raises(TypeError):
                fn(ta, scalar)
            ref = fn(ta, torch.tensor(scalar, dtype=torch.result_type(ta, scalar)))
        same(getattr(Tensor, name)(a, scalar), ref)
        same(getattr(a, name)(scalar), ref)
        if op is not None:
            same(op(a, scalar), op(ta, scalar))
            same(op(scalar, a), op(scalar, ta))  # the reflected operator, __radd__ and so on


@pytest.mark.parametrize("name", NAMES)
def test_scalar_first(name: str) -> None:
    """Tensor.f(2, a): torch's value where torch.f(2, t) works, else torch's TypeError."""
    _, torch_name, _, _, torch_first = row(name)
    a, ta = Tensor(FLOATS[0]), torch.tensor(FLOATS[0])
    fn = getattr(torch, torch_name)
    if torch_first:
        same(getattr(Tensor, name)(2, a), fn(2, ta))
    else:
        with pytest.raises(TypeError):
            fn(2, ta)
        with pytest.raises(TypeError):
            getattr(Tensor, name)(2, a)


def test_torch_method_refuses_scalar_self() -> None:
    """torch.Tensor.add(2, t), the unbound method as tinyfw's Tensor.add is, is a TypeError."""
    with pytest.raises(TypeError):
        torch.Tensor.add(2, torch.ones(2))


@pytest.mark.parametrize("name", ["matmul", "dot"])
@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((3,), (3,)), ((4, 2, 3), (3,))], ids=str)
def test_matmul_forms(name: str, shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    """Tensor.matmul(a, b), a.matmul(b), a @ b and torch.matmul agree (dot: tinygrad's alias)."""
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    a, b, ta, tb = Tensor(x), Tensor(y), torch.tensor(x), torch.tensor(y)
    ref = torch.matmul(ta, tb)
    same(getattr(Tensor, name)(a, b), ref)
    same(getattr(a, name)(b), ref)
    same(a @ b, ref)
    if name == "dot" and len(shapes[0]) == len(shapes[1]) == 1:
        same(Tensor.dot(a, b), torch.dot(ta, tb))


@pytest.mark.parametrize("name", ["matmul", "dot"])
@pytest.mark.parametrize("first", [True, False], ids=["scalar-first", "scalar-second"])
def test_matmul_scalar(name: str, first: bool) -> None:
    """A scalar operand of matmul or dot is torch's TypeError in every form."""
    a, ta = Tensor(FLOATS[1]), torch.tensor(FLOATS[1])
    operands: tuple[Any, Any] = (2, a) if first else (a, 2)
    with pytest.raises(TypeError):
        getattr(torch, name)(*((2, ta) if first else (ta, 2)))
    with pytest.raises(TypeError):
        getattr(Tensor, name)(*operands)


@pytest.mark.parametrize("x_scalar", [False, True], ids=["x-tensor", "x-scalar"])
@pytest.mark.parametrize("y_scalar", [False, True], ids=["y-tensor", "y-scalar"])
def test_where_forms(x_scalar: bool, y_scalar: bool) -> None:
    """Tensor.where(c, x, y) and c.where(x, y) are torch.where(c, x, y), scalars included."""
    c_arr = FLOATS[0] > 0
    x_arr, y_arr = FLOATS[0], np.broadcast_to(FLOATS[1], (2, 3)).copy()
    x: Any = 7 if x_scalar else Tensor(x_arr)
    y: Any = -1 if y_scalar else Tensor(y_arr)
    tx: Any = 7 if x_scalar else torch.tensor(x_arr)
    ty: Any = -1 if y_scalar else torch.tensor(y_arr)
    ref = torch.where(torch.tensor(c_arr), tx, ty)
    c = Tensor(c_arr)
    same(Tensor.where(c, x, y), ref)
    same(c.where(x, y), ref)


def test_where_scalar_condition() -> None:
    """A Python bool as the condition is torch's TypeError."""
    with pytest.raises(TypeError):
        torch.where(True, torch.ones(2), 2)
    with pytest.raises(TypeError):
        Tensor.where(True, Tensor.ones(2), 2)


@pytest.mark.parametrize("name", ["cat", "stack"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_stack_forms(name: str, dim: int) -> None:
    """Tensor.cat(a, b), a.cat(b) and Tensor.cat([a, b]) are torch.cat([a, b]) (and stack)."""
    x, y = FLOATS[0], FLOATS[0] * 2
    a, b = Tensor(x), Tensor(y)
    ref = getattr(torch, name)([torch.tensor(x), torch.tensor(y)], dim=dim)
    fn = getattr(Tensor, name)
    same(fn(a, b, dim=dim), ref)
    same(getattr(a, name)(b, dim=dim), ref)
    same(fn([a, b], dim=dim), ref)


@pytest.mark.parametrize("name", ["cat", "stack"])
def test_cat_stack_scalar(name: str) -> None:
    """A Python scalar among the tensors is torch's TypeError, in both forms."""
    a, ta = Tensor(FLOATS[1]), torch.tensor(FLOATS[1])
    with pytest.raises(TypeError):
        getattr(torch, name)([ta, 2])
    with pytest.raises(TypeError):
        getattr(Tensor, name)(a, 2)
    with pytest.raises(TypeError):
        getattr(a, name)(2)


@pytest.mark.parametrize("weight", [0.25, "tensor"])
def test_lerp_forms(weight: float | str) -> None:
    """Tensor.lerp(a, b, w) and a.lerp(b, w) are torch.lerp(a, b, w), w a float or a tensor."""
    x, y = FLOATS[0], FLOATS[0] * 3
    w_arr = np.array([0.0, 0.5, 1.0], np.float32)
    w: Any = Tensor(w_arr) if weight == "tensor" else weight
    tw: Any = torch.tensor(w_arr) if weight == "tensor" else weight
    a, b = Tensor(x), Tensor(y)
    ref = torch.lerp(torch.tensor(x), torch.tensor(y), tw)
    same(Tensor.lerp(a, b, w), ref)
    same(a.lerp(b, w), ref)


COMPARISONS = [operator.lt, operator.gt, operator.le, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda op: op.__name__)
def test_comparison_operators(op: Callable[[Any, Any], Any]) -> None:
    """a < b, a < 2 and 2 < a (Python reflects it to a > 2) are torch's bool tensors."""
    a, b = Tensor(FLOATS[0]), Tensor(FLOATS[1])
    ta, tb = torch.tensor(FLOATS[0]), torch.tensor(FLOATS[1])
    same(op(a, b), op(ta, tb))
    same(op(a, 1.5), op(ta, 1.5))
    same(op(1.5, a), op(1.5, ta))


def test_data_replace_contiguous_backward_max_shape() -> None:
    """tinygrad's data() (the bytes as a typed memoryview in the tensor's shape), replace (the
    value, dtype and device of another tensor of the same shape), contiguous_backward (the
    same value and gradient) and max_shape / max_numel (the shape: no symbolic shapes here)."""
    t = Tensor([[1, 2], [3, -4]])
    view = t.data()
    assert (view.format, view.shape) == ("i", (2, 2)) and view.tolist() == [[1, 2], [3, -4]]
    assert Tensor(2.5).data().shape == () and Tensor(2.5).data().tolist() == 2.5
    assert Tensor([1.5], dtype=dtypes.bfloat16).data().tolist() == [0x3FC0]  # its bits
    x = Tensor([1, 2, 3])
    assert x.replace(Tensor([0.5, 1.5, 2.5], device="NUMPY")) is x
    assert (x.dtype, x.device, x.tolist()) == (dtypes.float32, "NUMPY", [0.5, 1.5, 2.5])
    with pytest.raises(RuntimeError, match=r"shape \[1\] in a tensor of shape \[3\]"):
        x.replace(Tensor([1.0]))
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = a.reshape(3, 1).expand(3, 4).contiguous_backward() * Tensor.arange(4.0)
    assert out.tolist() == (a.reshape(3, 1) * Tensor.arange(4.0)).tolist()
    out.sum().backward()
    assert a.grad is not None and a.grad.tolist() == [6.0, 6.0, 6.0]
    assert (t.max_shape, t.max_numel()) == ((2, 2), 4)
