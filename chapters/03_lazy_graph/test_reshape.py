"""Reshape: one view when the strides allow it, None (and a stacked view) when they don't."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_equal
from tinyfw.shape.view import ShapeTracker, View
from tinyfw.viz.views import tracker_indices

pytestmark = pytest.mark.task("03.reshape")


def read(st: View | ShapeTracker, memory: np.ndarray) -> np.ndarray:
    """What a view (or stack) reads from memory, from the views' fields (masked elements read 0)."""
    assert isinstance(st, (View, ShapeTracker)), f"expected a View, got {st!r}"
    index, valid = tracker_indices(st)
    inside = (index >= 0) & (index < memory.size)
    assert inside[valid].all(), f"{st} reads outside a memory of {memory.size} elements"
    return np.where(valid, memory[np.where(valid & inside, index, 0)], 0)


def merged(view: View, shape: tuple[int, ...]) -> View:
    """view.reshape(shape), which must be one view."""
    out = view.reshape(shape)
    assert isinstance(out, View), f"{view}.reshape({shape}) can be one view, got {out!r}"
    assert out.shape == shape, f"{view}.reshape({shape}) has shape {out.shape}"
    return out


def test_same_shape_is_the_same_view() -> None:
    """A reshape to the shape a view already has changes nothing."""
    for view in [View.create((2, 3)), View.create((3, 2), (1, 3)),
                 View.create((3, 4), (3, 1), -3, ((1, 3), (0, 3)))]:
        assert view.reshape(view.shape) == view, f"{view}.reshape({view.shape}) should be itself"


def test_contiguous_views_always_merge() -> None:
    """A contiguous view takes any shape of the same size, as numpy's reshape."""
    memory = np.arange(24)
    for old, new in [((6, 4), (2, 3, 4)), ((2, 3, 4), (24,)), ((24,), (4, 6)), ((4, 6), (3, 8)),
                     ((2, 3, 4), (2, 1, 12, 1)), ((3, 1, 8), (24,)), ((24,), (1, 24, 1))]:
        expect_equal(read(merged(View.create(old), new), memory), memory.reshape(new),
                     what=f"{old}.reshape({new})")


def test_permuted_view_merges_only_where_contiguous() -> None:
    """A transposed view can't be flattened (None) but can gain size-1 axes or split an axis."""
    memory = np.arange(24)
    transposed = View.create((3, 2), (1, 3))   # (2, 3) transposed: reads 0 3 1 4 2 5
    assert transposed.reshape((6,)) is None, \
        f"{transposed} flattened reads 0 3 1 4 2 5, which no single view can: expected None"
    expect_equal(read(merged(transposed, (3, 1, 2)), memory), np.arange(6).reshape(2, 3).T
                 .reshape(3, 1, 2), what=f"{transposed}.reshape((3, 1, 2))")
    split = View.create((4, 6), (1, 4))   # (6, 4) transposed: axis 1 splits, axis 0 does not
    expect_equal(read(merged(split, (4, 2, 3)), memory),
                 memory.reshape(6, 4).T.reshape(4, 2, 3), what=f"{split}.reshape((4, 2, 3))")
    assert split.reshape((24,)) is None, f"{split}.reshape((24,)) should be None"


def test_expanded_and_flipped_views() -> None:
    """Stride-0 and negative strides merge where the group is evenly spaced."""
    memory = np.arange(24)
    expanded = View.create((2, 3, 4), (0, 4, 1))
    expect_equal(read(merged(expanded, (2, 12)), memory),
                 np.broadcast_to(memory[:12].reshape(3, 4), (2, 3, 4)).reshape(2, 12),
                 what=f"{expanded}.reshape((2, 12))")
    assert expanded.reshape((24,)) is None, \
        f"{expanded} repeats its 12 elements, so it cannot be flat: expected None"
    flipped = View.create((2, 3), (-3, -1), 5)
    expect_equal(read(merged(flipped, (6,)), memory), memory[5::-1],
                 what=f"{flipped}.reshape((6,))")


def test_masked_views_merge_only_size_one_changes() -> None:
    """A padded view can gain or lose size-1 axes; any other reshape is None."""
    memory = np.arange(1, 7)
    padded = View.create((3, 4), (3, 1), -3, ((1, 3), (0, 3)))
    expected = np.pad(memory.reshape(2, 3), ((1, 0), (0, 1)))
    for shape in [(3, 1, 4), (1, 3, 4, 1)]:
        expect_equal(read(merged(padded, shape), memory), expected.reshape(shape),
                     what=f"a padded (3, 4) view reshaped to {shape}")
    assert padded.reshape((12,)) is None, \
        "a padded (3, 4) view flattened is valid at 4..6 and 8..10, not one range: expect None"
    nothing = View.create((2, 3), (3, 1), 0, ((0, 0), (0, 3)))
    expect_equal(read(merged(nothing, (3, 2)), memory), np.zeros((3, 2), memory.dtype),
                 what="a view with no valid element, reshaped")
    one_pad = View.create((1,), (0,), 0, ((0, 0),))   # an empty slice, padded by one
    assert one_pad.reshape(()) is None, \
        "shape () has no axis to carry an empty mask range: reshaping nothing to () is None"


def test_shape_tracker_merges_or_stacks() -> None:
    """ShapeTracker.reshape keeps one view when yours merges and stacks one when it can't."""
    memory = np.arange(24)
    flat = ShapeTracker.from_shape((2, 3, 4)).reshape((6, 4))
    assert len(flat.views) == 1, f"a contiguous reshape should merge: got {flat.views}"
    stacked = ShapeTracker((View.create((4, 6), (1, 4)),)).reshape((24,))
    assert len(stacked.views) == 2, f"a transposed view flattened needs two views: {stacked}"
    expect_equal(read(stacked, memory), memory.reshape(6, 4).T.reshape(24),
                 what="(6, 4) transposed, then flattened")
    back = stacked.reshape((4, 6))
    assert len(back.views) == 2, f"the top view is contiguous, so it merges: {back.views}"
    expect_equal(read(back, memory), memory.reshape(6, 4).T, what="...and unflattened")
