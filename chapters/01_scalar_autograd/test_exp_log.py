"""Task 5: exp and log, their gradients, and what they make possible (2 ** x, softplus)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from chapters.grading import expect_close
from tinyfw.scalar import Value

pytestmark = pytest.mark.task("01.exp_log")


def check_against_torch(fn: Callable[..., Any], inputs: list[float], what: str) -> None:
    """fn on Values and on float64 torch tensors: the same value and the same input gradients."""
    import torch

    xs = [Value(v) for v in inputs]
    out = fn(*xs)
    assert isinstance(out, Value), f"{what} should be a Value, got {type(out).__name__}"
    out.backward()
    ts = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in inputs]
    fn(*ts).backward()
    expected = fn(*(torch.tensor(v, dtype=torch.float64) for v in inputs)).item()
    expect_close(out.data, expected, rtol=1e-10, what=f"value of {what} at {inputs}")
    torch_grads = [0.0 if t.grad is None else t.grad.item() for t in ts]  # None: unused
    expect_close([x.grad for x in xs], torch_grads, rtol=1e-10,
                 what=f"input gradients of {what} at {inputs}")


@pytest.mark.parametrize("x", [-2.0, 0.0, 0.5, 3.0])
def test_exp(x: float) -> None:
    """exp(x) has value e**x and gradient e**x."""
    v = Value(x)
    y = v.exp()
    expect_close(y.data, math.exp(x), rtol=1e-12, what=f"exp({x}).data")
    assert len(y.src) == 1 and y.src[0] is v, "x.exp().src should be (x,)"
    y.backward()
    expect_close(v.grad, math.exp(x), rtol=1e-12, what=f"x.grad for exp(x) at x = {x}")


@pytest.mark.parametrize("x", [0.1, 1.0, 2.5, 100.0])
def test_log(x: float) -> None:
    """log(x) has value ln x and gradient 1 / x."""
    v = Value(x)
    y = v.log()
    expect_close(y.data, math.log(x), rtol=1e-12, atol=1e-12, what=f"log({x}).data")
    assert len(y.src) == 1 and y.src[0] is v, "x.log().src should be (x,)"
    y.backward()
    expect_close(v.grad, 1.0 / x, rtol=1e-12, what=f"x.grad for log(x) at x = {x}")


def test_log_undoes_exp() -> None:
    """log(exp(x)) is x, with gradient 1."""
    x = Value(1.3)
    y = x.exp().log()
    y.backward()
    expect_close([y.data, x.grad], [1.3, 1.0], rtol=1e-12, what="[log(exp(x)), its gradient]")


def test_softplus() -> None:
    """log(1 + exp(x)) matches PyTorch; its gradient is the sigmoid of x."""
    for x in [-3.0, 0.0, 2.0]:
        check_against_torch(lambda v: (1.0 + v.exp()).log(), [x], "log(1 + exp(x))")


def test_number_to_a_value_power() -> None:
    """2 ** x (given as exp(x * ln 2)) has gradient 2**x * ln 2."""
    check_against_torch(lambda v: 2.0**v, [1.5], "2 ** x")


def test_a_bigger_expression() -> None:
    """exp and log mixed with arithmetic and fan-out match PyTorch."""
    def fn(a: Any, b: Any) -> Any:
        return (a * b).exp() / (a.log() + b * b) + (a.exp() + b.exp()).log() * a

    check_against_torch(fn, [1.4, -0.6], "exp(a*b) / (log(a) + b*b) + log(exp(a) + exp(b)) * a")
