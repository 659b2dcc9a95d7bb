"""Views: any chain of movement ops, read through to_indexed, reads what numpy's same ops give."""
from __future__ import annotations

from itertools import permutations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyfw.helpers import prod
from tinyfw.runtime.ops_numpy import loop_vars
from tinyfw.shape.view import ShapeTracker, View
from tinyfw.viz.views import tracker_indices

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None)
Op = tuple[str, object]


def read(tracker: ShapeTracker, memory: np.ndarray) -> np.ndarray:
    """What a ShapeTracker reads from memory, through its index and validity expressions."""
    shape = tracker.shape
    idxs = loop_vars(shape)
    index, valid = tracker.to_indexed(list(idxs))
    grid = {v.name: g for v, g in zip(idxs, np.indices(shape, sparse=True))}
    at = np.broadcast_to(np.asarray(index.evaluate(grid)), shape)
    ok = np.broadcast_to(np.asarray(valid.evaluate(grid), dtype=bool), shape)
    assert ((at[ok] >= 0) & (at[ok] < memory.size)).all(), f"{tracker} reads outside memory"
    out = np.zeros(shape, dtype=memory.dtype)
    out[ok] = memory[at[ok]]
    return out


def factorizations(n: int) -> list[int]:
    """The divisors of n (n > 0)."""
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def new_shape(draw: st.DrawFn, size: int) -> tuple[int, ...]:
    """A random shape with `size` elements, size-1 axes sprinkled in sometimes."""
    if size == 0:
        rest = draw(st.lists(st.integers(0, 3), max_size=2))
        return tuple(draw(st.permutations([0, *rest])))
    dims: list[int] = []
    left = size
    while left > 1 and len(dims) < 4:
        d = draw(st.sampled_from(factorizations(left)[1:]))
        dims.append(d)
        left //= d
    if left > 1:
        dims.append(left)
    for _ in range(draw(st.integers(0, 2))):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    return tuple(dims)


@st.composite
def movement(draw: st.DrawFn, shape: tuple[int, ...]) -> Op:
    """One movement op that applies to shape."""
    kinds = ["reshape", "reshape", "permute", "permute", "shrink", "pad", "flip"]
    kinds += ["expand"] * 2 if 1 in shape else []
    kind = draw(st.sampled_from(kinds))
    if kind == "reshape":
        return kind, draw(new_shape(prod(shape)))
    if kind == "permute":
        return kind, tuple(draw(st.permutations(range(len(shape)))))
    if kind == "expand":
        return kind, tuple(draw(st.integers(1, 3)) if s == 1 else s for s in shape)
    if kind == "shrink":  # an empty slice now and then, a slice of something mostly
        empty = draw(st.integers(0, 19)) == 0
        bounds = []
        for s in shape:
            start = draw(st.integers(0, s if empty else max(s - 1, 0)))
            bounds.append((start, draw(st.integers(min(start + (not empty), s), s))))
        return kind, tuple(bounds)
    if kind == "pad":
        return kind, tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in shape)
    return kind, tuple(draw(st.booleans()) for _ in shape)


@st.composite
def programs(draw: st.DrawFn) -> tuple[tuple[int, ...], list[Op]]:
    """A starting shape and up to 7 movement ops applied in turn; half of them start by
    transposing and flattening, which stacks a second view."""
    stacked = draw(st.booleans())
    dims = st.integers(2, 4) if stacked else st.integers(1, 4)
    shape = tuple(draw(st.lists(dims, min_size=2 if stacked else 0, max_size=3)))
    start, ops = shape, []
    if stacked:
        ops += [("permute", tuple(reversed(range(len(shape))))), ("reshape", (prod(shape),))]
        shape = (prod(shape),)
    for _ in range(draw(st.integers(1, 7))):
        op = draw(movement(shape))
        ops.append(op)
        shape = apply_numpy(np.zeros(shape), op).shape
    return start, ops


def apply_numpy(array: np.ndarray, op: Op) -> np.ndarray:
    """numpy's version of one movement op."""
    kind, arg = op
    if kind == "reshape":
        return array.reshape(arg)
    if kind == "permute":
        return array.transpose(arg)
    if kind == "expand":
        return np.broadcast_to(array, arg)
    if kind == "shrink":
        return array[tuple(slice(b, e) for b, e in arg)]
    if kind == "pad":
        return np.pad(array, arg) if arg else array
    return np.flip(array, tuple(d for d, f in enumerate(arg) if f)) if any(arg) else array


