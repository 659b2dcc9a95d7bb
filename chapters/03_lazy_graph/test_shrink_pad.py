"""Shrink and pad: a slice moves the offset; padding moves it back and masks the new elements."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_equal
from tinyfw.shape.view import View
from tinyfw.viz.views import tracker_indices

pytestmark = pytest.mark.task("03.shrink_pad")


def read(view: View, memory: np.ndarray) -> np.ndarray:
    """What a view reads from memory, worked out from its fields (masked elements read 0)."""
    assert isinstance(view, View), f"expected a View, got {view!r}"
    index, valid = tracker_indices(view)
    inside = (index >= 0) & (index < memory.size)
    assert inside[valid].all(), f"{view} reads outside a memory of {memory.size} elements"
    return np.where(valid, memory[np.where(valid & inside, index, 0)], 0)


def slices(bounds: tuple[tuple[int, int], ...]) -> tuple[slice, ...]:
    """numpy's spelling of a shrink."""
    return tuple(slice(b, e) for b, e in bounds)


def test_shrink_is_a_slice() -> None:
    """Shrinks of a (4, 5) view read numpy's slices; the offset moves to the first element."""
    memory = np.arange(20)
    for bounds in [((1, 3), (0, 5)), ((0, 4), (2, 4)), ((3, 4), (4, 5)), ((1, 1), (0, 5)),
                   ((0, 4), (0, 5))]:
        view = View.create((4, 5)).shrink(bounds)
        expect_equal(read(view, memory), memory.reshape(4, 5)[slices(bounds)],
                     what=f"(4, 5).shrink({bounds})")
    view = View.create((4, 5)).shrink(((1, 3), (2, 4)))
    assert view.offset == 7, f"(4, 5).shrink(((1, 3), (2, 4))) starts at memory[7], offset is " \
                             f"{view.offset}"


def test_shrink_of_a_strided_view() -> None:
    """A shrink of a transposed view with an offset of its own."""
    memory = np.arange(30)
    base = View.create((5, 4), (1, 5), 3)   # memory[3:23] as (4, 5), transposed
    expected = memory[3:23].reshape(4, 5).T
    for bounds in [((1, 4), (1, 3)), ((0, 5), (3, 4)), ((4, 5), (0, 4))]:
        expect_equal(read(base.shrink(bounds), memory), expected[slices(bounds)],
                     what=f"a transposed view, shrunk by {bounds}")


def test_pad_reads_zeros_around() -> None:
    """Pads of a (2, 3) view read numpy's np.pad: the new elements are masked off."""
    memory = np.arange(1, 7)
    for padding in [((1, 0), (0, 1)), ((0, 0), (2, 2)), ((1, 2), (3, 0)), ((0, 1), (0, 0))]:
        view = View.create((2, 3)).pad(padding)
        expect_equal(read(view, memory), np.pad(memory.reshape(2, 3), padding),
                     what=f"(2, 3).pad({padding})")
        assert view.mask is not None, f"(2, 3).pad({padding}) has padding, so it needs a mask"
    view = View.create((2, 3)).pad(((1, 0), (0, 1)))
    assert view.offset == -3, f"one row padded in front starts a row early: offset -3, " \
                              f"got {view.offset}"


def test_pad_of_a_pad_and_back() -> None:
    """Padding twice adds up; shrinking the padding off again gives back the very same view."""
    memory = np.arange(1, 7)
    twice = View.create((2, 3)).pad(((1, 0), (0, 1))).pad(((0, 2), (1, 1)))
    expect_equal(read(twice, memory),
                 np.pad(np.pad(memory.reshape(2, 3), ((1, 0), (0, 1))), ((0, 2), (1, 1))),
                 what="a pad of a pad")
    back = View.create((2, 3)).pad(((1, 2), (3, 1))).shrink(((1, 3), (3, 6)))
    assert back == View.create((2, 3)), \
        f"padding then shrinking the padding off should give View.create((2, 3)), got {back}"


def test_shrink_of_a_pad() -> None:
    """Shrinks that keep part of the padding, or nothing but padding, read like numpy."""
    memory = np.arange(1, 7)
    padded = View.create((2, 3)).pad(((1, 1), (2, 0)))
    expected = np.pad(memory.reshape(2, 3), ((1, 1), (2, 0)))
    for bounds in [((0, 2), (1, 4)), ((1, 4), (0, 3)), ((3, 4), (0, 2)), ((0, 1), (0, 5)),
                   ((1, 3), (2, 5))]:
        expect_equal(read(padded.shrink(bounds), memory), expected[slices(bounds)],
                     what=f"(2, 3).pad(((1, 1), (2, 0))).shrink({bounds})")
    inside = padded.shrink(((1, 2), (2, 5)))
    assert inside.mask is None, f"a shrink that keeps no padding needs no mask (clip the mask " \
                                f"ranges to what is kept): got {inside}"
    outside = padded.shrink(((0, 1), (0, 5)))
    assert outside == View.create((1, 5), mask=((0, 0), (0, 0))), \
        f"a shrink that keeps only padding should be the view of nothing, got {outside}"
