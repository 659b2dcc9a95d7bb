"""Mean as a composition: a sum divided by how many were summed, gradient included."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chapters.grading import expect_close
from tinyfw import Tensor

pytestmark = pytest.mark.task("02.mean")

RNG = np.random.default_rng(5)
AXES = [(None, False), (0, False), (-1, False), ((0, 2), False), (1, True), ((0, 1, 2), True)]


def test_mean_matches_torch() -> None:
    """mean over None, one, negative and several axes, with and without keepdim."""
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    for axis, keepdim in AXES:
        got = Tensor(x).mean(axis, keepdim=keepdim)
        dims = tuple(range(3)) if axis is None else axis
        want = torch.tensor(x).mean(dims, keepdim=keepdim)
        expect_close(got, want.numpy(), what=f"mean(axis={axis}, keepdim={keepdim})",
                     dtype=np.float32)


def test_mean_of_integers_is_a_float() -> None:
    """The mean of ints and bools is a float32 (a mean is rarely a whole number)."""
    expect_close(Tensor([1, 2, 4]).mean(), np.float32(7 / 3), what="mean of [1, 2, 4]",
                 dtype=np.float32)
    expect_close(Tensor([[True, False], [True, True]]).mean(0), np.float32([1.0, 0.5]),
                 what="mean over axis 0 of bools", dtype=np.float32)


def test_mean_gradient_matches_torch() -> None:
    """The gradient of a weighted sum of means spreads evenly over what each mean averaged."""
    x, w = RNG.standard_normal((3, 4, 2)), RNG.standard_normal((3, 2))
    tx = torch.tensor(x, requires_grad=True)
    (torch.tensor(w) * tx.mean(1)).sum().backward()
    got = Tensor(x, requires_grad=True)
    (Tensor(w) * got.mean(1)).sum().backward()
    expect_close(got.grad, tx.grad.numpy(), rtol=1e-12, what="gradient of mean over axis 1")
