"""Movement ops: new views of a tensor's elements, no data is copied (indexing is in
indexing.py)."""
from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tinyfw.mixin.derived import AxisArg
from tinyfw.dtype import DType, dtypes, to_dtype
from tinyfw.helpers import argfix, normalize_axis, prod, shape_str
from tinyfw.uop.ops import UOp
from tinyfw.mixin.core import TensorCore
from tinyfw.mixin.rearrange import rearrange
from tinyfw.mixin.strides import (is_contiguous, overlaps, reshape_strides, strides_after,
                                  torch_contiguous_strides)

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from tinyfw.tensor import Tensor


def _int_arg(what: str, x: Any) -> int:
    """x as an int (numpy ints too), or torch's TypeError for a float or other value."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return int(x)
    raise TypeError(f"{what}(): argument must be int, but found element of type "
                    f"{type(x).__name__}: {x!r}")


def _flat_padding(padding: Sequence[object]) -> TypeIs[Sequence[int]]:
    """Whether padding is torch's flat form (left, right, top, bottom, ...): ints only."""
    return all(isinstance(p, int) for p in padding)


def _sizes(what: str, shape: tuple) -> tuple[int, ...]:
    """The sizes of a shape argument as ints, or torch's TypeError naming the odd one."""
    for i, x in enumerate(shape):
        if not isinstance(x, (int, np.integer)) or isinstance(x, (bool, np.bool_)):
            raise TypeError(f"{what}(): argument 'size' must be tuple of ints, but found "
                            f"element of type {type(x).__name__} at pos {i}: {tuple(shape)}")
    return tuple(int(x) for x in shape)


def _tensor_list(first: Any, rest: tuple) -> list[Tensor]:
    """The tensors of cat(first, *rest) or cat([a, b, ...]) (then rest is empty)."""
    if first is None:  # Tensor.cat(): nothing to join
        return []
    if isinstance(first, (list, tuple)):
        if rest:
            raise TypeError("pass the tensors either as arguments or as one list, not both")
        tensors = list(first)
    else:
        tensors = [first, *rest]
    for i, t in enumerate(tensors):
        if not hasattr(t, "uop"):
            raise TypeError(f"expected a Tensor at position {i}, got {type(t).__name__}")
    return tensors


def _apply_view_ops(x: Tensor, ops: tuple) -> Tensor:
    """x seen through a chain of view ops (as MovementOps._view_result records them)."""
    for op, arg in ops:
        if op == "reshape":
            x = x._of(x.uop.reshape(arg))
        elif op == "permute":
            x = x._of(x.uop.permute(arg))
        elif op == "expand":
            x = x._of(x.uop.expand(arg))
        elif op == "shrink":
            x = x._of(x.uop.shrink(arg))
        elif op == "flip":
            x = x._of(x.uop.flip(arg))
        elif op == "detach":
            x = x._of(x.uop.detach())
        elif op == "contiguous":  # x.contiguous() of a contiguous x is x: its value
            continue
        elif op == "every":
            x = x._take_every(list(arg))
        elif op == "diagonal":
            x = _diagonal_of(x, arg)
        else:  # "unfold": (its shape, dim, size, step)
            x = x.unfold(*arg[1:])
    return x


def _unview(value: UOp, ops: tuple, shapes: list[tuple[int, ...]]) -> tuple[UOp, UOp]:
    """The inverse of a chain of view ops (ops[k] took shapes[k] to shapes[k + 1]): value, of
    the view's shape, placed where the view's elements are in the base, and a mask of those
    elements (False elsewhere). An expanded axis the view reads one element of per base
    element (as a diagonal of it does) gives that element back; the caller refuses views
    that read one base element twice (torch's strides of 0, overlapping windows)."""
    placed, inside = value, UOp.true_like(value)
    for (op, arg), shape in zip(reversed(ops), reversed(shapes[:-1])):
        if op in ("diagonal", "unfold"):  # made of simpler view ops: undo each
            inner, shapes_inner = (_diagonal_ops if op == "diagonal" else _unfold_ops)(shape,
                                                                                      arg)
            placed, inside = _unview_pair(placed, inside, inner, shapes_inner)
        else:
            placed, inside = _unview_pair(placed, inside, ((op, arg),), [shape, placed.shape])
    return placed, inside


def _unview_pair(placed: UOp, inside: UOp, ops: tuple,
                 shapes: list[tuple[int, ...]]) -> tuple[UOp, UOp]:
    """_unview's steps for view ops of no compound (see _unview), on the value and its mask."""
    for (op, arg), shape in zip(reversed(ops), reversed(shapes[:-1])):
        if op == "expand":
            axes = tuple(i for i, (a, b) in enumerate(zip(shape, arg)) if a != b)
            placed, inside = _fold_expanded(placed, inside, axes)
        else:
            placed = _unview_node(placed, op, arg, shape)
            inside = _unview_node(inside, op, arg, shape)
    return placed, inside


def _fold_expanded(placed: UOp, inside: UOp, axes: tuple[int, ...]) -> tuple[UOp, UOp]:
    """The inverse of an expand over axes, where at most one element along them is inside:
    that element (a sum of it and zeros; a float's bits summed as an integer, exact for -0.0
    and nan too) and whether there is one."""
    if placed.dtype.is_bool:
        picked = inside.where(placed, False).cast(dtypes.int32).sum(axes).ne(0)
    elif placed.dtype.is_float:
        bits = _SAME_SIZE_INT[placed.dtype.itemsize]
        picked = inside.where(placed.bitcast(bits), 0).sum(axes).bitcast(placed.dtype)
    else:
        picked = inside.where(placed, 0).sum(axes)
    return picked, inside.cast(dtypes.int32).sum(axes).ne(0)


_SAME_SIZE_INT = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}


