"""Flip: a negative stride, and an offset that starts at the last element."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from chapters.grading import expect_equal
from tinyfw.shape.view import View
from tinyfw.viz.views import tracker_indices

pytestmark = pytest.mark.task("03.flip")


def read(view: View, memory: np.ndarray) -> np.ndarray:
    """What a view reads from memory, worked out from its fields (masked elements read 0)."""
    assert isinstance(view, View), f"expected a View, got {view!r}"
    index, valid = tracker_indices(view)
    inside = (index >= 0) & (index < memory.size)
    assert inside[valid].all(), f"{view} reads outside a memory of {memory.size} elements"
    return np.where(valid, memory[np.where(valid & inside, index, 0)], 0)


def flipped_axes(axes: tuple[bool, ...]) -> tuple[int, ...]:
    """numpy's spelling of a flip."""
    return tuple(d for d, f in enumerate(axes) if f)


def test_flip_each_axis_of_a_matrix() -> None:
    """Flipping the columns of (2, 3): strides (3, -1), offset 2."""
    memory = np.arange(6)
    view = View.create((2, 3)).flip((False, True))
    expect_equal(read(view, memory), memory.reshape(2, 3)[:, ::-1], what="(2, 3).flip(columns)")
    assert view.strides == (3, -1) and view.offset == 2, \
        f"expected strides (3, -1) and offset 2, got strides {view.strides}, offset {view.offset}"
    expect_equal(read(View.create((2, 3)).flip((True, False)), memory),
                 memory.reshape(2, 3)[::-1], what="(2, 3).flip(rows)")


def test_every_flip_of_three_axes() -> None:
    """All eight flips of (2, 3, 4), also of a transposed view with an offset."""
    memory = np.arange(40)
    strided = View.create((4, 3, 2), (1, 4, 12), 10)   # memory[10:34] as (2, 3, 4), transposed
    base = memory[10:34].reshape(2, 3, 4).transpose(2, 1, 0)
    for axes in product([False, True], repeat=3):
        expect_equal(read(View.create((2, 3, 4)).flip(axes), memory),
                     np.flip(memory[:24].reshape(2, 3, 4), flipped_axes(axes)),
                     what=f"(2, 3, 4).flip({axes})")
        expect_equal(read(strided.flip(axes), memory), np.flip(base, flipped_axes(axes)),
                     what=f"a transposed view with offset 10, flipped {axes}")


def test_flip_mirrors_the_mask() -> None:
    """A padded view flipped: the padding moves to the other side."""
    memory = np.arange(1, 7)
    padded = View.create((4, 4), (3, 1), -3, ((1, 3), (0, 3)))   # (2, 3) padded (1, 1), (0, 1)
    expected = np.pad(memory.reshape(2, 3), ((1, 1), (0, 1)))
    for axes in product([False, True], repeat=2):
        expect_equal(read(padded.flip(axes), memory), np.flip(expected, flipped_axes(axes)),
                     what=f"a padded view flipped {axes}")


def test_flip_twice_is_the_same_view() -> None:
    """Flipping the same axes twice gives back an equal view."""
    for view in [View.create((2, 3, 4)), View.create((3, 2), (1, 3), 4),
                 View.create((4, 4), (3, 1), -3, ((1, 3), (0, 3)))]:
        for axes in [(True, False), (False, True), (True, True)] if len(view.shape) == 2 \
                else [(True, False, True), (False, True, False)]:
            again = view.flip(axes).flip(axes)
            assert again == view, f"{view} flipped {axes} twice should be itself, got {again}"
