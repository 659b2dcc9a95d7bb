"""Gradients at the edges give torch's values (issue 11): a function that reaches an input only
through sign, rounding or a comparison gives that input zeros (not None, not an error), and the
differentiable functions keep torch's values at 0, at ties, at their bounds and at extremes."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tinyfw import Tensor

VALUES = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0]

# name, function (the same code runs on a tinyfw and a torch tensor), input values
CASES: list[tuple[str, Callable[[Any], Any], list[float]]] = [
    ("sign", lambda x: x.sign(), VALUES),
    ("round", lambda x: x.round(), VALUES + [0.5, 1.5, 2.5]),
    ("floor", lambda x: x.floor(), VALUES),
    ("ceil", lambda x: x.ceil(), VALUES),
    ("trunc", lambda x: x.trunc(), VALUES),
    ("sign_times_x", lambda x: x.sign() * x, VALUES),
    ("x_where_positive", lambda x: (x > 0).where(x, x * 0.5) if isinstance(x, Tensor) else
     torch.where(x > 0, x, x * 0.5), VALUES),
    ("pow_0", lambda x: x ** 0, VALUES),
    ("pow_2", lambda x: x ** 2, VALUES),
    ("pow_3", lambda x: x ** 3, VALUES),
    ("pow_minus_1", lambda x: x ** -1, [-2.0, -0.5, 0.5, 4.0]),
    ("pow_half", lambda x: x ** 0.5, [0.25, 1.0, 4.0]),
    ("sigmoid", lambda x: x.sigmoid(), [-1000.0, -100.0, -20.0, 0.0, 20.0, 100.0, 1000.0]),
    ("softplus", lambda x: x.softplus() if isinstance(x, Tensor) else
     torch.nn.functional.softplus(x), [-1000.0, -100.0, -20.0, 0.0, 20.0, 100.0]),
    ("logsigmoid", lambda x: x.logsigmoid() if isinstance(x, Tensor) else
     torch.nn.functional.logsigmoid(x), [-1000.0, -100.0, -20.0, 0.0, 20.0, 100.0]),
    ("log_softmax", lambda x: x.log_softmax(0) * (x.shape[0] - 0.5), [-1000.0, 0.0, 1000.0]),
    ("sqrt", lambda x: x.sqrt(), [0.0, 0.25, 4.0]),
    ("abs", lambda x: x.abs(), VALUES),
    ("relu", lambda x: x.relu(), VALUES),
    ("maximum_tie", lambda x: x.maximum(x.detach() * 0 + 1.0), [0.0, 1.0, 2.0]),
    ("minimum_tie", lambda x: x.minimum(x.detach() * 0 + 1.0), [0.0, 1.0, 2.0]),
    ("clamp_bounds", lambda x: x.clamp(-1.0, 1.0), [-2.0, -1.0, 0.0, 1.0, 2.0]),
]


def grads(fn: Callable[[Any], Any], values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of sum(fn(x)) in tinyfw and in torch, for x = values."""
    x = Tensor(values, requires_grad=True)
    fn(x).sum().backward()
    assert x.grad is not None, "no gradient (torch gives one)"
    ref = torch.tensor(values, requires_grad=True)
    fn(ref).sum().backward()
    assert ref.grad is not None
    return x.grad.numpy(), ref.grad.numpy()


@pytest.mark.parametrize("name, fn, values", CASES, ids=[c[0] for c in CASES])
def test_gradient_like_torch(name: str, fn: Callable[[Any], Any], values: list[float]) -> None:
    """backward gives torch's gradient, no NaN where torch has none."""
    got, want = grads(fn, values)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, equal_nan=False,
                               err_msg=f"{name} at {values}")


@pytest.mark.parametrize("name", ["sign", "round", "floor", "ceil", "trunc", "pow_0"])
def test_gradient_of_flat_function_is_zeros(name: str) -> None:
    """Tensor.gradient of a function flat in x gives zeros of x's shape, as torch.autograd.grad."""
    fn = next(c[1] for c in CASES if c[0] == name)
    x = Tensor([[-1.5, 0.0], [2.5, 3.0]], requires_grad=True)
    (g,) = fn(x).sum().gradient(x)
    assert g.shape == x.shape
    np.testing.assert_array_equal(g.numpy(), np.zeros((2, 2), np.float32))


def test_detached_input_still_gets_no_gradient() -> None:
    """A leaf reached only through detach() keeps .grad None, as in torch."""
    x, y = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0], requires_grad=True)
    (x.detach() * y).sum().backward()
    assert x.grad is None
    np.testing.assert_array_equal(y.grad.numpy() if y.grad is not None else None, [1.0, 2.0])


def test_unused_target_is_an_error() -> None:
    """Tensor.gradient of a target the result does not depend on raises, as torch does."""
    x, y = Tensor([1.0], requires_grad=True), Tensor([2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        (x * 2).sum().gradient(y)
    with pytest.raises(RuntimeError):
        torch.autograd.grad((torch.ones(1, requires_grad=True) * 2).sum(),
                            torch.ones(1, requires_grad=True))


def test_zero_gradients_accumulate_as_zeros() -> None:
    """A second backward through sign adds zeros to the gradient already there."""
    x = Tensor([1.0, -2.0], requires_grad=True)
    (x * 3).sum().backward()
    x.sign().sum().backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_sigmoid_gradient_never_nan() -> None:
    """sigmoid's gradient at huge inputs is 0, not NaN (exp overflow), as in torch."""
    x = Tensor([-math.inf, -1e30, 1e30, math.inf], requires_grad=True)
    x.sigmoid().sum().backward()
    assert x.grad is not None
    got = x.grad.numpy()
    ref = torch.tensor([-math.inf, -1e30, 1e30, math.inf], requires_grad=True)
    ref.sigmoid().sum().backward()
    assert ref.grad is not None
    np.testing.assert_array_equal(got, ref.grad.numpy())


def test_clamp_takes_torch_keywords() -> None:
    """x.clamp(min=..., max=...) as torch; one bound alone too."""
    values = [-2.0, 0.5, 3.0]
    x, ref = Tensor(values), torch.tensor(values)
    np.testing.assert_array_equal(x.clamp(min=0.0).numpy(), ref.clamp(min=0.0).numpy())
    np.testing.assert_array_equal(x.clamp(max=1.0).numpy(), ref.clamp(max=1.0).numpy())
    np.testing.assert_array_equal(x.clamp(min=-1.0, max=1.0).numpy(),
                                  ref.clamp(min=-1.0, max=1.0).numpy())
