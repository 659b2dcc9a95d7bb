"""Permute and expand: new views of the same memory, checked against numpy doing the same."""

from __future__ import annotations

from itertools import permutations

import numpy as np
import pytest

from chapters.grading import expect_equal
from tinyfw.shape.view import View
from tinyfw.viz.views import tracker_indices

pytestmark = pytest.mark.task("03.permute_expand")


def read(view: View, memory: np.ndarray) -> np.ndarray:
    """What a view reads from memory, worked out from its fields (masked elements read 0)."""
    assert isinstance(view, View), f"expected a View, got {view!r}"
    index, valid = tracker_indices(view)
    inside = (index >= 0) & (index < memory.size)
    assert inside[valid].all(), f"{view} reads outside a memory of {memory.size} elements"
    return np.where(valid, memory[np.where(valid & inside, index, 0)], 0)


def test_permute_of_a_matrix_is_a_transpose() -> None:
    """(2, 3) permuted by (1, 0) reads the transpose, by swapping the strides."""
    memory = np.arange(6)
    view = View.create((2, 3)).permute((1, 0))
    expect_equal(read(view, memory), memory.reshape(2, 3).T, what="(2, 3).permute((1, 0))")
    assert view.strides == (1, 3), f"a transpose swaps the strides (3, 1); got {view.strides}"


def test_every_order_of_three_axes() -> None:
    """Each of the six orders of (2, 3, 4), also of a view with its own strides and offset."""
    memory = np.arange(100)
    size = memory.itemsize
    base = np.lib.stride_tricks.as_strided(memory[5:], (2, 3, 4), (20 * size, size, 4 * size))
    for order in permutations(range(3)):
        contiguous = View.create((2, 3, 4)).permute(order)
        expect_equal(read(contiguous, memory), memory[:24].reshape(2, 3, 4).transpose(order),
                     what=f"(2, 3, 4).permute({order})")
        strided = View.create((2, 3, 4), (20, 1, 4), 5).permute(order)
        expect_equal(read(strided, memory), base.transpose(order),
                     what=f"View((2, 3, 4), strides (20, 1, 4), offset 5).permute({order})")


def test_permute_moves_the_mask_with_its_axis() -> None:
    """A padded view permuted: the zeros move with their axis."""
    memory = np.arange(1, 7)
    padded = View.create((3, 4), (3, 1), -3, ((1, 3), (0, 3)))   # (2, 3) padded (1, 0), (0, 1)
    expected = np.pad(memory.reshape(2, 3), ((1, 0), (0, 1)))
    expect_equal(read(padded.permute((1, 0)), memory), expected.T, what="a padded view, permuted")


def test_expand_repeats_without_copying() -> None:
    """An expanded axis has stride 0: every position along it reads the same memory."""
    memory = np.arange(1, 13)
    for shape, grown in [((3, 1), (3, 4)), ((1, 4), (5, 4)), ((1,), (6,)), ((1, 3, 1), (2, 3, 4)),
                         ((1, 1), (2, 2)), ((2, 3), (2, 3))]:
        view = View.create(shape).expand(grown)
        source = memory[:int(np.prod(shape))].reshape(shape)
        expect_equal(read(view, memory), np.broadcast_to(source, grown),
                     what=f"{shape}.expand({grown})")
        zero = [d for d, (s, g) in enumerate(zip(shape, grown)) if s == 1 and g > 1]
        assert all(view.strides[d] == 0 for d in zero), \
            f"{shape}.expand({grown}) should have stride 0 on axes {zero}: got {view.strides}"


def test_expand_keeps_or_grows_the_mask() -> None:
    """A padded row expanded: a kept axis keeps its range, a grown one covers its new size."""
    memory = np.arange(1, 4)
    row = View.create((1, 5), (0, 1), -1, ((0, 1), (1, 4)))   # [0 1 2 3 0]
    expect_equal(read(row.expand((3, 5)), memory),
                 np.broadcast_to(np.pad(memory, (1, 1)), (3, 5)), what="a padded row, expanded")
    nothing = View.create((1, 2), (0, 1), 0, ((0, 1), (0, 0)))   # no valid element at all
    expect_equal(read(nothing.expand((3, 2)), memory), np.zeros((3, 2), memory.dtype),
                 what="a view with no valid element, expanded")
