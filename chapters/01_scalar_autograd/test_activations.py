"""Task 6: tanh, relu and sigmoid: values, gradients, and no overflow at +-1000."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from chapters.grading import expect_close
from tinyfw.scalar import Value

pytestmark = pytest.mark.task("01.activations")

POINTS = [-3.0, -0.5, 0.0, 0.8, 2.0]


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
    expect_close(out.data, expected, rtol=1e-10, atol=1e-12, what=f"value of {what} at {inputs}")
    torch_grads = [0.0 if t.grad is None else t.grad.item() for t in ts]  # None: unused
    expect_close([x.grad for x in xs], torch_grads, rtol=1e-10, atol=1e-12,
                 what=f"input gradients of {what} at {inputs}")


@pytest.mark.parametrize("x", POINTS)
def test_tanh(x: float) -> None:
    """tanh(x) matches PyTorch, gradient 1 - tanh(x)**2."""
    check_against_torch(lambda v: v.tanh(), [x], "tanh(x)")


@pytest.mark.parametrize("x", POINTS + [-0.1, 4.0])
def test_relu(x: float) -> None:
    """relu(x) is max(x, 0); its gradient is 1 for x > 0 and 0 otherwise (also at 0)."""
    v = Value(x)
    y = v.relu()
    expect_close(y.data, max(x, 0.0), what=f"relu({x}).data")
    y.backward()
    expect_close(v.grad, 1.0 if x > 0 else 0.0, what=f"x.grad for relu(x) at x = {x}")


@pytest.mark.parametrize("x", POINTS)
def test_sigmoid(x: float) -> None:
    """sigmoid(x) matches PyTorch, gradient s * (1 - s)."""
    check_against_torch(lambda v: v.sigmoid(), [x], "sigmoid(x)")


@pytest.mark.parametrize("x", [-1000.0, -40.0, 40.0, 1000.0])
def test_far_from_zero(x: float) -> None:
    """At large |x| the squashing functions saturate, without OverflowError or nan."""
    for name in ["tanh", "sigmoid", "relu"]:
        v = Value(x)
        y = getattr(v, name)()
        y.backward()
        reference = {"tanh": math.tanh(x), "sigmoid": 0.5 * (1.0 + math.tanh(x / 2)),
                     "relu": max(x, 0.0)}[name]
        slope = {"tanh": 1.0 - math.tanh(x) ** 2,
                 "sigmoid": reference * (1.0 - reference), "relu": float(x > 0)}[name]
        expect_close(y.data, reference, rtol=1e-12, atol=1e-15, what=f"{name}({x}).data")
        expect_close(v.grad, slope, rtol=1e-9, atol=1e-15, what=f"x.grad for {name}(x) at {x}")


def test_a_tiny_network() -> None:
    """Activations inside weighted sums, with a shared input, match PyTorch."""
    def fn(x: Any, w1: Any, w2: Any, b: Any) -> Any:
        h1 = (w1 * x + b).tanh()
        h2 = (w2 * x - b).relu()
        h3 = (w1 * h1 + w2 * h2).sigmoid()
        return h1 * h2 + h3 * 2.0 - (h3 - h1).relu()

    check_against_torch(fn, [0.9, -1.2, 0.7, 0.3], "a two-layer expression")
