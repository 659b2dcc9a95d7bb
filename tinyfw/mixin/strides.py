"""torch's strides of a view, so that tinyfw answers as torch does where a view's layout
decides the answer: `reshape` of a view is a view only where torch's is (else a copy),
`view` refuses where torch's does, `contiguous()` of a contiguous tensor is the tensor itself,
and `stride()` and `is_contiguous()` say what torch's say.

tinyfw's tensors are lazy and own no memory layout; a view remembers its base and the view ops
from it (MovementOps._view_result). Reading the base as row-major memory, those ops give the
strides torch's view of a fresh tensor would have. Pure functions of shapes, no tensors."""
from __future__ import annotations

from typing import Any

import numpy as np

from tinyfw.helpers import prod


def torch_contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides as torch gives a fresh tensor (a size-1 axis keeps the running
    product, unlike the shape tracker's 0)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """torch's is_contiguous: every axis of more than one element steps as row-major memory
    would (an empty tensor is contiguous)."""
    if prod(shape) == 0:
        return True
    step = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != step:
                return False
            step *= size
    return True


def overlaps(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether two elements of a view of shape and strides are one element of its base. Most
    views are told at once: sorted by step, each axis steps past all that the axes before it
    span. The others (a diagonal of windows, ...) are counted, up to a million elements;
    beyond, they count as overlapping (a write is refused)."""
    numel = prod(shape)
    if numel <= 1:
        return False
    span = 0
    for size, stride in sorted(((n, abs(st)) for n, st in zip(shape, strides) if n > 1),
                               key=lambda pair: pair[1]):
        if stride <= span:
            break
        span += stride * (size - 1)
    else:
        return False
    if numel > 1 << 20:
        return True
    offsets = np.zeros((), np.int64)
    for size, stride in zip(shape, strides):
        offsets = np.add.outer(offsets, np.arange(size, dtype=np.int64) * stride)
    return len(np.unique(offsets)) != numel


def reshape_strides(old_shape: tuple[int, ...], old_strides: tuple[int, ...],
                    new_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of old viewed in new_shape without a copy, or None where that cannot be
    (an axis of the new shape would span two separate runs of memory): torch's rule for view
    and reshape. Runs of old axes that are contiguous with each other are matched, from the
    last axis, with runs of new axes of the same number of elements."""
    if prod(old_shape) == 0 or not old_shape:
        return torch_contiguous_strides(new_shape) if prod(new_shape) == prod(old_shape) \
            else None
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_stride = old_strides[-1]
    old_numel = new_numel = 1
    for d in range(len(old_shape) - 1, -1, -1):
        old_numel *= old_shape[d]
        run_ends = d == 0 or (old_shape[d - 1] != 1 and
                              old_strides[d - 1] != old_numel * chunk_stride)
        if not run_ends:
            continue
        while view_d >= 0 and (new_numel < old_numel or new_shape[view_d] == 1):
            new_strides[view_d] = new_numel * chunk_stride
            new_numel *= new_shape[view_d]
            view_d -= 1
        if new_numel != old_numel:
            return None
        if d > 0:
            chunk_stride, old_numel, new_numel = old_strides[d - 1], 1, 1
    return tuple(new_strides) if view_d == -1 else None


def strides_after(shape: tuple[int, ...], strides: tuple[int, ...], op: str, arg: Any,
                  new_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides after one view op of a chain (MovementOps._view_result's ops), which takes
    shape (with strides) to new_shape; None after a reshape no strides describe (tinyfw's own
    layouts for a write, which no user sees). A flip steps backwards (numpy's x[::-1], which
    torch has not)."""
    if op == "permute":
        return tuple(strides[i] for i in arg)
    if op == "expand":
        return tuple(0 if old != new else st for old, new, st in zip(shape, new_shape, strides))
    if op == "every":
        return tuple(st * step for st, step in zip(strides, arg))
    if op == "flip":
        return tuple(-st if flipped else st for st, flipped in zip(strides, arg))
    if op == "unfold":  # (its shape, dim, size, step): dim steps by step, a new last axis by 1
        _, dim, _, step = arg
        return tuple(st * step if i == dim else st for i, st in enumerate(strides)) + \
            (strides[dim],)
    if op == "diagonal":  # (axes before the last two, first row, first column, length)
        lead = arg[0]
        return strides[:lead] + (strides[lead] + strides[lead + 1],)
    if op == "reshape":
        if [s for s in shape if s != 1] == [s for s in new_shape if s != 1]:
            return _squeeze_unsqueeze(shape, strides, new_shape)
        return reshape_strides(shape, strides, new_shape)
    return strides  # shrink, detach, contiguous: the same steps


def _squeeze_unsqueeze(shape: tuple[int, ...], strides: tuple[int, ...],
                       new_shape: tuple[int, ...]) -> tuple[int, ...]:
    """A reshape that only removes or adds size-1 axes (x[0], squeeze, unsqueeze), as torch's
    select, squeeze and unsqueeze make it: the other axes keep their strides; a size-1 axis
    steps as far as the axis after it spans (1 at the end), as torch's unsqueeze. (A size-1
    axis's stride decides nothing: torch's own differ between ops.)"""
    kept = iter(reversed([st for s, st in zip(shape, strides) if s != 1]))
    out: list[int] = []
    span = 1
    for size in reversed(new_shape):
        stride = next(kept) if size != 1 else span
        out.append(stride)
        span = size * stride
    return tuple(reversed(out))
