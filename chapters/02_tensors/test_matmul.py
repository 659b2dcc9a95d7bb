"""Matmul from broadcasting: torch.matmul's shapes and values, and its gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chapters.grading import expect_close
from chapters.learner import reference
from tinyfw import Tensor

pytestmark = pytest.mark.task("02.matmul")

RNG = np.random.default_rng(7)


def check(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    """tinyfw's a @ b equals torch's for random float32 operands of these shapes."""
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    got = Tensor(a).matmul(Tensor(b))
    expect_close(got, (torch.tensor(a) @ torch.tensor(b)).numpy(), rtol=1e-5, atol=1e-5,
                 what=f"{a_shape} @ {b_shape}", dtype=np.float32)


def test_matrix_times_matrix() -> None:
    """(n, k) @ (k, m) -> (n, m), including k = 1 and a 1x1 result."""
    for a_shape, b_shape in [((2, 3), (3, 4)), ((5, 1), (1, 3)), ((1, 7), (7, 1))]:
        check(a_shape, b_shape)


def test_vectors() -> None:
    """A 1-D operand is a row (first) or a column (second), and that axis is dropped."""
    for a_shape, b_shape in [((3,), (3, 4)), ((2, 3), (3,)), ((4,), (4,)), ((2, 3, 4), (4,))]:
        check(a_shape, b_shape)


def test_batches_broadcast() -> None:
    """Leading axes are batch axes, and they broadcast against each other."""
    for a_shape, b_shape in [((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((3,), (6, 3, 2)),
                             ((2, 1, 3, 4), (5, 4, 2))]:
        check(a_shape, b_shape)


def test_matmul_gradient_matches_torch() -> None:
    """Gradients of both operands, summed over the batch axes an operand was broadcast along
    (backpropagated by tinyfw's own code for the chapter's other tasks, so this grades matmul)."""
    for a_shape, b_shape in [((3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (3, 4, 2))]:
        a, b = RNG.standard_normal(a_shape), RNG.standard_normal(b_shape)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        out = ta @ tb
        w = RNG.standard_normal(tuple(out.shape))
        (out * torch.tensor(w)).sum().backward()
        x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
        product = x.matmul(y)
        with reference("02.toposort", "02.backward", "02.gradient_rules", "02.unbroadcast"):
            (product * Tensor(w)).sum().backward()
        what = f"gradient of a in {a_shape} @ {b_shape}"
        expect_close(x.grad, ta.grad.numpy(), rtol=1e-10, atol=1e-12, what=what)
        what = f"gradient of b in {a_shape} @ {b_shape}"
        expect_close(y.grad, tb.grad.numpy(), rtol=1e-10, atol=1e-12, what=what)
