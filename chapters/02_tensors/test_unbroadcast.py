"""Undoing broadcasting: the gradient of an EXPAND sums over every axis that grew."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chapters.grading import expect_close
from tinyfw import Tensor
from tinyfw.uop import gradient
from tinyfw.uop.ops import Ops, UOp

pytestmark = pytest.mark.task("02.unbroadcast")

RNG = np.random.default_rng(3)


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> tuple[UOp, np.ndarray]:
    """tinyfw's unbroadcast of grad to shape, as a node and as its computed value."""
    node = gradient.unbroadcast(Tensor(grad).uop, shape)
    assert isinstance(node, UOp), f"unbroadcast should return a UOp, got {node!r}"
    return node, Tensor(node).numpy()


def test_sums_the_axes_that_grew() -> None:
    """Each size-1 axis that grew is summed, and kept as a size-1 axis."""
    for shape, grown in [((3, 1), (3, 4)), ((1, 4), (3, 4)), ((1, 1), (2, 5)),
                         ((2, 1, 4, 1), (2, 3, 4, 5)), ((1, 1, 3), (1, 4, 3))]:
        grad = RNG.standard_normal(grown)
        axes = tuple(i for i, (s, g) in enumerate(zip(shape, grown)) if s != g)
        _, out = unbroadcast(grad, shape)
        expect_close(out, grad.sum(axis=axes, keepdims=True), rtol=1e-12,
                     what=f"unbroadcast of a {grown} gradient to {shape}")


def test_leaves_other_axes_alone() -> None:
    """Nothing grew: the gradient comes back with the same values and no REDUCE is added."""
    for shape in [(2, 3), (1, 3), (4, 1, 1), (1,), ()]:
        grad = RNG.standard_normal(shape)
        node, out = unbroadcast(grad, shape)
        expect_close(out, grad, rtol=0, atol=0, what=f"unbroadcast of {shape} to itself")
        reduces = [n for n in node.toposort() if n.op is Ops.REDUCE]
        assert not reduces, f"unbroadcast of {shape} to itself should sum nothing"


def test_broadcast_add_gradient_matches_torch() -> None:
    """Broadcasting (2, 3) + (3,) + (2, 1) + (): each operand's gradient is summed back."""
    arrays = [RNG.standard_normal(s) for s in [(2, 3), (3,), (2, 1), ()]]
    xs = [Tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    upstream = RNG.standard_normal((2, 3))
    ((xs[0] + xs[1] + xs[2] + xs[3]) * Tensor(upstream)).sum().backward()
    ((ts[0] + ts[1] + ts[2] + ts[3]) * torch.tensor(upstream)).sum().backward()
    for i, (x, t) in enumerate(zip(xs, ts)):
        assert x.grad is not None, f"operand {i} of shape {x.shape} got no gradient"
        expect_close(x.grad, t.grad.numpy(), rtol=1e-12, what=f"gradient of operand {i}")
