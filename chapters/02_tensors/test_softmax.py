"""Softmax and its stable form: torch's values and gradients, even for huge inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chapters.grading import expect_close
from tinyfw import Tensor

pytestmark = pytest.mark.task("02.softmax")

RNG = np.random.default_rng(6)


def test_softmax_matches_torch() -> None:
    """softmax along the last, first and a middle axis of a 3-D tensor, and of a vector."""
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32) * 3
    for axis in [-1, 0, 1]:
        expect_close(Tensor(x).softmax(axis), torch.tensor(x).softmax(axis).numpy(),
                     what=f"softmax(axis={axis}) of a (2, 3, 4) tensor", dtype=np.float32)
    v = x.reshape(-1)
    expect_close(Tensor(v).softmax(), torch.tensor(v).softmax(0).numpy(),
                 what="softmax() of a vector", dtype=np.float32)


def test_softmax_of_large_values() -> None:
    """exp(1000) overflows float32, but softmax of [1000, 1001, 1002] is fine."""
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0], [90.0, 0.0, -90.0]],
                 dtype=np.float32)
    got = Tensor(x).softmax(-1).numpy()
    assert np.isfinite(got).all(), f"softmax of large values gave {got}: subtract the max first"
    expect_close(got, torch.tensor(x).softmax(-1).numpy(), what="softmax of large values",
                 dtype=np.float32)


def test_softmax_gradient_matches_torch() -> None:
    """The gradient through exp, sum and division is torch's, along a middle axis."""
    x, w = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 5, 3))
    tx = torch.tensor(x, requires_grad=True)
    (tx.softmax(1) * torch.tensor(w)).sum().backward()
    got = Tensor(x, requires_grad=True)
    (got.softmax(1) * Tensor(w)).sum().backward()
    expect_close(got.grad, tx.grad.numpy(), rtol=1e-10, atol=1e-12,
                 what="gradient of sum(w * softmax(x, axis=1))")


def test_softmax_gradient_of_large_values() -> None:
    """The gradient stays finite and right where the naive formula gives nan."""
    x = np.array([[500.0, 510.0, 490.0], [-800.0, -805.0, -790.0]], dtype=np.float32)
    w = np.array([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]], dtype=np.float32)
    tx = torch.tensor(x, requires_grad=True)
    (tx.softmax(-1) * torch.tensor(w)).sum().backward()
    got = Tensor(x, requires_grad=True)
    (got.softmax(-1) * Tensor(w)).sum().backward()
    assert got.grad is not None and np.isfinite(got.grad.numpy()).all(), \
        f"gradient of softmax of large values: {got.grad.numpy() if got.grad else None}"
    expect_close(got.grad, tx.grad.numpy(), rtol=1e-4, atol=1e-6,
                 what="gradient of softmax of large values", dtype=np.float32)
