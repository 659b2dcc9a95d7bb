"""Reading memory through a view: memory[index] where valid, the fill value elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_equal
from tinyfw import Tensor
from tinyfw.runtime.ops_numpy import read_view
from tinyfw.shape.view import ShapeTracker, View

pytestmark = pytest.mark.task("03.read_view")


def tracker(*views: View) -> ShapeTracker:
    """A ShapeTracker of the given views, bottom first."""
    return ShapeTracker(tuple(views))


def test_views_of_a_matrix() -> None:
    """Contiguous, transposed, flipped, sliced and broadcast views of a (2, 3) memory."""
    memory = np.arange(10, 16, dtype=np.float32)
    m = memory.reshape(2, 3)
    for view, expected in [(View.create((2, 3)), m), (View.create((3, 2), (1, 3)), m.T),
                           (View.create((2, 3), (-3, -1), 5), m[::-1, ::-1]),
                           (View.create((2, 2), (3, 1), 1), m[:, 1:]),
                           (View.create((4, 3), (0, 1), 3), np.broadcast_to(m[1], (4, 3)))]:
        got = read_view(memory, tracker(view))
        expect_equal(got, expected, what=f"reading {view}", dtype=np.float32)


def test_padding_reads_the_fill_value() -> None:
    """Masked elements read 0, or the fill asked for, and never memory[-3] or past the end."""
    memory = np.arange(1, 7, dtype=np.int32)
    padded = tracker(View.create((4, 5), (3, 1), -4, ((1, 3), (1, 4))))   # offset < 0
    expect_equal(read_view(memory, padded), np.pad(memory.reshape(2, 3), ((1, 1), (1, 1))),
                 what="a padded view", dtype=np.int32)
    expect_equal(read_view(memory, padded, fill=-1),
                 np.pad(memory.reshape(2, 3), ((1, 1), (1, 1)), constant_values=-1),
                 what="a padded view with fill=-1", dtype=np.int32)
    after = tracker(View.create((9,), (1,), 0, ((0, 6),)))   # indices 6..8 are past the end
    expect_equal(read_view(memory, after), np.pad(memory, (0, 3)), what="padding at the end")


def test_stacked_views() -> None:
    """Two views: a transposed (3, 2) read as (6,), and a padded view read flipped."""
    memory = np.arange(6, dtype=np.int64)
    expect_equal(read_view(memory, tracker(View.create((3, 2), (1, 3)), View.create((6,)))),
                 np.array([0, 3, 1, 4, 2, 5]), what="(2, 3) transposed, then flattened")
    padded = View.create((3, 4), (3, 1), -3, ((1, 3), (0, 3)))
    flat_flipped = View.create((12,), (-1,), 11)
    expect_equal(read_view(memory, tracker(padded, flat_flipped)),
                 np.pad(memory.reshape(2, 3), ((1, 0), (0, 1))).reshape(12)[::-1],
                 what="padded, flattened, flipped")


def test_scalars_empty_views_and_dtypes() -> None:
    """Shape (), a view of nothing, and bool and int8 memory keep their dtype."""
    memory = np.array([True, False, True])
    expect_equal(read_view(memory, tracker(View.create((), (), 1))), np.array(False),
                 what="a scalar view at offset 1", dtype=np.bool_)
    expect_equal(read_view(memory, tracker(View.create((2, 3), (0, 1)))),
                 np.broadcast_to(memory, (2, 3)), what="bools, broadcast", dtype=np.bool_)
    expect_equal(read_view(np.zeros(0, np.int8), tracker(View.create((0, 3)))),
                 np.zeros((0, 3), np.int8), what="an empty view of empty memory", dtype=np.int8)
    expect_equal(read_view(np.array([7], np.int8), tracker(View.create((2, 2), (0, 0)))),
                 np.full((2, 2), 7, np.int8), what="one element, expanded", dtype=np.int8)


def test_tensors_move_without_copies() -> None:
    """Movement ops on tensors, realized through the views of the kernels' LOADs."""
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = Tensor(a, device="NUMPY")
    expect_equal(t.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1), what="permute(2, 0, 1)")
    expect_equal(t.flip(1)[:, 1:, ::2].numpy(), a[:, ::-1][:, 1:, ::2], what="flip, then slice")
    expect_equal(t.reshape(6, 4).T.reshape(2, 12).numpy(), a.reshape(6, 4).T.reshape(2, 12),
                 what="reshape, transpose, reshape")
    expect_equal(t.pad(((0, 0), (1, 0), (0, 2))).numpy(), np.pad(a, ((0, 0), (1, 0), (0, 2))),
                 what="pad")
