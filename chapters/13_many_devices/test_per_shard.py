"""Ops on shards: the rewrite's rules. alu_multi(node, sources) runs an elementwise node part by
part (a replicated operand cut on its own device to the slice each part needs), and
reduce_multi(node, source) reduces each part's rows, then all-reduces when the sharded axis
itself is reduced, so every device holds the total. A test builds the node as the Tensor would
(over MULTI nodes, of the whole value's shape) and calls the rule with its sources' MULTIs."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from tinyfw import Tensor
from tinyfw.multi import alu_multi, multi, reduce_multi
from tinyfw.uop.ops import Ops, UOp

pytestmark = pytest.mark.task("13.per_shard")
TWO = ("CPU", "CPU:1")  # CPU:0 and CPU:1; CPU:0 is spelled CPU
RNG = np.random.default_rng(13)


def sharded(x: np.ndarray, axis: int, cuts: list[int], devices: tuple[str, ...] = TWO) -> UOp:
    """x cut along axis at cuts, one part per device (a MULTI made here, not by shard)."""
    pieces = np.split(x, cuts, axis=axis)
    return multi([Tensor(p, device=d).uop for p, d in zip(pieces, devices)], axis)


def replicated(x: np.ndarray, devices: tuple[str, ...] = TWO) -> UOp:
    return multi([Tensor(x, device=d).uop for d in devices], None)


def checked(out: object) -> UOp:
    """The rule's result, which must be a MULTI node."""
    assert isinstance(out, UOp) and out.op is Ops.MULTI, \
        f"the rule returned {out!r:.80}, not a MULTI node (multi(parts, axis))"
    return out


def parts(value: UOp) -> list[np.ndarray]:
    return [Tensor(p).numpy() for p in value.src]


def copies(value: UOp) -> int:
    return sum(1 for n in value.toposort() if n.op is Ops.COPY)


def test_two_sharded_operands_add_part_by_part() -> None:
    a, b = RNG.standard_normal((5, 3)).astype(np.float32), RNG.standard_normal((5, 3)) \
        .astype(np.float32)
    x, y = sharded(a, 0, [3]), sharded(b, 0, [3])
    out = checked(alu_multi(x + y, [x, y]))
    expect_equal(out.arg, 0, what="the sharded axis of the sum")
    expect_equal([p.device for p in out.src], list(TWO), what="each part's device")
    got = parts(out)
    expect_close(got[0], (a + b)[:3], what="part 0 of a + b")
    expect_close(got[1], (a + b)[3:], what="part 1 of a + b")
    expect_equal(copies(out), 0, what="COPY nodes (each device adds what it has)")


def test_a_replicated_operand_is_cut_on_each_device() -> None:
    """x sharded on axis 1 times w replicated: each device takes its columns of w, no copy."""
    a, b = RNG.standard_normal((2, 6)).astype(np.float32), RNG.standard_normal((2, 6)) \
        .astype(np.float32)
    x, w = sharded(a, 1, [4]), replicated(b)
    out = checked(alu_multi(x * w, [x, w]))
    expect_equal([p.shape for p in out.src], [(2, 4), (2, 2)], what="each part's shape")
    got = parts(out)
    expect_close(got[0], (a * b)[:, :4], what="part 0 of x * w")
    expect_close(got[1], (a * b)[:, 4:], what="part 1 of x * w")
    expect_equal(copies(out), 0, what="COPY nodes (w is already on every device)")


def test_comparison_and_where_keep_their_dtypes() -> None:
    x = np.array([[1.0, -2.0], [3.0, -4.0], [-5.0, 6.0]], dtype=np.float32)
    value, zero = sharded(x, 0, [2]), replicated(np.zeros((3, 2), np.float32))
    positive = checked(alu_multi(zero < value, [zero, value]))
    expect_equal(positive.dtype.name, "bool", what="dtype of 0 < x")
    relu = checked(alu_multi(positive.where(value, zero), [positive, value, zero]))
    expect_equal(relu.dtype.name, "float32", what="dtype of where(0 < x, x, 0)")
    expect_equal(np.concatenate(parts(relu)), np.maximum(x, 0), what="where(0 < x, x, 0)")


def test_reduce_off_the_sharded_axis_stays_sharded() -> None:
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    value = sharded(x, 0, [3])
    out = checked(reduce_multi(value.reduce(Ops.ADD, (1,)), value))
    expect_equal(out.arg, 0, what="the sharded axis after summing axis 1")
    expect_equal([p.shape for p in out.src], [(3, 1), (2, 1)], what="each part's shape")
    expect_close(np.concatenate(parts(out)), x.sum(1, keepdims=True), what="x.sum(1)")
    expect_equal(copies(out), 0, what="COPY nodes (no device needs another's rows)")


@pytest.mark.parametrize("op, numpy_op", [(Ops.ADD, np.sum), (Ops.MAX, np.max)],
                         ids=["sum", "max"])
def test_reduce_over_the_sharded_axis_gives_every_device_the_total(op: Ops,
                                                                   numpy_op: object) -> None:
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    value = sharded(x, 0, [3])
    out = checked(reduce_multi(value.reduce(op, (0,)), value))
    expect_equal(out.arg, None, what="the sharded axis after reducing it (replicated)")
    expect_equal([p.device for p in out.src], list(TWO), what="each part's device")
    want = numpy_op(x, axis=0, keepdims=True)  # type: ignore[operator]
    for i, got in enumerate(parts(out)):
        expect_close(got, want, what=f"the total on device {i}")
    assert copies(out) >= 2, "each device needs the other's partial result: a copy each way"
