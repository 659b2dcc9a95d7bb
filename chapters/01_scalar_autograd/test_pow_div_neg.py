"""Task 4: ** with a number exponent, and -, - and / built from the ops you already have."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chapters.grading import expect_close
from tinyfw.scalar import Value

pytestmark = pytest.mark.task("01.pow_div_neg")


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


@pytest.mark.parametrize("exponent", [2, 3, 1, 0.5, -1, -2.5, 0])
def test_pow(exponent: float) -> None:
    """x ** n has value x**n and gradient n * x**(n-1)."""
    x = Value(1.7)
    y = x**exponent
    expect_close(y.data, 1.7**exponent, rtol=1e-12, what=f"(x ** {exponent}).data at x = 1.7")
    assert len(y.src) == 1 and y.src[0] is x, f"(x ** {exponent}).src should be (x,)"
    y.backward()
    expect_close(x.grad, exponent * 1.7 ** (exponent - 1), rtol=1e-12,
                 what=f"x.grad for x ** {exponent} at x = 1.7")


def test_pow_of_a_negative_base() -> None:
    """An integer power of a negative number: (-1.5) ** 3, gradient 3 * 2.25."""
    check_against_torch(lambda x: x**3, [-1.5], "x ** 3")


def test_neg() -> None:
    """-x has value -x and gradient -1; -(1 - x) has gradient 1."""
    check_against_torch(lambda x: -x, [2.5], "-x")
    check_against_torch(lambda x: -(1.0 - x), [2.5], "-(1 - x)")


@pytest.mark.parametrize("expression", ["a - b", "a - 2.0", "2.0 - a", "a - a", "b - a - a"])
def test_sub(expression: str) -> None:
    """a - b, with Values or numbers on either side, matches PyTorch."""
    check_against_torch(lambda a, b: eval(expression, {"a": a, "b": b}), [1.25, -4.0],
                        expression)


@pytest.mark.parametrize("expression", ["a / b", "a / 4.0", "4.0 / a", "a / a", "1.0 / (a * b)"])
def test_div(expression: str) -> None:
    """a / b, with Values or numbers on either side, matches PyTorch."""
    check_against_torch(lambda a, b: eval(expression, {"a": a, "b": b}), [1.25, -4.0],
                        expression)


def test_a_bigger_expression() -> None:
    """A graph mixing all four, with fan-out, matches PyTorch."""
    def fn(a: Any, b: Any, c: Any) -> Any:
        d = (a - b) / (a * b + 1.0)
        return d**2 - a / 3.0 + 2.0 / c - (-c) ** 3 * d

    check_against_torch(fn, [0.8, -1.7, 2.2], "((a - b) / (a*b + 1))**2 - a/3 + 2/c - ...")
