"""A long reduce of few outputs is computed in two kernels on a CPU of two cores or more
(tinyfw/engine/split_reduce.py): the partials, shared out to the cores, then their reduce.
The answers stay numpy's (torch's for a gradient), with NaN and integers too; a graph of the
same structure binds the cached schedule's partials to its own nodes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tinyfw import Tensor
from tinyfw.device import Device
from tinyfw.engine import schedule_cache
from tinyfw.engine.split_reduce import split_of

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def two_cores() -> None:
    if Device["CPU"].cores < 2:
        pytest.skip("not graded here: one core (the split is for THREAD, which needs two)")


def conv_activations() -> np.ndarray:
    """A batch of 128 images of 8 channels, 26 x 26: conv1's output in examples/mnist.py."""
    return RNG.standard_normal((128, 8, 26, 26)).astype(np.float32)


def test_a_bias_gradient_is_two_kernels() -> None:
    """The gradient of a bias added to 128 images of 8 channels of 26 x 26: 8 sums of 86528
    values each, computed as 128 x 8 partial sums of 676 (one image's pixels) shared out to
    the cores, then 8 sums of 128. (A float Tensor.sum that long is split in chunks of 256
    already, for its rounding: mixin/reduce.py; a gradient's sum is not.)"""
    values = conv_activations()
    bias = Tensor(np.zeros((1, 8, 1, 1), np.float32), requires_grad=True)
    (Tensor(values, device="CPU") * (bias + 1)).sum().backward()
    assert bias.grad is not None
    items = bias.grad.schedule()
    assert [item.name for item in items][-2:] == ["r_128_1_8_26_26", "r_128_1_8_1_1"]
    assert items[-2].output.shape == (128, 1, 8, 1, 1)
    np.testing.assert_allclose(bias.grad.numpy().reshape(8),
                               values.astype(np.float64).sum((0, 2, 3)), rtol=1e-5)


def test_maximum_integers_and_nan() -> None:
    """A max of partial maxima is the max, NaN where any value is NaN; an integer sum is
    exact; a max of few values, of many outputs or of a small tensor is one kernel."""
    values = conv_activations()
    values[77, 3, 5, 9] = np.nan
    x = Tensor(values, device="CPU")
    assert len(x.max((0, 2, 3)).schedule()) == 2
    got = x.max((0, 2, 3)).numpy()
    assert np.isnan(got[3]) and np.array_equal(np.delete(got, 3),
                                               np.delete(np.nanmax(values, (0, 2, 3)), 3))
    ints = RNG.integers(-2**20, 2**20, (128, 8, 26, 26)).astype(np.int32)
    assert np.array_equal(Tensor(ints, device="CPU").sum((0, 2, 3)).numpy(),
                          ints.astype(np.int64).sum((0, 2, 3)))
    assert len(Tensor(values[:, :, :8, :8], device="CPU").max((0, 2, 3)).schedule()) == 1
    assert len(x.max((2, 3)).schedule()) == 1  # 1024 outputs of 676: THREAD shares them


def test_the_split_is_only_where_kernels_loop_over_cores() -> None:
    """On NUMPY (no core loops) the same max is one kernel."""
    x = Tensor(conv_activations(), device="NUMPY")
    assert split_of(x.max((0, 2, 3)).uop.src[0]) is None
    assert len(x.max((0, 2, 3)).schedule()) == 1


def test_a_cached_schedule_binds_its_partials_to_the_new_graph() -> None:
    """The same structure over new buffers: the schedule comes from the cache, its partials
    the new graph's, and the sums the new values'."""
    first, second = conv_activations(), conv_activations()
    (Tensor(first, device="CPU").max((0, 2, 3)) * 2).numpy()
    hits = schedule_cache.hits
    got = (Tensor(second, device="CPU").max((0, 2, 3)) * 2).numpy()
    assert schedule_cache.hits > hits
    np.testing.assert_array_equal(got, second.max((0, 2, 3)) * 2)


def test_a_convolution_bias_and_weight_gradient_match_torch() -> None:
    """conv1 of examples/mnist.py's net on 128 images: its bias and weight gradients (8 and
    72 sums over the batch's pixels, each split) as torch's."""
    images = RNG.standard_normal((128, 1, 28, 28)).astype(np.float32)
    weight = RNG.standard_normal((8, 1, 3, 3)).astype(np.float32) * 0.3
    bias = RNG.standard_normal(8).astype(np.float32)
    w, b = Tensor(weight, requires_grad=True), Tensor(bias, requires_grad=True)
    (Tensor(images).conv2d(w, b).relu() ** 2).sum().backward()
    tw, tb = torch.tensor(weight, requires_grad=True), torch.tensor(bias, requires_grad=True)
    (torch.nn.functional.conv2d(torch.tensor(images), tw, tb).relu() ** 2).sum().backward()
    assert w.grad is not None and b.grad is not None
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-4)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4)
