"""From a view to an index: to_indexed's expressions, evaluated, match the views' fields."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_equal
from tinyfw.runtime.ops_numpy import loop_vars
from tinyfw.shape.symbolic import Expr
from tinyfw.shape.view import ShapeTracker, View
from tinyfw.viz.views import tracker_indices

pytestmark = pytest.mark.task("03.index")


def indexed(st: View | ShapeTracker) -> tuple[Expr, Expr, np.ndarray, np.ndarray]:
    """st.to_indexed over its loop variables: the expressions and their values everywhere."""
    idxs = loop_vars(st.shape)
    out = st.to_indexed(list(idxs))
    assert isinstance(out, tuple) and len(out) == 2 and all(isinstance(e, Expr) for e in out), \
        f"to_indexed should return (index, valid), two Exprs; got {out!r}"
    index, valid = out
    grid = {v.name: g for v, g in zip(idxs, np.indices(st.shape, sparse=True))}
    values = np.broadcast_to(np.asarray(index.evaluate(grid)), st.shape)
    ok = np.broadcast_to(np.asarray(valid.evaluate(grid), dtype=bool), st.shape)
    return index, valid, values, ok


def check(st: View | ShapeTracker, what: str) -> None:
    """to_indexed agrees with the views' fields: same validity, same index where valid."""
    _, _, values, ok = indexed(st)
    expected_index, expected_valid = tracker_indices(st)
    expect_equal(ok, expected_valid, what=f"{what}: which elements are valid")
    expect_equal(np.where(ok, values, -1), np.where(expected_valid, expected_index, -1),
                 what=f"{what}: the index of each valid element (-1 where not valid)")


def test_contiguous_view() -> None:
    """(3, 4) contiguous: index 4*i0 + i1, and every element valid (the constant 1)."""
    index, valid, values, _ = indexed(View.create((3, 4)))
    expect_equal(values, np.arange(12).reshape(3, 4), what="the index of a contiguous (3, 4)")
    assert valid.is_const and valid.vmin == 1, f"a view without a mask is always valid, so its " \
                                               f"condition should be the constant 1, got {valid}"
    assert index.vars() == {"i0", "i1"}, f"index should use i0 and i1: {index}"


def test_strides_offsets_and_zero_strides() -> None:
    """Permuted, flipped, offset and expanded views; a stride-0 axis leaves its variable out."""
    for view in [View.create((3, 2), (1, 3)), View.create((2, 3), (-3, -1), 5),
                 View.create((2, 2), (3, 1), 7), View.create((4, 3), (0, 1), 2),
                 View.create((2, 3, 4), (1, 8, 2), 1), View.create(())]:
        check(view, str(view))
    index, _, _, _ = indexed(View.create((4, 3), (0, 1)))
    assert "i0" not in index.vars(), f"axis 0 has stride 0, so the index should not use i0: {index}"


def test_masks_become_conditions() -> None:
    """A padded view: valid exactly inside its mask ranges, with the index there right."""
    for view in [View.create((3, 4), (3, 1), -3, ((1, 3), (0, 3))),
                 View.create((5, 2), (1, 0), -2, ((2, 4), (0, 2))),
                 View.create((4, 3, 2), (6, 1, 3), 0, ((0, 4), (1, 2), (0, 1))),
                 View.create((2, 3), (0, 0), 0, ((0, 0), (0, 3)))]:
        check(view, str(view))


def test_two_stacked_views() -> None:
    """A transposed (3, 2) seen as (6,) reads 0 3 1 4 2 5; and the same stack reshaped back."""
    stack = ShapeTracker((View.create((3, 2), (1, 3)), View.create((6,))))
    _, _, values, _ = indexed(stack)
    expect_equal(values, np.array([0, 3, 1, 4, 2, 5]), what="(2, 3) transposed, then flattened")
    check(ShapeTracker((View.create((3, 2), (1, 3)), View.create((2, 3)))),
          "(2, 3) transposed, then reshaped to (2, 3)")


def test_stacks_with_masks_in_every_view() -> None:
    """Three views, padded at the bottom and at the top: valid only where every view is."""
    bottom = View.create((3, 4), (3, 1), -3, ((1, 3), (0, 3)))   # (2, 3) padded
    middle = View.create((12,))
    top = View.create((2, 8), (6, 1), -1, ((0, 2), (1, 7)))      # (2, 6) padded (0, 0), (1, 1)
    check(ShapeTracker((bottom, middle, top)), "padded, flattened, reshaped and padded")
    check(ShapeTracker((bottom, View.create((4, 3), (1, 4)))), "padded, then transposed over it")
    check(ShapeTracker((View.create((4, 6), (1, 4)), View.create((24,)),
                        View.create((3, 8), (-8, 1), 16))), "transposed, flattened, flipped")


def test_stacked_index_is_simplified() -> None:
    """Built with the simplifying operators, the stacked index is (i0 // 2) + (i0 % 2) * 3."""
    stack = ShapeTracker((View.create((3, 2), (1, 3)), View.create((6,))))
    index, valid, _, _ = indexed(stack)

    def size(e: Expr) -> int:
        return 1 + sum(size(c) for c in e.children())
    assert size(index) <= 6, f"the index has {size(index)} nodes, (i0 // 2) + (i0 % 2) * 3 has " \
                             f"6: build it with lift, +, *, // and % so it gets simplified: {index}"
    assert valid.is_const and valid.vmin == 1, f"nothing is masked, so valid is 1, got {valid}"
