"""Rotary position embeddings: your rotate(x, cos, sin) turns each pair of channels (2i,
2i + 1) by the angle given for its position and pair, so that a query and a key meet with a
dot product that depends on how far apart they are, not on where they are."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_close
from tinyfw import Tensor
from tinyfw.models.llama import rotate

pytestmark = pytest.mark.task("12.rope")
RNG = np.random.default_rng(7)


def angles(positions: np.ndarray, dim: int, base: float = 10000.0) -> np.ndarray:
    """(T, dim / 2): position * base ** (-2i / dim), as a Llama model's."""
    inv = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    return positions[:, None].astype(np.float64) * inv


def reference(x: np.ndarray, theta: np.ndarray) -> np.ndarray:
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x, dtype=np.float64)
    out[..., 0::2] = a * np.cos(theta) - b * np.sin(theta)
    out[..., 1::2] = a * np.sin(theta) + b * np.cos(theta)
    return out


def run(x: np.ndarray, theta: np.ndarray) -> np.ndarray:
    cos, sin = Tensor(np.cos(theta).astype(np.float32)), Tensor(np.sin(theta).astype(np.float32))
    return rotate(Tensor(x), cos, sin).numpy()


def test_each_pair_of_neighbouring_channels_turns_by_its_angle() -> None:
    """x (1, 2 heads, 3 positions, 6 channels): channels 0-1, 2-3, 4-5 rotated."""
    x = RNG.standard_normal((1, 2, 3, 6)).astype(np.float32)
    theta = angles(np.arange(3), 6)
    expect_close(run(x, theta), reference(x, theta), rtol=1e-5, atol=1e-6,
                 what="rotate(x, cos, sin)")


def test_position_zero_is_left_as_it_is_and_lengths_are_kept() -> None:
    x = RNG.standard_normal((1, 1, 4, 8)).astype(np.float32)
    theta = angles(np.arange(4), 8)
    got = run(x, theta)
    expect_close(got[:, :, 0], x[:, :, 0], rtol=1e-6, atol=1e-7,
                 what="position 0 (angle 0: nothing turns)")
    pair_lengths = np.hypot(got[..., 0::2], got[..., 1::2])
    expect_close(pair_lengths, np.hypot(x[..., 0::2], x[..., 1::2]), rtol=1e-5, atol=1e-6,
                 what="the length of each pair of channels (a rotation keeps it)")


def test_a_query_and_a_key_meet_by_their_distance() -> None:
    """q at position m and k at position n: q . k after rotation is the same for (m, n) =
    (5, 2) and (9, 6), distance 3."""
    q, k = RNG.standard_normal((2, 8)).astype(np.float32)
    x = np.stack([q, k])[None, None]  # (1, 1, 2, 8): q then k
    dots = []
    for m, n in ((5, 2), (9, 6), (13, 10)):
        turned = run(x, angles(np.array([m, n]), 8))[0, 0]
        dots.append(float(turned[0] @ turned[1]))
    expect_close(np.array(dots), np.full(3, dots[0]), rtol=1e-4, atol=1e-5,
                 what="q . k for positions (5, 2), (9, 6), (13, 10)")
