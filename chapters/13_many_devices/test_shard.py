"""Sharding a tensor: your shard(node, devices, axis) puts a value on several devices as a MULTI
node, either a whole copy on each (axis None: replicated) or cut along axis into one slice per
device, as even as it goes (the first devices one row longer), each device copying only its own
slice."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_equal
from tinyfw import Tensor
from tinyfw.multi import shard
from tinyfw.uop.ops import Ops, UOp

pytestmark = pytest.mark.task("13.shard")
TWO = ("CPU", "CPU:1")  # CPU:0 and CPU:1; CPU:0 is spelled CPU
THREE = ("CPU", "CPU:1", "CPU:2")


def parts(value: UOp) -> list[np.ndarray]:
    """Each part (a source of the MULTI) realized on its own device, as numpy."""
    return [Tensor(p).numpy() for p in value.src]


def copies(value: UOp) -> list[UOp]:
    """The COPY nodes of every part's graph."""
    return [n for n in value.toposort() if n.op is Ops.COPY]


def test_rows_split_over_two_devices() -> None:
    """A (5, 4) tensor on axis 0 over CPU:0 and CPU:1: rows 0-2 on the first, 3-4 on the
    second (5 = 3 + 2: the first device gets the extra row)."""
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    value = shard(Tensor(x).uop, TWO, 0)
    assert isinstance(value, UOp) and value.op is Ops.MULTI, \
        f"shard returned {value!r:.80}, not a MULTI node (multi(parts, axis))"
    expect_equal(value.arg, 0, what="the sharded axis (the MULTI's arg)")
    expect_equal([p.device for p in value.src], list(TWO), what="each part's device")
    expect_equal([p.shape for p in value.src], [(3, 4), (2, 4)], what="each part's shape")
    expect_equal(value.shape, (5, 4), what="the MULTI's shape (the whole value's)")
    got = parts(value)
    expect_equal(got[0], x[:3], what="part 0 (rows 0 to 2)")
    expect_equal(got[1], x[3:], what="part 1 (rows 3 and 4)")


def test_columns_split_over_three_devices() -> None:
    """A (2, 7) int tensor on axis 1 over 3 devices: 7 = 3 + 2 + 2 columns."""
    x = np.arange(14, dtype=np.int32).reshape(2, 7)
    value = shard(Tensor(x).uop, THREE, 1)
    expect_equal([p.shape for p in value.src], [(2, 3), (2, 2), (2, 2)],
                 what="each part's shape")
    got = parts(value)
    for i, (start, end) in enumerate([(0, 3), (3, 5), (5, 7)]):
        expect_equal(got[i], x[:, start:end], what=f"part {i} (columns {start} to {end - 1})")
    expect_equal(Tensor(value).numpy(), x, what="the parts gathered again")


def test_each_device_copies_only_its_slice() -> None:
    """A tensor on CPU:0 sharded over CPU:0 to CPU:2: the part staying on CPU:0 copies
    nothing; every other part copies its own slice, of that part's shape, to its device, and
    nothing copies the whole tensor."""
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    value = shard(Tensor(x).uop, THREE, 0)
    for i, part in enumerate(value.src):
        moved = [n for n in part.toposort() if n.op is Ops.COPY]
        expect_equal(len(moved), 0 if i == 0 else 1, what=f"COPY nodes in part {i}'s graph")
        for copy in moved:
            expect_equal(copy.shape, (2, 4), what=f"the shape part {i} copies")
            expect_equal(copy.device, THREE[i], what=f"where part {i}'s copy goes")


def test_replicated_is_a_whole_copy_on_each_device() -> None:
    x = np.array([[1.5, -2.0, 3.0]], dtype=np.float32)
    value = shard(Tensor(x).uop, TWO, None)
    expect_equal(value.arg, None, what="the sharded axis of a replicated value")
    expect_equal([p.device for p in value.src], list(TWO), what="each part's device")
    for i, got in enumerate(parts(value)):
        expect_equal(got, x, what=f"part {i} (the whole value)")


def test_a_value_already_on_a_device_of_the_list() -> None:
    """A tensor on CPU:1 sharded over (CPU:0, CPU:1): its rows go where they belong."""
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    value = shard(Tensor(x, device="CPU:1").uop, TWO, 0)
    expect_equal([p.device for p in value.src], list(TWO), what="each part's device")
    got = parts(value)
    expect_equal(got[0], x[:2], what="part 0")
    expect_equal(got[1], x[2:], what="part 1")
    assert len(copies(value)) <= 2, "more copies than parts"
