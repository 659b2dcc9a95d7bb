"""Data-parallel gradients: your data_parallel_gradient(target, grads) turns the gradients the
backward pass found for each part of a tensor over many devices into the tensor's gradient. A
replicated parameter was used by every device on its own shard of the batch: its gradient is
the sum of its parts' gradients, all-reduced onto every device. A sharded tensor's parts keep
their own."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from tinyfw import Tensor
from tinyfw.multi import MultiUOp, data_parallel_gradient
from tinyfw.uop.ops import UOp

pytestmark = pytest.mark.task("13.gradients")
TWO = ("CPU", "CPU:1")  # CPU:0 and CPU:1; CPU:0 is spelled CPU
RNG = np.random.default_rng(5)


def on(x: np.ndarray, device: str) -> UOp:
    return Tensor(x, device=device).uop


def parts(value: MultiUOp) -> list[np.ndarray]:
    return [Tensor(p).numpy() for p in value.parts]


def test_a_replicated_parameter_gets_the_sum_on_every_device() -> None:
    w = RNG.standard_normal((3, 2)).astype(np.float32)
    g0, g1 = RNG.standard_normal((2, 3, 2)).astype(np.float32)
    target = MultiUOp([on(w, d) for d in TWO], None)
    grads = {target.parts[0]: on(g0, "CPU:0"), target.parts[1]: on(g1, "CPU:1")}
    out = data_parallel_gradient(target, grads)
    assert isinstance(out, MultiUOp), f"got {type(out).__name__}, not a MultiUOp"
    expect_equal(out.axis, None, what="the gradient's sharded axis (replicated)")
    expect_equal([p.device for p in out.parts], list(TWO), what="each part's device")
    for i, got in enumerate(parts(out)):
        expect_close(got, g0 + g1, what=f"the gradient on CPU:{i}")


def test_a_part_no_gradient_reached_counts_zero() -> None:
    w = np.ones(4, np.float32)
    g1 = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    target = MultiUOp([on(w, d) for d in TWO], None)
    out = data_parallel_gradient(target, {target.parts[1]: on(g1, "CPU:1")})
    assert out is not None, "a gradient reached part 1, but the result is None"
    for i, got in enumerate(parts(out)):
        expect_close(got, g1, what=f"the gradient on CPU:{i}")


def test_no_part_reached_is_no_gradient() -> None:
    target = MultiUOp([on(np.zeros(2, np.float32), d) for d in TWO], None)
    expect_equal(data_parallel_gradient(target, {}), None, what="the gradient of an unused tensor")


def test_a_sharded_tensor_keeps_each_part_s_gradient() -> None:
    """A batch sharded on axis 0: each device's gradient is for its own rows only."""
    x = RNG.standard_normal((5, 2)).astype(np.float32)
    target = MultiUOp([on(x[:3], "CPU:0"), on(x[3:], "CPU:1")], 0)
    g0, g1 = np.full((3, 2), 2.0, np.float32), np.full((2, 2), -1.0, np.float32)
    out = data_parallel_gradient(target, {target.parts[0]: on(g0, "CPU:0"),
                                          target.parts[1]: on(g1, "CPU:1")})
    assert out is not None, "the result is None"
    expect_equal(out.axis, 0, what="the gradient's sharded axis")
    got = parts(out)
    expect_equal(got[0], g0, what="the gradient of part 0")
    expect_equal(got[1], g1, what="the gradient of part 1")
