# Exercises of chapter 03, generated from tinyfw/shape/view.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/03_lazy_graph
# generated text id: f6e1303f0580a287 (lets tools.generate tell your edits apart)
"""Views: how a shape reads flat memory (strides, offset, validity mask), and stacks of them."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tinyfw.helpers import prod
from tinyfw.shape.symbolic import Const, Expr, lift, make_and, make_sum

Bounds = tuple[tuple[int, int], ...]


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of a shape; size-1 axes get stride 0 (they never move)."""
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step if s != 1 else 0)
        step *= s
    return tuple(reversed(strides))


@dataclass(frozen=True)
class View:
    """Element i of this shape is memory[offset + sum(i[d] * strides[d])], and exists only where
    mask[d][0] <= i[d] < mask[d][1] for every d (elsewhere it reads as 0)."""
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0
    mask: Bounds | None = None

    @staticmethod
    def create(shape: tuple[int, ...], strides: tuple[int, ...] | None = None, offset: int = 0,
               mask: Bounds | None = None) -> View:
        """A view in canonical form: size-1 axes stride 0; a mask covering everything is None."""
        strides = contiguous_strides(shape) if strides is None else strides
        strides = tuple(0 if s == 1 else st for s, st in zip(shape, strides))
        if mask is not None and all(m == (0, s) for m, s in zip(mask, shape)):
            mask = None
        if mask is not None and any(b >= e for b, e in mask):  # nothing valid: read no memory
            strides, offset, mask = (0,) * len(shape), 0, tuple((0, 0) for _ in shape)
        return View(tuple(shape), tuple(strides), offset, mask)

    @property
    def contiguous(self) -> bool:
        """True when this view is plain row-major memory from 0."""
        return self.offset == 0 and self.mask is None and \
            self.strides == contiguous_strides(self.shape)

    # --- movement ops: each returns a new view of the same memory ---
    def permute(self, order: tuple[int, ...]) -> View:
        """The axes in a new order."""
        # TODO 03.permute_expand: write this part. The chapter explains it:
        #   chapters/03_lazy_graph/README.md#permute-and-expand
        raise NotImplementedError("not done yet: 03.permute_expand")

    def expand(self, shape: tuple[int, ...]) -> View:
        """Size-1 axes repeated: their stride is 0, so every position reads the same memory."""
        # TODO 03.permute_expand: write this part. The chapter explains it:
        #   chapters/03_lazy_graph/README.md#permute-and-expand
        raise NotImplementedError("not done yet: 03.permute_expand")

    def shrink(self, bounds: Bounds) -> View:
        """Keep [start, end) of each axis: move the offset to the start, clip the mask."""
        # TODO 03.shrink_pad: write this part. The chapter explains it:
        #   chapters/03_lazy_graph/README.md#shrink-and-pad
        raise NotImplementedError("not done yet: 03.shrink_pad")

    def pad(self, padding: Bounds) -> View:
        """Grow each axis by (before, after) elements that read as 0: shift the offset back and
        mark only the old elements valid."""
        # TODO 03.shrink_pad: write this part. The chapter explains it:
        #   chapters/03_lazy_graph/README.md#shrink-and-pad
        raise NotImplementedError("not done yet: 03.shrink_pad")

    def flip(self, axes: tuple[bool, ...]) -> View:
        """Reverse the flagged axes: start at their last element and step backwards."""
        # TODO 03.flip: write this part. The chapter explains it:
        #   chapters/03_lazy_graph/README.md#flip
        raise NotImplementedError("not done yet: 03.flip")

    def reshape(self, shape: tuple[int, ...]) -> View | None:
        """The same elements in a new shape, as one view when the strides allow it, else None
        (the caller then stacks a new view on top of this one)."""
        # TODO 03.reshape: write this part. The chapter explains it:
        #   chapters/03_lazy_graph/README.md#reshape-merge-or-stack
        raise NotImplementedError("not done yet: 03.reshape")

    # --- reading memory ---
    def to_indexed(self, idxs: Sequence[Expr]) -> tuple[Expr, Expr]:
        """The memory index and the validity of element idxs, as expressions."""
        # TODO 03.index: write this part. The chapter explains it:
        #   chapters/03_lazy_graph/README.md#from-a-view-to-an-index
        raise NotImplementedError("not done yet: 03.index")


def _merge_strides(old_shape: tuple[int, ...], old_strides: tuple[int, ...],
                   new_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides that read the same memory in new_shape, or None. Old and new axes are matched in
    groups of equal size; a group of old axes can be split anew only if it is contiguous within
    itself (each stride is the next stride times the next size)."""
    if prod(new_shape) == 0:
        return contiguous_strides(new_shape)
    old = [(s, st) for s, st in zip(old_shape, old_strides) if s != 1]
    new_strides = [0] * len(new_shape)
    oi = ni = 0
    while oi < len(old) and ni < len(new_shape):
        oj, nj = oi + 1, ni + 1
        size_old, size_new = old[oi][0], new_shape[ni]
        while size_old != size_new:
            if size_new < size_old:
                size_new *= new_shape[nj]
                nj += 1
            else:
                size_old *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        new_strides[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            new_strides[k - 1] = new_strides[k] * new_shape[k]
        oi, ni = oj, nj
    return tuple(new_strides)


@dataclass(frozen=True)
class ShapeTracker:
    """A stack of views. The last view gives the shape; each view's memory index is an element
    index into the view below it, down to the first, which indexes the buffer."""
    views: tuple[View, ...]

    @staticmethod
    def from_shape(shape: tuple[int, ...]) -> ShapeTracker:
        return ShapeTracker((View.create(shape),))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.views[-1].shape

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def contiguous(self) -> bool:
        return len(self.views) == 1 and self.views[0].contiguous

    def _top(self, view: View) -> ShapeTracker:
        return ShapeTracker(self.views[:-1] + (view,))

    def permute(self, order: tuple[int, ...]) -> ShapeTracker:
        return self._top(self.views[-1].permute(order))

    def expand(self, shape: tuple[int, ...]) -> ShapeTracker:
        return self._top(self.views[-1].expand(shape))

    def shrink(self, bounds: Bounds) -> ShapeTracker:
        return self._top(self.views[-1].shrink(bounds))

    def pad(self, padding: Bounds) -> ShapeTracker:
        return self._top(self.views[-1].pad(padding))

    def flip(self, axes: tuple[bool, ...]) -> ShapeTracker:
        return self._top(self.views[-1].flip(axes))

    def reshape(self, shape: tuple[int, ...]) -> ShapeTracker:
        """Merge into the top view when possible, else stack a new contiguous view."""
        merged = self.views[-1].reshape(shape)
        if merged is not None:
            return self._top(merged)
        return ShapeTracker(self.views + (View.create(shape),))

    def to_indexed(self, idxs: Sequence[Expr]) -> tuple[Expr, Expr]:
        """The buffer index and validity of element idxs, through every view of the stack."""
        # TODO 03.index: write this part. The chapter explains it:
        #   chapters/03_lazy_graph/README.md#from-a-view-to-an-index
        raise NotImplementedError("not done yet: 03.index")


def unravel(flat: Expr, shape: tuple[int, ...]) -> list[Expr]:
    """Per-axis indices of a row-major flat index into shape."""
    out, step = [], 1
    for s in reversed(shape):
        out.append((flat // step) % s if s != 1 else Const(0))
        step *= s
    return list(reversed(out))
