"""The backward pass: gradients of whole graphs, .grad accumulation, detach, y.gradient(x)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chapters.grading import expect_close
from tinyfw import Tensor, dtypes
from tinyfw.uop import gradient
from tinyfw.uop.ops import UOp

pytestmark = pytest.mark.task("02.backward")

RNG = np.random.default_rng(4)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def pair(array: np.ndarray) -> tuple[Tensor, torch.Tensor]:
    """The same values as a tinyfw tensor and a torch tensor, both requiring grad."""
    return Tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def test_chain_rule_with_fan_out() -> None:
    """x is used three times and d twice: every use adds its share to the gradient."""
    (x, tx), (w, tw) = pair(randn(2, 3)), pair(randn(2, 3))
    for a, b in [(x, w), (tx, tw)]:  # the same computation in tinyfw, then in torch
        d = a * b + a
        y = (d * d.sin() + a * 3.0).sum()
        y.backward()
    expect_close(x.grad, tx.grad.numpy(), rtol=1e-10, what="x.grad")
    expect_close(w.grad, tw.grad.numpy(), rtol=1e-10, what="w.grad")


def test_compute_gradient_returns_the_targets() -> None:
    """compute_gradient gives one gradient node per reached target, and nothing else."""
    a, b, c, far = (Tensor(randn(3)) for _ in range(4))
    root = (a * b + c).sum()
    seed = Tensor.full((), 2.0, dtype=dtypes.float64)
    grads = gradient.compute_gradient(root.uop, seed.uop, {a.uop, c.uop, far.uop})
    assert set(grads) == {a.uop, c.uop}, \
        "expected gradients for exactly the targets a and c (far is not used by root)"
    assert all(isinstance(g, UOp) for g in grads.values()), "gradients should be UOps"
    expect_close(Tensor(grads[a.uop]).numpy(), 2 * b.numpy(), what="d root / d a")
    expect_close(Tensor(grads[c.uop]).numpy(), np.full(3, 2.0), what="d root / d c")


def test_each_node_is_differentiated_once() -> None:
    """8 levels of x = x * sin(x) + x: 2**8 paths from the root to x, but each node's rule must
    run once, so the gradient graph grows by a few nodes per level."""
    (x, tx) = pair(randn(3) * 0.1)
    y, ty = x, tx
    for _ in range(8):
        y, ty = y * y.sin() + y, ty * ty.sin() + ty
    (dx,) = y.sum().gradient(x)
    size = len(dx.uop.toposort())
    assert size < 1000, f"the gradient graph has {size} nodes (the reference: under 100): is a " \
                        "node's rule applied once per path instead of once, after all of its " \
                        "gradient has been added up?"
    ty.sum().backward()
    expect_close(dx, tx.grad.numpy(), rtol=1e-9, what="gradient through 8 levels")


def test_grad_accumulates() -> None:
    """backward adds to .grad: twice gives twice; a second loss adds its gradient too."""
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert x.grad is None
    y = (x * x).sum()
    y.backward()
    expect_close(x.grad, [2.0, 4.0, 6.0], what="x.grad after one backward of sum(x*x)")
    y.backward()
    expect_close(x.grad, [4.0, 8.0, 12.0], what="x.grad after two")
    (x * 10.0).sum().backward()
    expect_close(x.grad, [14.0, 18.0, 22.0], what="x.grad after adding the gradient of sum(10x)")
    x.grad = None
    (x * x * x).sum().backward()
    expect_close(x.grad, [3.0, 12.0, 27.0], what="x.grad after a reset, for sum(x**3)")


def test_no_gradient_through_detach_and_conditions() -> None:
    """where's condition and a detached value pass no gradient; the branches route it."""
    (x, tx) = pair(np.array([-2.0, -0.5, 0.0, 0.5, 3.0]))
    y = (x > 0).where(x * x, x * 0.1) + x.detach() * x
    ty = torch.where(tx > 0, tx * tx, tx * 0.1) + tx.detach() * tx
    y.sum().backward()
    ty.sum().backward()
    expect_close(x.grad, tx.grad.numpy(), rtol=1e-12, what="x.grad")


def test_gradient_is_functional() -> None:
    """y.gradient(x, w) returns gradients as new tensors and leaves .grad alone."""
    (x, tx), (w, tw) = pair(randn(4, 3)), pair(randn(3))
    y, ty = (x * w).exp().sum(), (tx * tw).exp().sum()
    dx, dw = y.gradient(x, w)
    assert x.grad is None and w.grad is None, "gradient() must not touch .grad"
    ty.backward()
    expect_close(dx, tx.grad.numpy(), rtol=1e-10, what="dy/dx")
    expect_close(dw, tw.grad.numpy(), rtol=1e-10, what="dy/dw")


def test_backward_of_a_non_scalar_with_a_given_gradient() -> None:
    """backward(gradient=v) computes the vector-Jacobian product v . dy/dx."""
    (x, tx), v = pair(randn(2, 3)), randn(2, 3)
    (x * x.sin()).backward(Tensor(v))
    (tx * tx.sin()).backward(torch.tensor(v))
    expect_close(x.grad, tx.grad.numpy(), rtol=1e-12, what="x.grad")


def test_matches_finite_differences() -> None:
    """The gradient of a composite function agrees with central differences (float64)."""
    x0 = RNG.uniform(0.5, 1.5, (3, 2))

    def f(x: Tensor) -> Tensor:
        return ((x.exp() + 1).log() * x.sqrt() / (1 + x * x)).sum()

    x = Tensor(x0, requires_grad=True)
    f(x).backward()
    h, numeric = 1e-6, np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        up, down = x0.copy(), x0.copy()
        up[i] += h
        down[i] -= h
        numeric[i] = (f(Tensor(up)).item() - f(Tensor(down)).item()) / (2 * h)
    expect_close(x.grad, numeric, rtol=1e-6, atol=1e-8, what="x.grad vs finite differences")
