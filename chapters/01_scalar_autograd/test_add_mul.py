"""Task 1: + and * compute the right number, record their sources, and add local gradients."""

from __future__ import annotations

import pytest

from chapters.grading import expect_close
from tinyfw.scalar import Value

pytestmark = pytest.mark.task("01.add_mul")


def same_nodes(actual: tuple[Value, ...], expected: tuple[Value, ...]) -> bool:
    """Whether two tuples hold the very same Value objects, in order."""
    if len(actual) != len(expected):
        return False
    return all(a is e for a, e in zip(actual, expected, strict=True))


def test_add_forward() -> None:
    """a + b holds the sum in a new node whose sources are (a, b)."""
    a, b = Value(2.0), Value(-3.5)
    c = a + b
    assert isinstance(c, Value), f"a + b should be a Value, got {type(c).__name__}"
    expect_close(c.data, -1.5, what="(2 + -3.5).data")
    assert same_nodes(c.src, (a, b)), "(a + b).src should be the tuple (a, b)"
    assert c is not a and c is not b, "a + b should be a new node"
    expect_close([a.data, b.data], [2.0, -3.5], what="a.data and b.data after a + b")


def test_mul_forward() -> None:
    """a * b holds the product in a new node whose sources are (a, b)."""
    a, b = Value(2.0), Value(-3.5)
    c = a * b
    assert isinstance(c, Value), f"a * b should be a Value, got {type(c).__name__}"
    expect_close(c.data, -7.0, what="(2 * -3.5).data")
    assert same_nodes(c.src, (a, b)), "(a * b).src should be the tuple (a, b)"
    assert c is not a and c is not b, "a * b should be a new node"


def test_add_local_backward() -> None:
    """+ passes the output's gradient to both sources unchanged."""
    a, b = Value(2.0), Value(-3.5)
    c = a + b
    c.local_backward(2.5)
    expect_close(a.grad, 2.5, what="a.grad after (a + b).local_backward(2.5)")
    expect_close(b.grad, 2.5, what="b.grad after (a + b).local_backward(2.5)")


def test_mul_local_backward() -> None:
    """* sends each source the output's gradient times the other source's value."""
    a, b = Value(2.0), Value(-3.5)
    c = a * b
    c.local_backward(0.5)
    expect_close(a.grad, 0.5 * -3.5, what="a.grad after (a * b).local_backward(0.5)")
    expect_close(b.grad, 0.5 * 2.0, what="b.grad after (a * b).local_backward(0.5)")


def test_local_backward_adds_to_grad() -> None:
    """A local backward adds to a source's grad (+=), it never overwrites it (=)."""
    a, b = Value(2.0), Value(-3.5)
    a.grad, b.grad = 10.0, 20.0
    (a + b).local_backward(1.0)
    expect_close([a.grad, b.grad], [11.0, 21.0], what="[a.grad, b.grad] (were 10, 20) after +")
    (a * b).local_backward(1.0)
    expect_close([a.grad, b.grad], [11.0 - 3.5, 21.0 + 2.0],
                 what="[a.grad, b.grad] (were 11, 21) after *")


def test_same_source_twice() -> None:
    """x * x and x + x: both uses of x add their share, giving 2x and 2."""
    x = Value(3.0)
    square = x * x
    expect_close(square.data, 9.0, what="(x * x).data")
    square.local_backward(1.0)
    expect_close(x.grad, 6.0, what="x.grad after (x * x).local_backward(1) at x = 3")
    y = Value(3.0)
    double = y + y
    expect_close(double.data, 6.0, what="(x + x).data")
    double.local_backward(1.0)
    expect_close(y.grad, 2.0, what="x.grad after (x + x).local_backward(1)")


@pytest.mark.parametrize("expression", ["x + 2", "2 + x", "x * 3", "3 * x"])
def test_numbers_on_either_side(expression: str) -> None:
    """A plain number on either side becomes a leaf; only x's gradient matters here."""
    x = Value(1.5)
    out = eval(expression, {"x": x})
    assert isinstance(out, Value), f"{expression} should be a Value, got {type(out).__name__}"
    expected = {"x + 2": 3.5, "2 + x": 3.5, "x * 3": 4.5, "3 * x": 4.5}[expression]
    expect_close(out.data, expected, what=f"({expression}).data at x = 1.5")
    assert any(s is x for s in out.src), f"x should be one of the sources of {expression}"
    assert all(isinstance(s, Value) for s in out.src), \
        f"every source of {expression} should be a Value (wrap numbers with as_value)"
    out.local_backward(2.0)
    expect_close(x.grad, 2.0 if "+" in expression else 6.0,
                 what=f"x.grad after ({expression}).local_backward(2)")
