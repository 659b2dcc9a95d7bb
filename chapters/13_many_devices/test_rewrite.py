"""The rewrite pass: your lowered(node) turns a graph of whole values over many devices (ops on
MULTI nodes, as the Tensor builds them) into graphs of one device each, sources first: every
node left to rewrite gets rewrite()'s result from its sources' results, remembered in _lowered.
The rules themselves (13.per_shard, 13.shard, 13.ring) are tinyfw's here, so these tests grade
the pass alone."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw import Tensor
from tinyfw.multi import _lowered, lowered, multi
from tinyfw.uop.ops import Ops, UOp

pytestmark = pytest.mark.task("13.rewrite")
TWO = ("CPU", "CPU:1")  # CPU:0 and CPU:1; CPU:0 is spelled CPU
RNG = np.random.default_rng(17)


@pytest.fixture(autouse=True)
def tinyfw_rules() -> Iterator[None]:
    """tinyfw's own rules and sharding, whatever the state of yours."""
    with reference("13.shard", "13.per_shard", "13.ring"):
        yield


def sharded(x: np.ndarray, cut: int) -> UOp:
    """x's rows cut at `cut`: rows before it on CPU:0, the rest on CPU:1 (a MULTI)."""
    return multi([Tensor(x[:cut], device="CPU").uop, Tensor(x[cut:], device="CPU:1").uop], 0)


def one_device_graph(node: UOp, device: str) -> None:
    """Asserts that node's graph is one of device's (what a copy brings from another device
    aside): no MULTI and no tuple of devices left anywhere."""
    for n in node.toposort():
        assert n.op is not Ops.MULTI and not isinstance(n.device, tuple), \
            f"a {n.op.name} node over many devices left in the graph of {device}'s part"
    for n in node.toposort(stop=lambda m: m.op is Ops.COPY):
        expect_equal(n.device, device, what=f"the device of a {n.op.name} node of the part")


def test_ops_on_a_multi_become_work_per_device() -> None:
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    value = sharded(x, 3)
    node = (value * 2.0 + 1.0).sum((1,))
    out = lowered(node)
    assert isinstance(out, UOp) and out.op is Ops.MULTI, \
        f"lowered returned {out!r:.80}, not a MULTI node"
    expect_equal(out.arg, 0, what="the sharded axis of the result")
    expect_equal([p.device for p in out.src], list(TWO), what="each part's device")
    for part, device in zip(out.src, TWO):
        one_device_graph(part, device)
    got = np.concatenate([Tensor(p).numpy() for p in out.src])
    expect_close(got, (x * 2 + 1).sum(1, keepdims=True), what="(x * 2 + 1).sum(1)")


def test_every_node_rewritten_is_remembered() -> None:
    """Each node over many devices of the graph (the constants and the sums below the root
    too) has its result in _lowered, and asking again gives the very same result."""
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    value = sharded(x, 2)
    doubled = value * 2.0
    node = (doubled + doubled).sum((0,))
    out = lowered(node)
    for n in node.toposort():
        if isinstance(n.device, tuple) and n.op not in (Ops.MULTI, Ops.DEVICE):
            assert n in _lowered, f"no result remembered in _lowered for the {n.op.name} node"
    assert lowered(node) is out, "lowered(node) a second time made a new result"
    assert lowered(doubled) is _lowered[doubled], "lowered(x * 2) is not its remembered result"
    expect_equal(out.arg, None, what="the axis after summing the sharded one (replicated)")
    for i, part in enumerate(out.src):
        expect_close(Tensor(part).numpy(), 4 * x.sum(0, keepdims=True),
                     what=f"(2x + 2x).sum(0) on device {i}")


def test_a_node_on_one_device_above_a_gather() -> None:
    """x * 2 gathered on CPU:0, plus 1: a node of one device, made anew of the gather."""
    x = RNG.standard_normal((5, 2)).astype(np.float32)
    node = (sharded(x, 3) * 2.0).copy_to("CPU") + 1.0
    out = lowered(node)
    assert isinstance(out, UOp) and out.op is not Ops.MULTI, \
        f"lowered returned {out!r:.80} for a node on one device"
    for n in out.toposort():
        assert not isinstance(n.device, tuple), f"a {n.op.name} node over many devices is left"
    expect_close(Tensor(out).numpy(), x * 2 + 1, what="(x * 2) on CPU:0, plus 1")


def test_a_replicated_weight_gets_the_all_reduced_gradient() -> None:
    """Data parallel: the batch sharded, the weight replicated. The backward pass runs on the
    whole values; the weight's gradient sums over the batch, which the rewrite turns into each
    device's partial sum and an all-reduce: the total, on every device."""
    xs = RNG.standard_normal((6, 3)).astype(np.float32)
    ws = RNG.standard_normal((3, 2)).astype(np.float32)
    x = Tensor(xs).shard(TWO, axis=0)
    w = Tensor(ws, requires_grad=True)
    w.shard_(TWO)
    (x @ w).square().sum().backward()
    assert w.grad is not None, "no gradient reached the weight"
    grad = lowered(w.grad.uop)
    assert grad.op is Ops.MULTI, f"the gradient lowered to {grad!r:.80}, not a MULTI node"
    expect_equal(grad.arg, None, what="the gradient's axis (replicated: every device's total)")
    assert any(n.op is Ops.COPY for n in grad.toposort()), "no copy: where is the all-reduce?"
    want = 2 * xs.T @ (xs @ ws)
    for i, part in enumerate(grad.src):
        expect_close(Tensor(part).numpy(), want, rtol=1e-5, atol=1e-5,
                     what=f"the weight's gradient on device {i}")
