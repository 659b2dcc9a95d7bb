"""A long reduce of few outputs, split in two kernels so that the cores share it (chapter 11).

THREAD shares a kernel's output loops out to the cores; a reduce with few outputs and a long
loop over its inputs (a convolution's bias or weight gradient: 8 sums of 128 images' 26 x 26
pixels each) has no output loop worth sharing, so one core ran it alone. Here such a reduce is
computed in two kernels instead: the first reduces everything but `parts` slices of its first
reduced axis (the images), storing `parts` partial results per output, an output loop the cores
share; the second reduces the partials. The graph itself is not changed: the scheduler builds
the partials' node (`Split.partials`) as a kernel of its own and the reduce's kernel from it.

This is not the frontend's split of a long float Tensor.sum into chunks of 256
(mixin/reduce.py's _reduce_in_chunks), which is for rounding, on every device, and which a
gradient's sums, maximums and integer sums do not go through; a sum it made is no longer long.

Only on a device whose kernels loop over cores (the CPU's C, with two cores or more): a GPU
shares a reduce of few outputs among a work-group's threads instead (heuristic.GROUP). A float
sum in two levels rounds differently from one in a single loop (a little less: each part is a
shorter sum), as torch's does from one thread count to another.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

from tinyfw.codegen.heuristic import THREAD_WORK
from tinyfw.device import Device
from tinyfw.uop.ops import Ops, UOp

SPLIT_LENGTH = 1 << 12   # values per output from which a reduce is split (and THREAD_WORK
# values in all: the partials' kernel is then shared out, heuristic.thread_the_outer_axis)
SPLIT_OUTPUTS = 1 << 8   # the most outputs a split reduce has
MAX_PARTS = 256          # partial results per output, at most
MIN_PART = 64            # values each partial result reduces, at least


@dataclass(frozen=True)
class Split:
    """How a reduce is computed in two kernels: `partials`, the first kernel's node (the
    reduce's source with its axis `axis` cut into (parts, rest), everything reduced but the
    parts), and the second reduces `partials` over `axis`."""
    partials: UOp
    axis: int


# each partials node made -> the reduce it splits (the schedule cache binds a stored schedule
# to a new graph through it: schedule_cache.py)
_split_of: weakref.WeakKeyDictionary[UOp, UOp] = weakref.WeakKeyDictionary()


def split_of(reduce: UOp) -> Split | None:
    """The split of a REDUCE node, or None where it is computed in one kernel."""
    op, axes = reduce.arg
    source = reduce.src[0]
    if not isinstance(reduce.device, str) or op not in (Ops.ADD, Ops.MAX) or \
            reduce.numel == 0 or reduce.numel > SPLIT_OUTPUTS or \
            source.numel // reduce.numel < SPLIT_LENGTH or source.numel < THREAD_WORK:
        return None
    device = Device[reduce.device]
    if not device.renderer.core_threads or device.cores < 2:
        return None
    axis = next(a for a in axes if source.shape[a] > 1)
    size, length = source.shape[axis], source.numel // reduce.numel
    parts = max((d for d in range(device.cores, min(size, MAX_PARTS) + 1)
                 if size % d == 0 and length // d >= MIN_PART), default=None)
    if parts is None:
        return None
    shape = source.shape[:axis] + (parts, size // parts) + source.shape[axis + 1:]
    reduced = tuple(a + 1 if a > axis else a for a in axes if a != axis) + (axis + 1,)
    partials = source.reshape(shape).reduce(op, reduced)
    _split_of[partials] = reduce
    return Split(partials, axis)


def splits_below(order: list[UOp]) -> dict[UOp, Split]:
    """The split of each REDUCE in order (a graph's nodes) that is split."""
    return {node: split for node in order if node.op is Ops.REDUCE
            and (split := split_of(node)) is not None}


def split_reduce_of(partials: UOp) -> UOp | None:
    """The reduce a partials node was made to split, if it was (and the reduce is alive)."""
    return _split_of.get(partials)
