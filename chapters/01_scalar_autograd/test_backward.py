"""Task 3: backward() gives every node its gradient; leaves accumulate across calls."""

from __future__ import annotations

import pytest

from chapters.grading import expect_close, without_recursion
from tinyfw.scalar import Value

pytestmark = pytest.mark.task("01.backward")


def test_root_is_seeded_with_one() -> None:
    """After y.backward(), y.grad is 1 and y = 3x gives x.grad = 3."""
    x = Value(2.0)
    y = x * 3.0
    y.backward()
    expect_close(y.grad, 1.0, what="y.grad after y.backward()")
    expect_close(x.grad, 3.0, what="x.grad for y = 3x")


def test_chain_rule_by_hand() -> None:
    """f = a*b + a at a = 2, b = -3: df/da = b + 1 = -2, df/db = a = 2."""
    a, b = Value(2.0), Value(-3.0)
    c = a * b
    f = c + a
    f.backward()
    expect_close(f.data, -4.0, what="f.data")
    expect_close(c.grad, 1.0, what="c.grad (c = a*b, f = c + a)")
    expect_close(a.grad, -2.0, what="a.grad (a is used twice: the two shares add up)")
    expect_close(b.grad, 2.0, what="b.grad")


def test_same_node_used_twice() -> None:
    """x * x has gradient 2x and x + x has gradient 2."""
    x = Value(-1.5)
    (x * x).backward()
    expect_close(x.grad, -3.0, what="x.grad for x * x at x = -1.5")
    y = Value(-1.5)
    (y + y).backward()
    expect_close(y.grad, 2.0, what="x.grad for x + x")


def test_against_torch() -> None:
    """A graph of + and * with fan-out and numbers on both sides matches PyTorch's gradients."""
    import torch

    start = [0.7, -1.3, 2.1]
    a, b, c = (Value(v) for v in start)
    ta, tb, tc = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in start)
    outs = []
    for p, q, r in [(a, b, c), (ta, tb, tc)]:
        d = p * q + r
        e = d * (p + 2.0) + q * q * r
        f = 3.0 * e * d + 1.5 + e * p
        outs.append(f)
    outs[0].backward()
    outs[1].backward()
    expect_close(outs[0].data, outs[1].item(), rtol=1e-12, what="f.data")
    for name, mine, theirs in [("a", a, ta), ("b", b, tb), ("c", c, tc)]:
        expect_close(mine.grad, theirs.grad.item(), rtol=1e-10, what=f"{name}.grad")


def test_unrelated_values_are_untouched() -> None:
    """backward() changes only the grads of nodes the root depends on, and no node's data."""
    x, other = Value(2.0), Value(5.0)
    other.grad = 0.25
    y = x * x + 1.0
    y.backward()
    expect_close(other.grad, 0.25, what="grad of a Value that y does not use")
    expect_close([x.data, y.data], [2.0, 5.0], what="[x.data, y.data] after backward()")


def test_leaves_accumulate_across_calls() -> None:
    """Two backward() calls leave twice the gradient in each leaf, also behind interior nodes."""
    x, y = Value(3.0), Value(-2.0)
    c = x * y
    f = c + x
    f.backward()
    f.backward()
    expect_close(f.grad, 1.0, what="f.grad (the root) after two backward() calls: each call "
                                   "resets interior grads to 0, then adds 1 to the root")
    expect_close(c.grad, 1.0, what="c.grad after the second call (an interior node holds this "
                                   "call's gradient only)")
    expect_close(x.grad, 2 * (-2.0 + 1.0), what="x.grad after two backward() calls, f = x*y + x")
    expect_close(y.grad, 2 * 3.0, what="y.grad after two backward() calls, f = x*y + x")


def test_two_losses_add_up() -> None:
    """backward() on two different roots adds both gradients into the shared leaf."""
    x, w = Value(1.5), Value(4.0)
    first = x * w
    second = x * x + w
    first.backward()
    second.backward()
    expect_close(x.grad, 4.0 + 2 * 1.5, what="x.grad after first.backward(); second.backward()")
    expect_close(w.grad, 1.5 + 1.0, what="w.grad after first.backward(); second.backward()")


def test_a_leaf_as_root() -> None:
    """x.backward() on a leaf adds dx/dx = 1 to x.grad, each time."""
    x = Value(7.0)
    x.backward()
    expect_close(x.grad, 1.0, what="x.grad after x.backward() on a leaf")
    x.backward()
    expect_close(x.grad, 2.0, what="x.grad after calling x.backward() twice on a leaf")


def test_resetting_grad_starts_over() -> None:
    """Setting a leaf's grad back to 0 between calls gives the plain gradient again."""
    x = Value(0.5)
    y = x * x * x
    y.backward()
    x.grad = 0.0
    y.backward()
    expect_close(x.grad, 3 * 0.5**2, what="x.grad for x*x*x after x.grad = 0 and a new backward()"
                                          " (interior grads must restart at 0 in every call)")


def test_a_chain_of_100000_multiplications() -> None:
    """x * 1.00001, 100,000 times: d/dx = 1.00001 ** 100000 (close to e), with no recursion."""
    x = Value(1.0)
    y = x
    for _ in range(100_000):
        y = y * 1.00001
    with without_recursion("y.backward() (or the toposort() it calls) on a chain of 100001 "
                           "nodes"):
        y.backward()
    expect_close(x.grad, 1.00001**100_000, rtol=1e-9, what="x.grad at the end of the chain")