def apply_tracker(tracker: ShapeTracker, op: Op) -> ShapeTracker:
    """tinyfw's version of one movement op."""
    kind, arg = op
    return getattr(tracker, kind)(arg)


@SETTINGS
@given(program=programs())
def test_movement_chains_read_like_numpy(program: tuple[tuple[int, ...], list[Op]]) -> None:
    """After every op, reading through to_indexed gives numpy's array (padding reads 0)."""
    shape, ops = program
    memory = np.arange(1, prod(shape) + 1)
    expected, tracker = memory.reshape(shape), ShapeTracker.from_shape(shape)
    for i, op in enumerate(ops):
        expected, tracker = apply_numpy(expected, op), apply_tracker(tracker, op)
        got = read(tracker, memory)
        assert got.shape == expected.shape and np.array_equal(got, expected), \
            f"after {ops[:i + 1]} from {shape}: {tracker}\nread {got}\nexpected {expected}"
        index, valid = tracker_indices(tracker)
        assert np.array_equal(np.where(valid, memory[np.where(valid, index, 0)], 0), expected)
    reshapes = sum(kind == "reshape" for kind, _ in ops)
    assert len(tracker.views) <= 1 + reshapes, f"only a reshape may stack a view: {tracker}"


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), max_size=3).map(tuple), data=st.data())
def test_reshapes_of_contiguous_memory_stay_one_view(shape: tuple[int, ...],
                                                      data: st.DataObject) -> None:
    """Any chain of reshapes of a contiguous view is one contiguous view."""
    tracker = ShapeTracker.from_shape(shape)
    for _ in range(data.draw(st.integers(1, 4))):
        tracker = tracker.reshape(data.draw(new_shape(prod(shape))))
        assert len(tracker.views) == 1 and tracker.contiguous, f"should have merged: {tracker}"


@SETTINGS
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple), data=st.data())
def test_size_one_axes_merge_even_with_masks(shape: tuple[int, ...], data: st.DataObject) -> None:
    """Adding or removing size-1 axes never stacks a view, padded or not."""
    padding = tuple((data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1))) for _ in shape)
    tracker = ShapeTracker.from_shape(shape).pad(padding)
    expected = np.pad(np.arange(1, prod(shape) + 1).reshape(shape), padding)
    squeezed = tuple(s for s in tracker.shape if s != 1)
    for new in [squeezed, (1, *squeezed), (*squeezed, 1, 1)]:
        moved = tracker.reshape(new)
        assert len(moved.views) == 1, f"{tracker} reshaped to {new} should be one view: {moved}"
        assert np.array_equal(read(moved, np.arange(1, prod(shape) + 1)), expected.reshape(new))


def test_permute_then_flatten_stacks_and_reads_right() -> None:
    """Every non-identity permute of (2, 3, 4), flattened, needs a second view."""
    memory = np.arange(24)
    for order in permutations(range(3)):
        tracker = ShapeTracker.from_shape((2, 3, 4)).permute(order).reshape((24,))
        assert len(tracker.views) == (1 if order == (0, 1, 2) else 2), f"{order}: {tracker}"
        assert np.array_equal(read(tracker, memory), memory.reshape(2, 3, 4).transpose(order)
                              .reshape(24))
        again = tracker.reshape((4, 6))
        assert len(again.views) == len(tracker.views), "the contiguous top view should merge"


def test_stacked_index_is_simplified() -> None:
    """(2, 3) transposed and flattened indexes memory by (i0 // 2) + (i0 % 2) * 3."""
    tracker = ShapeTracker.from_shape((2, 3)).permute((1, 0)).reshape((6,))
    index, valid = tracker.to_indexed(list(loop_vars((6,))))
    assert str(index) == "((i0 / 2) + ((i0 % 2) * 3))" and str(valid) == "1"


def test_canonical_views() -> None:
    """View.create zeroes size-1 strides, drops full masks and empties empty ones."""
    assert View.create((1, 3), (5, 1)) == View((1, 3), (0, 1), 0, None)
    assert View.create((2, 3), mask=((0, 2), (0, 3))).mask is None
    empty = View.create((2, 3), (3, 1), 4, ((1, 1), (0, 3)))
    assert empty == View((2, 3), (0, 0), 0, ((0, 0), (0, 0)))
    padded = ShapeTracker.from_shape((2, 3)).pad(((1, 2), (0, 3)))
    assert padded.shrink(((1, 3), (0, 3))) == ShapeTracker.from_shape((2, 3))