def _unview_node(node: UOp, op: str, arg: Any, shape: tuple[int, ...]) -> UOp:
    """The inverse of one view op (not expand, diagonal or unfold) that took shape to node's
    shape, for one node: padding fills zeros (False, for a mask)."""
    if op == "reshape":
        return node.reshape(shape)
    if op == "permute":
        return node.permute(tuple(sorted(range(len(arg)), key=lambda i: arg[i])))
    if op == "flip":
        return node.flip(arg)
    if op == "shrink":
        return node.pad(tuple((b, s - e) for (b, e), s in zip(arg, shape)))
    if op == "pad":
        return node.shrink(tuple((b, b + s) for (b, _), s in zip(arg, shape)))
    if op == "every":  # every arg[d]-th element: spread them back out
        counts = node.shape
        node = node.reshape(tuple(v for c in counts for v in (c, 1)))
        node = node.pad(tuple(p for st in arg for p in ((0, 0), (0, st - 1))))
        node = node.reshape(tuple(c * st for c, st in zip(counts, arg)))
        return node.shrink(tuple((0, s) for s in shape))
    return node  # detach, contiguous: the same elements


class MovementOps(TensorCore):
    """reshape, permute, expand, pad, shrink, flip and what is built from them (transpose,
    flatten, squeeze, cat, ...). Each returns a view recorded in the lazy graph."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Its node in the lazy graph, and for a view the base and the view ops from it (an assign
    # to the view writes through). type(self)(data, device=, dtype=) makes a tensor of a node,
    # an array or a list. The ops here also use where, +, cast, assign, and IndexingOps'
    # _take_every (not restated: a stub here would hide the method of a mixin after this one).
    uop: UOp
    _view: tuple[Any, tuple] | None
    _views: weakref.WeakSet | None  # the live views of this tensor (a base), or None

    @staticmethod
    def _of(uop: UOp) -> Tensor:
        """A tensor for uop, with no checks."""
        raise NotImplementedError

    @property
    def requires_grad(self) -> bool | None: raise NotImplementedError

    @property
    def is_leaf(self) -> bool: raise NotImplementedError

    def _result(self, uop: UOp, *sources: Tensor) -> Tensor:
        """A new tensor for uop, requiring grad when a source does."""
        raise NotImplementedError

    def _axes(self, axis: AxisArg) -> tuple[int, ...]:
        """An axis argument as sorted positive axes."""
        raise NotImplementedError

    @staticmethod
    def ones(*shape: int, dtype: DType | str | None = None, device: str | None = None,
             requires_grad: bool | None = None) -> Tensor:
        """A tensor of ones."""
        raise NotImplementedError

    # --- the movement ops ---

    def _view_result(self: Tensor, uop: UOp, *ops: tuple[str, Any]) -> Tensor:
        """A tensor for uop, a view of self made by ops, that remembers its base (the tensor
        at the bottom of a chain of views) and the ops from it, so assign can write through,
        and that its base knows of, so a write to the base is seen through it."""
        return self._as_view_of_self(self._result(uop, self), *ops)

    def _as_view_of_self(self: Tensor, out: Tensor, *ops: tuple[str, Any]) -> Tensor:
        """Make out a view of self by ops (see _view_result); returns out."""
        root, before = self._view if self._view is not None else (self, ())
        out._view = (root, before + tuple(ops))
        if root._views is None:
            root._views = weakref.WeakSet()
        root._views.add(out)
        return out

    def _refresh_views(self: Tensor) -> None:
        """After this tensor got a new value (assign, setitem, an in-place op): each live view
        of it is built again from the new value by its view ops, so that it shows the write, as
        torch's views do (they share the base's memory)."""
        if not self._views:
            return
        for view in list(self._views):
            if view._view is None or view._view[0] is not self:
                continue  # no longer a view of self (made a parameter of its own)
            view.uop = _apply_view_ops(type(self)._of(self.uop), view._view[1]).uop

    def _assign_through(self: Tensor, value: UOp) -> None:
        """Give this view's base the value `value` (of this view's shape, dtype and device) at
        the elements this view shows, as a write to a view in torch does."""
        assert self._view is not None  # called for views only
        root = self._view[0]
        root.assign(type(root)(self._placed_in_base(value, root.uop.detach())))

    def _placed_in_base(self: Tensor, value: UOp, base: UOp) -> UOp:
        """base (this view's base's value) with value (of this view's shape) at the elements
        this view shows; torch's errors for a view that shows one element twice."""
        assert self._view is not None  # called for views only
        root, ops = self._view
        shapes = [root.shape]  # the shape after each op
        for op, arg in ops:
            shapes.append(_shape_after(shapes[-1], op, arg))
        strides = self._strides()
        if strides is not None and any(st == 0 and n > 1 for st, n in zip(strides, self.shape)):
            raise RuntimeError("unsupported operation: more than one element of the written-to "
                               "tensor refers to a single memory location (an expanded view "
                               f"of shape {shape_str(self.shape)}, strides "
                               f"{shape_str(strides)}). Please clone() the tensor before "
                               "performing the operation.")
        if strides is not None and overlaps(self.shape, strides):
            raise RuntimeError(f"a write through this view (shape {shape_str(self.shape)}, "
                               f"strides {shape_str(strides)}, as overlapping unfold() windows "
                               "make) is not supported: torch writes the elements it shares "
                               "once per window, in an order of its own. Please clone() the "
                               "tensor before performing the operation.")
        placed, inside = _unview(value, ops, shapes)
        return inside.where(placed, base)

    def reshape(self: Tensor, *sizes: int | None | Sequence[int | None]) -> Tensor:
        """The same elements in a new shape; one axis may be -1 (inferred), and None keeps the
        size of the axis at that position (as tinygrad's reshape)."""
        given = argfix(*sizes)
        for i, s in enumerate(given):
            if s is None and i >= self.ndim:
                raise IndexError(f"reshape: None at position {i} keeps dimension {i}, but a "
                                 f"tensor of shape {shape_str(self.shape)} has {self.ndim}")
        shape = _sizes("reshape", tuple(self.shape[i] if s is None else s
                                        for i, s in enumerate(given)))
        if shape.count(-1) > 1:
            raise RuntimeError("only one dimension can be inferred")
        for i, s in enumerate(shape):
            if s < -1:
                raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape "
                                   f"{shape_str(shape)}")
        if -1 in shape:
            known = prod(s for s in shape if s != -1)
            if known == 0 or self.numel() % known:
                raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size "
                                   f"{self.numel()}")
            shape = tuple(self.numel() // known if s == -1 else s for s in shape)
        if prod(shape) != self.numel():
            raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size "
                               f"{self.numel()}")
        if not self._viewable_as(shape):  # torch's reshape copies here: so does tinyfw's
            return self._result(self.uop.reshape(shape), self)
        return self._reshape_view(shape)

    def _reshape_view(self: Tensor, shape: tuple[int, ...]) -> Tensor:
        """self in shape as a view of self, even where torch's strides could not take it (for
        tinyfw's own writes through a layout, as setitem's; such a view has no strides)."""
        return self._view_result(self.uop.reshape(shape), ("reshape", shape))

    def view(self: Tensor, *sizes: Any) -> Tensor:
        """reshape, as a view only: where the view's strides cannot take the new shape (as
        x.T.view(-1)), torch's RuntimeError, not a copy. view(dtype) reads the bits as dtype
        (bitcast)."""
        if len(sizes) == 1 and isinstance(sizes[0], (DType, str)):
            return self.bitcast(sizes[0])
        out = self.reshape(*sizes)
        if out._view is None:  # reshape made a copy
            raise RuntimeError("view size is not compatible with input tensor's size and "
                               f"stride (a view of shape {shape_str(self.shape)} and strides "
                               f"{shape_str(self.stride())} read as {shape_str(out.shape)}: at "
                               "least one dimension spans across two contiguous subspaces). "
                               "Use .reshape(...) instead.")
        return out

    def stride(self: Tensor, dim: int | None = None) -> Any:
        """torch's strides of this tensor (in elements): a fresh tensor's are row-major; a
        view's are those of torch's same view. tinyfw's memory may be laid out otherwise (it is
        lazy): these say how the tensor behaves as a view, as torch's do."""
        strides = self._strides()
        if strides is None:
            raise RuntimeError("this view has no strides: it is a layout tinyfw made for its "
                               "own use (x.clone() has row-major ones)")
        return strides if dim is None else strides[normalize_axis(dim, self.ndim)]

    def is_contiguous(self: Tensor) -> bool:
        """Whether torch's same tensor would be contiguous (row-major, no gaps)."""
        strides = self._strides()
        return strides is not None and is_contiguous(self.shape, strides)

    def _strides(self: Tensor) -> tuple[int, ...] | None:
        """torch's strides of this tensor (see tinyfw/mixin/strides.py); None for a view
        through a layout no strides describe (_reshape_view's)."""
        if self._view is None:
            return torch_contiguous_strides(self.shape)
        root, ops = self._view
        shape = root.shape
        strides: tuple[int, ...] | None = torch_contiguous_strides(root.shape)
        for op, arg in ops:
            after = _shape_after(shape, op, arg)
            if strides is not None:
                strides = strides_after(shape, strides, op, arg, after)
            shape = after
        return strides

    def _viewable_as(self: Tensor, shape: tuple[int, ...]) -> bool:
        """Whether torch views this tensor in shape without a copy (always, for no view)."""
        if self._view is None:
            return True
        strides = self._strides()
        return strides is not None and reshape_strides(self.shape, strides, shape) is not None

    def permute(self: Tensor, *axes: int | Sequence[int]) -> Tensor:
        """The axes in a new order."""
        order = argfix(*axes)
        if len(order) != self.ndim:
            raise RuntimeError(f"permute: number of dims don't match: the tensor has {self.ndim}"
                               f" but {len(order)} were given")
        order = tuple(normalize_axis(o, self.ndim) for o in order)
        if len(set(order)) != len(order):
            raise RuntimeError(f"permute(): repeated dim in {list(order)}")
        return self._view_result(self.uop.permute(order), ("permute", order))

    def expand(self: Tensor, *sizes: int | Sequence[int]) -> Tensor:
        """Size-1 axes repeated (without copying) to a larger shape; -1 keeps an axis."""
        shape = _sizes("expand", argfix(*sizes))
        if len(shape) < self.ndim:
            raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be "
                               f"greater or equal to the number of dimensions in the tensor "
                               f"({self.ndim})")
        lead = len(shape) - self.ndim
        for i, s in enumerate(shape):
            if s == -1 and i < lead:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            if s < -1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed: sizes "
                                   f"must be non-negative, or -1 to keep an axis. Target sizes: "
                                   f"{shape_str(shape)}.  Tensor sizes: {shape_str(self.shape)}")
        own = (1,) * lead + self.shape
        new = tuple(o if s == -1 else s for s, o in zip(shape, own))
        for i, (o, s) in enumerate(zip(own, new)):
            if o != s and o != 1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the "
                                   f"existing size ({o}) at non-singleton dimension {i}.  "
                                   f"Target sizes: {shape_str(shape)}.  Tensor sizes: "
                                   f"{shape_str(self.shape)}")
        return self._view_result(self.uop.reshape(own).expand(new), ("reshape", own),
                                 ("expand", new))

    def pad(self: Tensor, padding: Sequence[int] | Sequence[tuple[int, int] | None],
            mode: str | float = "constant", value: float = 0.0) -> Tensor:
        """Pad: ((before, after), ...) per axis, or torch's flat (left, right, ...) starting
        from the last axis. Negative amounts crop. mode is torch's: "constant" (with value),
        "reflect", "replicate" or "circular"; a number there is the value (x.pad(p, 1.0), as
        tinyfw took it before mode came)."""
        if not isinstance(mode, str):
            value = mode
            mode = "constant"
        if mode not in ("constant", "reflect", "replicate", "circular"):
            raise NotImplementedError(f"Unrecognised padding mode {mode}")
        if mode != "constant" and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        if any(isinstance(p, float) or (isinstance(p, (tuple, list)) and
                                        any(isinstance(v, float) for v in p)) for p in padding):
            raise TypeError(f"pad(): argument 'pad' must be tuple of ints, but found a float in "
                            f"{tuple(padding)}")
        if _flat_padding(padding):
            if len(padding) % 2 or len(padding) // 2 > self.ndim:
                raise RuntimeError("Padding length must be divisible by 2 and at most twice the "
                                   "number of dimensions of the input")
            pairs: list[tuple[int, ...]] = [(0, 0)] * self.ndim
            for i in range(len(padding) // 2):
                pairs[self.ndim - 1 - i] = (padding[2 * i], padding[2 * i + 1])
        else:
            if len(padding) != self.ndim:
                raise RuntimeError(f"pad needs one (before, after) per axis: {self.ndim}, got "
                                   f"{len(padding)}")
            pairs = [(0, 0) if p is None else tuple(p) for p in padding]
        if mode != "constant":
            return self._pad_mode([(b, a) for b, a in pairs], mode)
        for i, ((b, a), s) in enumerate(zip(pairs, self.shape)):
            if -min(b, 0) > s + min(a, 0):  # the crops overlap: nothing left to pad
                raise RuntimeError(f"pad {tuple(padding)} of a tensor of shape "
                                   f"{shape_str(self.shape)} crops more than the {s} elements "
                                   f"of dimension {i}: the cropped size must be non-negative")
        crop = tuple((-min(b, 0), s + min(a, 0)) for (b, a), s in zip(pairs, self.shape))
        x = self.shrink(crop)
        grow = tuple((max(b, 0), max(a, 0)) for b, a in pairs)
        if value == 0:
            return x._result(x.uop.pad(grow), x)
        inside = type(self).ones(*x.shape, dtype=dtypes.bool, device=self.device)
        inside = inside._result(inside.uop.pad(grow))
        fill = bool(value) if x.dtype.is_bool else int(value) if x.dtype.is_int else value
        return inside.where(x._result(x.uop.pad(grow), x), fill)  # the value takes x's dtype

    def shrink(self: Tensor, bounds: Sequence[tuple[int, int] | None]) -> Tensor:
        """Keep [start, end) of each axis (None keeps the whole axis)."""
        if len(bounds) != self.ndim:
            raise RuntimeError(f"shrink needs one (start, end) per axis: {self.ndim}")
        full = tuple((0, s) if b is None else (_int_arg("shrink", b[0]), _int_arg("shrink", b[1]))
                     for b, s in zip(bounds, self.shape))
        for (b, e), s in zip(full, self.shape):
            if not 0 <= b <= e <= s:
                raise RuntimeError(f"shrink bounds {full} out of range for shape "
                                   f"{shape_str(self.shape)}: each needs 0 <= start <= end <= "
                                   "size")
        return self._view_result(self.uop.shrink(full), ("shrink", full))

    def shrink_to(self: Tensor, *shape: int | None | Sequence[int | None]) -> Tensor:
        """The first shape[d] elements of each axis d (None keeps it), tinygrad's shrink_to."""
        sizes = argfix(*shape)
        if len(sizes) != self.ndim:
            raise RuntimeError(f"shrink_to needs one size per axis: {self.ndim}, got {len(sizes)}")
        return self.shrink([None if s is None else (0, s) for s in sizes])

    def pad_to(self: Tensor, *shape: int | None | Sequence[int | None],
               value: float = 0.0) -> Tensor:
        """Pad at the end of each axis d up to shape[d] (None keeps it), tinygrad's pad_to."""
        sizes = argfix(*shape)
        if len(sizes) != self.ndim:
            raise RuntimeError(f"pad_to needs one size per axis: {self.ndim}, got {len(sizes)}")
        for d, (s, want) in enumerate(zip(self.shape, sizes)):
            if want is not None and want < s:
                raise RuntimeError(f"pad_to {tuple(sizes)} is smaller than the shape "
                                   f"{shape_str(self.shape)} in dimension {d}")
        pairs = [(0, 0 if want is None else want - s) for s, want in zip(self.shape, sizes)]
        return self if all(a == 0 for _, a in pairs) else self.pad(pairs, value=value)

    def rearrange(self: Tensor, formula: str, **sizes: int) -> Tensor:
        """einops' rearrange: "b (h w) c -> b h w c", with sizes for the splits (h=2)."""
        return rearrange(self, formula, **sizes)

    def flip(self: Tensor, axis: int | Sequence[int]) -> Tensor:
        """The elements in reverse order along the given axes."""
        axes = self._axes(axis)
        given = [axis] if isinstance(axis, int) else list(axis)
        if len(axes) != len(given):
            repeated = next(a for a in axes if [normalize_axis(g, self.ndim)
                                                for g in given].count(a) > 1)
            raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
        mask = tuple(i in axes for i in range(self.ndim))
        return self._result(self.uop.flip(mask), self)  # a copy, as torch's, not a view

    def _flip_view(self: Tensor, axes: Sequence[int]) -> Tensor:
        """The elements in reverse order along axes, as a view of self (x[::-1], numpy's)."""
        mask = tuple(i in axes for i in range(self.ndim))
        return self._view_result(self.uop.flip(mask), ("flip", mask))

    def transpose(self: Tensor, dim0: int = 1, dim1: int = 0) -> Tensor:
        order = list(range(self.ndim))
        a, b = normalize_axis(dim0, self.ndim), normalize_axis(dim1, self.ndim)
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    @property
    def T(self: Tensor) -> Tensor:
        return self.permute(tuple(reversed(range(self.ndim))))

    def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Axes start_dim..end_dim merged into one."""
        if self.ndim == 0:
            return self.reshape(1)
        s, e = normalize_axis(start_dim, self.ndim), normalize_axis(end_dim, self.ndim)
        return self.reshape(self.shape[:s] + (prod(self.shape[s:e + 1]),) + self.shape[e + 1:])

    def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
        d = normalize_axis(dim, self.ndim)
        return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d + 1:])

    def squeeze(self: Tensor, dim: AxisArg = None) -> Tensor:
        """Size-1 axes removed (only the given ones, when dim is given)."""
        if dim is None:
            return self.reshape(tuple(s for s in self.shape if s != 1))
        if self.ndim == 0:
            return self
        axes = self._axes(dim)
        return self.reshape(tuple(s for i, s in enumerate(self.shape)
                                  if not (i in axes and s == 1)))

    def unsqueeze(self: Tensor, dim: int) -> Tensor:
        """A new size-1 axis at dim."""
        d = normalize_axis(dim, self.ndim + 1)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def repeat(self: Tensor, *counts: int | Sequence[int]) -> Tensor:
        """The tensor tiled repeats[i] times along each axis (torch.Tensor.repeat)."""
        repeats = _sizes("repeat", argfix(*counts))
        if len(repeats) < self.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than "
                               f"number of dimensions of tensor: {shape_str(repeats)} for a "
                               f"tensor of shape {shape_str(self.shape)}")
        if any(r < 0 for r in repeats):
            raise RuntimeError(f"Trying to create tensor with negative dimension "
                               f"{min(repeats)}: repeats {shape_str(repeats)}")
        x = self.reshape((1,) * (len(repeats) - self.ndim) + self.shape)
        spread = x.reshape(tuple(v for s in x.shape for v in (1, s)))
        tiled = spread.expand(tuple(v for r, s in zip(repeats, x.shape) for v in (r, s)))
        out = tiled.reshape(tuple(r * s for r, s in zip(repeats, x.shape)))
        out._view = None  # a copy, as torch's repeat, not a view of self
        return out

    def cat(self: Tensor | Sequence[Tensor] | None = None, *args: Tensor,
            dim: int = 0) -> Tensor:
        """Tensors joined along an existing axis: each padded into place, then
        added (ints) or selected (floats, which keeps -0.0).
        tinygrad's signature: a.cat(b, c) and Tensor.cat(a, b, c) (a is self); a list works
        too, Tensor.cat([a, b, c]), as torch.cat takes one."""
        tensors = _tensor_list(self, args)
        if not tensors:
            raise ValueError("cat(): expected a non-empty list of Tensors")
        for i, t in enumerate(tensors):
            if t.ndim == 0:
                raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                                   "concatenated")
        first = tensors[0]
        d = normalize_axis(dim, first.ndim)
        for t in tensors[1:]:
            if t.ndim != first.ndim or any(a != b for i, (a, b) in
                                           enumerate(zip(t.shape, first.shape)) if i != d):
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Got "
                                   f"{shape_str(first.shape)} and {shape_str(t.shape)}")
        total, out, offset = sum(t.shape[d] for t in tensors), None, 0
        for t in tensors:
            pads = [(0, 0)] * t.ndim
            pads[d] = (offset, total - offset - t.shape[d])
            placed = t.pad(pads)
            if out is None:
                out = placed
            elif placed.dtype.is_float or out.dtype.is_float:
                # a select, not an add: 0.0 + -0.0 is 0.0, and cat keeps -0.0 as torch does.
                # The parts so far come first in the where, so they are computed first.
                done = list(t.shape)
                done[d] = offset
                covered = type(t).ones(*done, dtype=dtypes.bool, device=t.device)
                covered = covered.pad([(0, 0)] * d + [(0, total - offset)]
                                      + [(0, 0)] * (t.ndim - d - 1))
                out = covered.where(out, placed)
            else:
                out = out + placed
            offset += t.shape[d]
        assert out is not None  # tensors is not empty
        return out

    def cat_(self: Tensor, *others: Tensor, dim: int = 0) -> Tensor:
        return type(self).cat(self, *others, dim=dim)

    def stack(self: Tensor | Sequence[Tensor] | None = None, *args: Tensor,
              dim: int = 0) -> Tensor:
        """Tensors of one shape joined along a new axis (a.stack(b), Tensor.stack(a, b) or
        Tensor.stack([a, b]))."""
        tensors = _tensor_list(self, args)
        if not tensors:
            raise ValueError("stack expects a non-empty TensorList")
        for i, t in enumerate(tensors):
            if t.shape != tensors[0].shape:
                raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                                   f"{shape_str(tensors[0].shape)} at entry 0 and "
                                   f"{shape_str(t.shape)} at entry {i}")
        d = normalize_axis(dim, tensors[0].ndim + 1)
        return type(tensors[0]).cat(*[t.unsqueeze(d) for t in tensors], dim=d)

    def chunk(self: Tensor, chunks: int, dim: int = 0) -> list[Tensor]:
        """At most `chunks` pieces of equal size (the last may be smaller) along dim."""
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        d = normalize_axis(dim, self.ndim)
        step = -(-self.shape[d] // chunks)
        return self.split(step, d)

    def split(self: Tensor, size: int | Sequence[int], dim: int = 0) -> list[Tensor]:
        """Pieces of `size` along dim (the last may be smaller), or, for a list of sizes, one
        piece of each size (they must add up to the size of dim)."""
        d = normalize_axis(dim, self.ndim)
        n = self.shape[d]
        if isinstance(size, (list, tuple)):
            sizes = [_int_arg("split_with_sizes", s) for s in size]
            if any(s < 0 for s in sizes):
                raise RuntimeError("split_with_sizes expects split_sizes have only non-negative "
                                   f"entries, but got split_sizes={sizes}")
            if sum(sizes) != n:
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                                   f"(input tensor's size at dimension {d}), but got "
                                   f"split_sizes={sizes}")
        else:
            if not isinstance(size, int) or isinstance(size, bool):
                raise TypeError(f"split(): argument 'split_size' must be int, not "
                                f"{type(size).__name__}")
            if size <= 0:
                raise RuntimeError(f"split expects split_size be non-negative, but got {size}")
            sizes = [min(size, n - start) for start in range(0, max(n, 1), size)]
        out, start = [], 0
        for s in sizes:
            bounds: list[tuple[int, int] | None] = [None] * self.ndim
            bounds[d] = (start, start + s)
            out.append(self.shrink(bounds))
            start += s
        return out

    def meshgrid(self: Tensor, *args: Tensor, indexing: str = "ij") -> tuple[Tensor, ...]:
        """Coordinate grids of self and args (0-D or 1-D): `x.meshgrid(y)` or
        `Tensor.meshgrid(x, y)`; "xy" swaps the first two axes of the grids."""
        if indexing not in ("ij", "xy"):
            raise RuntimeError('torch.meshgrid: indexing must be one of "xy" or "ij", but '
                               f"received: {indexing}")
        tensors = (self, *args)
        for t in tensors:
            if t.ndim > 1:
                raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                                   f"but got a tensor of shape {shape_str(t.shape)}")
            if t.dtype != self.dtype or t.device != self.device:
                raise RuntimeError("meshgrid expects all tensors to have the same dtype and "
                                   f"device, got {t.dtype.name} on {t.device} and "
                                   f"{self.dtype.name} on {self.device}")
        sizes = [t.numel() for t in tensors]
        axes = list(range(len(tensors)))
        if indexing == "xy" and len(tensors) > 1:
            axes[0], axes[1] = 1, 0
        shape = tuple(sizes[axes.index(i)] for i in range(len(tensors)))
        grids = []
        for t, axis in zip(tensors, axes):
            view = [1] * len(tensors)
            view[axis] = t.numel()
            grids.append(t.reshape(view).expand(shape))
        return tuple(grids)

    # --- shapes built from the movement ops: triangles, diagonals, rolls, windows, padding ---

    def _fill_zero(self: Tensor) -> bool | int | float:
        """Zero as a Python value of this tensor's kind, so a where keeps the dtype."""
        return False if self.dtype.is_bool else 0 if not self.dtype.is_float else 0.0

    def _triangle(self: Tensor, name: str, diagonal: int, lower: bool) -> Tensor:
        """tril (lower) or triu of the last two axes: the other elements set to 0."""
        if self.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        rows, cols = self.shape[-2:]
        k = max(-rows - 1, min(cols + 1, _int_arg(name, diagonal)))  # beyond: all or nothing
        row = type(self).arange(rows, device=self.device).reshape(rows, 1)
        col = type(self).arange(cols, device=self.device).reshape(1, cols)
        keep = (col - row <= k) if lower else (col - row >= k)
        return keep.where(self, self._fill_zero())

    def tril(self: Tensor, diagonal: int = 0) -> Tensor:
        """The lower triangle (on and below the diagonal-th diagonal) of the last two axes."""
        return self._triangle("tril", diagonal, lower=True)

    def triu(self: Tensor, diagonal: int = 0) -> Tensor:
        """The upper triangle (on and above the diagonal-th diagonal) of the last two axes."""
        return self._triangle("triu", diagonal, lower=False)

    def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The offset-th diagonal of axes dim1 and dim2, as a new last axis; a view (writes
        to it go to self), picked as every (d + 1)-th element of the flattened d x d square."""
        a, b = normalize_axis(dim1, self.ndim), normalize_axis(dim2, self.ndim)
        if a == b:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        offset = _int_arg("diagonal", offset)
        rest = [i for i in range(self.ndim) if i not in (a, b)]
        x = self.permute(rest + [a, b])
        rows, cols = x.shape[-2:]
        r0, c0 = (0, min(offset, cols)) if offset >= 0 else (min(-offset, rows), 0)
        d = max(0, min(rows - r0, cols - c0))
        arg = (len(rest), r0, c0, d)
        return x._view_result(_diagonal_of(x._of(x.uop), arg).uop, ("diagonal", arg))

    def diag(self: Tensor, diagonal: int = 0) -> Tensor:
        """A 1-D tensor as the diagonal-th diagonal of a square matrix, or a matrix's diagonal."""
        if self.ndim == 2:
            return self.diagonal(diagonal)
        if self.ndim != 1:
            raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")
        k, n = _int_arg("diag", diagonal), self.shape[0]
        # each element followed by n zeros, cut to n * n: the elements land n + 1 apart
        spread = self.reshape(n, 1).pad(((0, 0), (0, n))).reshape(n * (n + 1))
        square = spread.shrink(((0, n * n),)).reshape(n, n)
        return square.pad(((0, k), (k, 0)) if k >= 0 else ((-k, 0), (0, -k)))

    def roll(self: Tensor, shifts: int | Sequence[int],
             dims: int | Sequence[int] | None = None) -> Tensor:
        """The elements shifted along dims, those pushed off the end coming back at the start
        (of the flattened tensor when dims is None)."""
        shift_list = [shifts] if isinstance(shifts, int) else list(shifts)
        if dims is None:
            if len(shift_list) != 1:
                raise RuntimeError(f"shifts and dimensions must align. shifts: "
                                   f"{len(shift_list)}, dims:0")
            return self.flatten().roll(shift_list[0], 0).reshape(self.shape)
        dim_list = [dims] if isinstance(dims, int) else list(dims)
        if len(shift_list) != len(dim_list):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shift_list)}, "
                               f"dims:{len(dim_list)}")
        if self.ndim == 0:
            raise IndexError(f"Dimension specified as {dim_list[0]} but tensor has no dimensions")
        x = self
        for shift, dim in zip(shift_list, dim_list):
            d, n = normalize_axis(dim, self.ndim), self.shape[normalize_axis(dim, self.ndim)]
            if n == 0 or _int_arg("roll", shift) % n == 0:
                continue
            k = shift % n  # two copies side by side, cut where the last k come first
            twice = x.repeat([2 if i == d else 1 for i in range(self.ndim)])
            x = twice.shrink([(n - k, 2 * n - k) if i == d else None for i in range(self.ndim)])
        return x

    def unfold(self: Tensor, dim: int, size: int, step: int) -> Tensor:
        """The windows of `size` elements along dim, `step` apart: dim becomes the number of
        windows, and a new last axis of `size` holds each window (torch.Tensor.unfold)."""
        if self.ndim == 0:
            normalize_axis(dim, 0)
            return self.reshape(1).unfold(0, size, step).reshape(-1)
        d = normalize_axis(dim, self.ndim)
        s, size, step = self.shape[d], _int_arg("unfold", size), _int_arg("unfold", step)
        if size > s:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {s} but size is "
                               f"{size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if size < 0:
            raise RuntimeError(f"size is {size} but must be >= 0")
        x = self.permute([i for i in range(self.ndim) if i != d] + [d])
        lead, keep, n = x.shape[:-1], [None] * (self.ndim - 1), (s - size) // step + 1
        # `size` copies of the row, one after another, read in rows of s + 1: row j starts
        # at element j of the row; every step-th of its first elements are the windows' j-th
        copies = x.reshape(lead + (1, s)).expand(lead + (size, s)).reshape(lead + (size * s,))
        rows = copies.pad(keep + [(0, size)]).reshape(lead + (size, s + 1))
        rows = rows.shrink(keep + [None, (0, (n - 1) * step + 1)])
        picked = rows._take_every([1] * self.ndim + [step])  # (..., size, n)
        order = list(range(d)) + [self.ndim] + list(range(d, self.ndim - 1)) + [self.ndim - 1]
        out = picked.permute(order)
        # windows overlap: a view to read, not to write through
        return self._as_view_of_self(out, ("unfold", (out.shape, d, size, step)))

    def repeat_interleave(self: Tensor, repeats: int, dim: int | None = None) -> Tensor:
        """Each element repeated `repeats` times in a row along dim (of the flattened tensor
        when dim is None)."""
        repeats = _int_arg("repeat_interleave", repeats)
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        x, d = (self.flatten(), 0) if dim is None else (self, normalize_axis(dim, self.ndim))
        if x.ndim == 0:
            x = x.reshape(1)
        shape = x.shape
        wide = x.reshape(shape[:d + 1] + (1,) + shape[d + 1:])
        wide = wide.expand(shape[:d + 1] + (repeats,) + shape[d + 1:])
        out = wide.reshape(shape[:d] + (shape[d] * repeats,) + shape[d + 1:])
        out._view = None  # a copy, as torch's, not a view of self
        return out

    def clone(self: Tensor, device: str | None = None) -> Tensor:
        """A copy of the value (on device, when given): gradients flow back to self."""
        source = self if device is None else self.to(device)
        return source._result(source.uop.contiguous(), source)  # not a view, as contiguous()

    def _pad_mode(self: Tensor, pairs: list[tuple[int, int]], mode: str) -> Tensor:
        """pad with mode "reflect", "replicate" or "circular", one axis at a time. A negative
        amount crops: after reflecting or replicating, before wrapping around (as torch)."""
        x = self
        for d, (b, a) in enumerate(pairs):
            n = x.shape[d]
            if mode == "reflect" and (b >= n or a >= n) and (b > 0 or a > 0):
                raise RuntimeError(f"Argument #4: Padding size should be less than the "
                                   f"corresponding input dimension, but got: padding ({b}, {a})"
                                   f" at dimension {d} of input {shape_str(self.shape)}")
            if mode == "replicate" and n == 0 and (b > 0 or a > 0):
                raise RuntimeError(f"replicate padding of dimension {d} of size 0 (input "
                                   f"{shape_str(self.shape)}): there is no value to replicate")
            if mode != "circular" and (b, a) != (0, 0) and n + b + a <= 0:
                raise RuntimeError(f"input (size {n} of dimension {d}) is too small. "
                                   f"Calculated output size: {n + b + a}")
            if mode == "circular":
                if n + b + a < 0:
                    raise RuntimeError(f"Negative padding value is resulting in an empty "
                                       f"dimension: padding ({b}, {a}) of size {n}")
                if n + b + a == 0:  # cropped to nothing
                    x = _along(x, d, 0, 0)
                    continue
                x = _along(x, d, min(max(-b, 0), n), max(n - max(-a, 0), 0))
                n = x.shape[d]
                if b > n or a > n:
                    raise RuntimeError("Padding value causes wrapping around more than once.")
            before, after = max(b, 0), max(a, 0)
            if mode == "reflect":
                left = _along(x, d, 1, before + 1).flip(d) if before else x
                right = _along(x, d, n - 1 - after, n - 1).flip(d) if after else x
            elif mode == "replicate":
                left = _along(x, d, 0, 1).expand([before if i == d else -1 for i in
                                                  range(x.ndim)]) if before else x
                right = _along(x, d, n - 1, n).expand([after if i == d else -1 for i in
                                                       range(x.ndim)]) if after else x
            else:
                left, right = _along(x, d, n - before, n), _along(x, d, 0, after)
            pieces = ([left] if before else []) + [x] + ([right] if after else [])
            x = type(self).cat(*pieces, dim=d) if len(pieces) > 1 else x
            if mode != "circular":
                x = _along(x, d, max(-b, 0), x.shape[d] - max(-a, 0))
        return x

    @staticmethod
    def einsum(formula: str, *operands: Tensor | Sequence[Tensor],
               dtype: DType | str | None = None) -> Tensor:
        """Sums of products of the operands' elements, as torch.einsum's subscripts say:
        implicit output (the subscripts seen once, sorted), repeated subscripts in one operand
        (its diagonal), '...' for broadcast axes, and size-1 axes broadcast."""
        return einsum(formula, *operands, dtype=dtype)


