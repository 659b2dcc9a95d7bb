"""Small 2-D classification datasets, generated with numpy and the same for the same seed."""

from __future__ import annotations

import numpy as np


def _shuffled(
    rng: np.random.Generator, x: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """x and y permuted by the same random order, so the classes are interleaved."""
    order = rng.permutation(len(y))
    return x[order], y[order]


def make_moons(
    n: int = 100, noise: float = 0.1, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """n points on two interleaved half circles: x of shape (n, 2) float64, y in {0, 1} int64."""
    rng = np.random.default_rng(seed)
    n_upper = n // 2
    t_upper = np.linspace(0.0, np.pi, n_upper)
    t_lower = np.linspace(0.0, np.pi, n - n_upper)
    upper = np.stack([np.cos(t_upper), np.sin(t_upper)], axis=1)
    lower = np.stack([1.0 - np.cos(t_lower), 0.5 - np.sin(t_lower)], axis=1)
    x = np.concatenate([upper, lower]) + rng.normal(0.0, noise, size=(n, 2))
    y = np.concatenate([np.zeros(n_upper, np.int64), np.ones(n - n_upper, np.int64)])
    return _shuffled(rng, x, y)


def make_circles(
    n: int = 100, noise: float = 0.05, factor: float = 0.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """n points on two circles, the inner radius `factor` times the outer: y 1 on the inner."""
    rng = np.random.default_rng(seed)
    n_outer = n // 2
    t_outer = np.linspace(0.0, 2 * np.pi, n_outer, endpoint=False)
    t_inner = np.linspace(0.0, 2 * np.pi, n - n_outer, endpoint=False)
    outer = np.stack([np.cos(t_outer), np.sin(t_outer)], axis=1)
    inner = factor * np.stack([np.cos(t_inner), np.sin(t_inner)], axis=1)
    x = np.concatenate([outer, inner]) + rng.normal(0.0, noise, size=(n, 2))
    y = np.concatenate([np.zeros(n_outer, np.int64), np.ones(n - n_outer, np.int64)])
    return _shuffled(rng, x, y)


def make_spiral(
    n: int = 100, classes: int = 2, noise: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """n points on `classes` interleaved spiral arms; y is the arm index, 0 .. classes - 1."""
    rng = np.random.default_rng(seed)
    counts = [n // classes + (1 if k < n % classes else 0) for k in range(classes)]
    xs, ys = [], []
    for k, m in enumerate(counts):
        r = np.linspace(0.05, 1.0, m)
        t = np.linspace(0.0, 4.0, m) + 2 * np.pi * k / classes + rng.normal(0.0, noise, m)
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(m, k, np.int64))
    return _shuffled(rng, np.concatenate(xs), np.concatenate(ys))
