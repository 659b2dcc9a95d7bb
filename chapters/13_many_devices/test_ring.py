"""The ring all-reduce: your two phases in ring_all_reduce(op, parts). Each part is cut into n
chunks; reduce-scatter passes running sums of chunks to the right neighbour n - 1 times, then
all-gather passes the finished chunks around n - 1 more times: every device ends with the total,
and every copy moves one chunk, never a whole part."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from tinyfw import Tensor
from tinyfw.multi import ring_all_reduce
from tinyfw.uop.ops import Ops, UOp

pytestmark = pytest.mark.task("13.ring")
RNG = np.random.default_rng(31)


def devices(n: int) -> list[str]:
    """CPU:0 to CPU:n-1 (CPU:0 is spelled CPU)."""
    return ["CPU"] + [f"CPU:{i}" for i in range(1, n)]


def reduce_on_ring(op: Ops, arrays: list[np.ndarray]) -> list[UOp]:
    parts = [Tensor(a, device=d).uop for a, d in zip(arrays, devices(len(arrays)))]
    out = ring_all_reduce(op, parts)
    assert isinstance(out, list) and len(out) == len(arrays), \
        f"ring_all_reduce returned {out!r:.80}, not one result per device"
    return out


def copies(results: list[UOp]) -> list[UOp]:
    seen: set[UOp] = set()
    return [n for r in results for n in r.toposort(None, seen) if n.op is Ops.COPY]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_device_gets_the_sum(n: int) -> None:
    arrays = [RNG.standard_normal((2, 5)).astype(np.float32) for _ in range(n)]
    results = reduce_on_ring(Ops.ADD, arrays)
    want = np.sum(arrays, axis=0, dtype=np.float64)
    for d, r in enumerate(results):
        expect_equal(r.device, devices(n)[d], what=f"where result {d} lives")
        expect_close(Tensor(r).numpy(), want, rtol=1e-5, atol=1e-6, what=f"the sum on CPU:{d}")


def test_max_and_the_same_bits_everywhere() -> None:
    """MAX works too; and since each chunk's total is made once and then passed on, every
    device holds exactly the same bits (also for the sum, whose order of additions varies by
    chunk)."""
    arrays = [RNG.standard_normal(7).astype(np.float32) * 1e3 for _ in range(3)]
    maxima = [Tensor(r).numpy() for r in reduce_on_ring(Ops.MAX, arrays)]
    expect_equal(maxima[0], np.max(arrays, axis=0), what="the maximum on CPU:0")
    sums = [Tensor(r).numpy() for r in reduce_on_ring(Ops.ADD, arrays)]
    for d in (1, 2):
        expect_equal(sums[d], sums[0], what=f"the sum's bits on CPU:{d} against CPU:0")


@pytest.mark.parametrize("n", [3, 4])
def test_each_copy_moves_one_chunk(n: int) -> None:
    """12 elements over n devices: 2 n (n - 1) copies, each of one chunk (12 / n elements),
    n - 1 reduce-scatter steps and n - 1 all-gather steps of n copies each."""
    arrays = [np.full((3, 4), float(d + 1), np.float32) for d in range(n)]
    moved = copies(reduce_on_ring(Ops.ADD, arrays))
    expect_equal(len(moved), 2 * n * (n - 1), what="COPY nodes in the results' graphs")
    sizes = sorted({int(np.prod(c.shape)) for c in moved})
    expect_equal(sizes, [12 // n], what="elements moved by each copy (one chunk)")


def test_chunks_that_do_not_divide() -> None:
    """10 elements over 3 devices: chunks of 4, 3 and 3."""
    arrays = [RNG.standard_normal(10).astype(np.float32) for _ in range(3)]
    results = reduce_on_ring(Ops.ADD, arrays)
    for d, r in enumerate(results):
        expect_close(Tensor(r).numpy(), np.sum(arrays, axis=0), rtol=1e-5, atol=1e-6,
                     what=f"the sum on CPU:{d}")