def _along(x: Tensor, dim: int, start: int, end: int) -> Tensor:
    """Elements start..end of axis dim of x (the other axes whole)."""
    return x.shrink([(start, end) if i == dim else None for i in range(x.ndim)])


def _diagonal_ops(shape: tuple[int, ...], arg: tuple[int, int, int, int]) \
        -> tuple[tuple, list[tuple[int, ...]]]:
    """The view ops that take the diagonal of the last two axes of shape (arg: the number of
    axes before them, the diagonal's first row and column, its length), with the shape after
    each: a d x d square cut out, flattened, every (d + 1)-th element."""
    lead, r0, c0, d = arg
    ops = (("shrink", tuple((0, s) for s in shape[:lead]) + ((r0, r0 + d), (c0, c0 + d))),
           ("reshape", shape[:lead] + (d * d,)), ("every", (1,) * lead + (d + 1,)))
    shapes = [shape]
    for op, op_arg in ops:
        shapes.append(_shape_after(shapes[-1], op, op_arg))
    return ops, shapes


def _unfold_ops(shape: tuple[int, ...], arg: tuple) -> tuple[tuple, list[tuple[int, ...]]]:
    """The view ops of unfold(dim, size, step) of a tensor of shape (arg: its result's shape,
    dim, size, step), with the shape after each, as MovementOps.unfold makes it: dim moved
    last, `size` copies of each row (an expand) read in rows one element longer, so row j
    starts at element j; every step-th of its first elements; the axes put in place."""
    out_shape, d, size, step = arg
    nd, s, n = len(shape), shape[d], out_shape[d]
    lead = tuple(x for i, x in enumerate(shape) if i != d)
    keep = tuple((0, x) for x in lead)
    order = list(range(d)) + [nd] + list(range(d, nd - 1)) + [nd - 1]
    ops = (("permute", tuple(i for i in range(nd) if i != d) + (d,)),
           ("reshape", lead + (1, s)), ("expand", lead + (size, s)),
           ("reshape", lead + (size * s,)), ("pad", tuple((0, 0) for _ in lead) + ((0, size),)),
           ("reshape", lead + (size, s + 1)), ("shrink", keep + ((0, size),
                                                                 (0, (n - 1) * step + 1))),
           ("every", (1,) * nd + (step,)), ("permute", tuple(order)))
    shapes = [shape]
    for op, op_arg in ops:
        shapes.append(_shape_after(shapes[-1], op, op_arg))
    return ops, shapes


def _diagonal_of(x: Tensor, arg: tuple[int, int, int, int]) -> Tensor:
    """x's diagonal over its last two axes (see _diagonal_ops), with no view recorded."""
    for op, op_arg in _diagonal_ops(x.shape, arg)[0]:
        x = x._of(x.uop.shrink(op_arg) if op == "shrink" else x.uop.reshape(op_arg)) \
            if op != "every" else x._take_every(list(op_arg))
    return x


def _shape_after(shape: tuple[int, ...], op: str, arg: Any) -> tuple[int, ...]:
    """The shape one view op of a chain (see MovementOps._view_result) makes of shape."""
    if op == "diagonal":
        return _diagonal_ops(shape, arg)[1][-1]
    if op == "every":
        return tuple(-(-s // st) for s, st in zip(shape, arg))
    if op == "permute":
        return tuple(shape[i] for i in arg)
    if op == "unfold":
        return arg[0]
    if op == "pad":
        return tuple(x + b + a for x, (b, a) in zip(shape, arg))
    if op == "shrink":
        return tuple(e - b for b, e in arg)
    # reshape and expand: arg is the new shape
    return shape if op in ("flip", "detach", "contiguous") else tuple(arg)


def _einsum_terms(formula: str, shapes: list[tuple[int, ...]]) -> tuple[list[list[str]], list[str]]:
    """The labels of each operand's axes and of the output, from torch's einsum subscripts
    (spaces ignored). The axes of '...' get labels '.0', '.1', ... aligned to the right."""
    for i, ch in enumerate(formula):
        if not (ch.isascii() and ch.isalpha()) and ch not in " ,.->":
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               "string, subscripts must be in [a-zA-Z]")
    lhs, arrow, rhs = formula.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(shapes) != len(terms):
        few = "fewer" if len(shapes) < len(terms) else "more"
        raise RuntimeError(f"einsum(): {few} operands were provided than specified in the "
                           "equation")
    split = []
    for i, term in enumerate(terms):
        parts = term.split("...")
        if len(parts) > 2 or any("." in p for p in parts):
            raise RuntimeError(f"einsum(): found '.' for operand {i} that is not part of any "
                               "ellipsis")
        letters = len(term) - 3 * (len(parts) - 1)
        if len(parts) == 1 and letters != len(shapes[i]):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({letters})"
                               f" does not match the number of dimensions ({len(shapes[i])}) "
                               f"for operand {i} and no ellipsis was given")
        if letters > len(shapes[i]):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({letters})"
                               f" is more than the number of dimensions ({len(shapes[i])}) for"
                               f" operand {i}")
        split.append((parts, len(shapes[i]) - letters))
    wide = max((e for parts, e in split if len(parts) == 2), default=0)
    dots = [f".{j}" for j in range(wide)]
    labels = [list(parts[0]) + (dots[wide - e:] if len(parts) == 2 else []) +
              (list(parts[1]) if len(parts) == 2 else []) for parts, e in split]
    if not arrow:
        once = sorted(c for c in set(lhs) if c.isalpha() and lhs.count(c) == 1)
        return labels, dots + once
    if "." in rhs.replace("...", "", 1):
        raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis")
    before, _, after = rhs.partition("...")
    out = list(before) + (dots if "..." in rhs else []) + list(after)
    seen = {c for term in labels for c in term}
    for c in rhs.replace(".", ""):
        if rhs.count(c) > 1:
            raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the "
                               "output")
        if c not in seen:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                               "equation for any input operand")
    return labels, out


def einsum(formula: str, *operands: Tensor | Sequence[Tensor],
           dtype: DType | str | None = None) -> Tensor:
    """Tensor.einsum: each operand's repeated labels made a diagonal, every operand laid out
    over all the labels (size 1 where it has none), multiplied, summed over the labels not
    in the output, and put in the output's order."""
    first = operands[0] if len(operands) == 1 else None
    given = first if isinstance(first, (list, tuple)) else operands
    xs: list[Tensor] = [x for x in given if not isinstance(x, (list, tuple))]
    if len(xs) != len(given):
        raise TypeError("einsum(): pass the operands as tensors, or as one list of tensors")
    labels, out = _einsum_terms(formula, [x.shape for x in xs])
    for i, x in enumerate(xs):
        if x.dtype != xs[0].dtype:
            raise RuntimeError(f"einsum(): expected scalar type {xs[0].dtype.name} but found "
                               f"{x.dtype.name} (operand {i})")
        term = labels[i]
        for c in dict.fromkeys(term):
            while term.count(c) > 1:  # the diagonal of the two axes, as a new last axis
                j = term.index(c)
                k = term.index(c, j + 1)
                if x.shape[j] != x.shape[k]:
                    raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} "
                                       f"but the sizes don't match, {x.shape[k]} != "
                                       f"{x.shape[j]}")
                x = x.diagonal(0, j, k)
                term = [t for n, t in enumerate(term) if n not in (j, k)] + [c]
        xs[i], labels[i] = x, term
    alphabet = list(dict.fromkeys(out + [c for term in labels for c in term]))
    sizes: dict[str, int] = {}
    for i, (x, term) in enumerate(zip(xs, labels)):
        for c, s in zip(term, x.shape):
            if sizes.get(c, 1) not in (1, s) and s != 1:
                raise RuntimeError(f"einsum(): subscript {c} has size {s} for operand {i} which"
                                   f" does not broadcast with previously seen size {sizes[c]}")
            sizes[c] = s if s != 1 else sizes.get(c, 1)
    laid = []
    for x, term in zip(xs, labels):
        x = x.permute(sorted(range(len(term)), key=lambda n: alphabet.index(term[n])))
        laid.append(x.reshape(tuple(x.shape[sorted(term, key=alphabet.index).index(c)]
                                    if c in term else 1 for c in alphabet)))
    product = laid[0]
    for x in laid[1:]:
        product = product * x
    if dtype is not None:
        product = product.cast(to_dtype(dtype))
    product = product.expand(tuple(sizes.get(c, 1) for c in alphabet))
    summed = tuple(n for n, c in enumerate(alphabet) if c not in out)
    if summed:
        keep = None if product.dtype.is_float else product.dtype
        product = product.sum(summed, dtype=keep)
    return product  # the output's labels come first in alphabet, in the output's order
