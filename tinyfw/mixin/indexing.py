"""Indexing: x[index] read and written, gather, scatter, scatter_reduce, masked_fill,
masked_select and nonzero, with torch's semantics.

How a pick is made in the graph (differentiable, and safe in a TinyJit capture, as tinygrad's):
the advanced (tensor, list, array) indices of x[...] become one linear index L into the K
elements of the indexed axes; `L[n] == arange(K)` is a one-hot mask (N, K), and the rows of x
(laid out (K, R)) where the mask is true, -inf elsewhere, maxed over K, are the N picks, with
their exact bits (a sum would start at 0.0 and turn a -0.0 into 0.0; ints and bools are summed).
The where and the max fuse into one reduce kernel, so the (N, K, R) product is never held in
memory: memory is that of the mask and the result, the work N * K * R. The gradient is the
sum's, all to the place picked (see _selected).

What reads data on the host (and so is refused inside a TinyJit capture, as torch's data-
dependent shapes are): a boolean mask index (its True count is the result's size), nonzero and
masked_select. A list or numpy index is host data already: it is checked at once. A tensor
index is read to check it (a small read, as torch checks at once); inside a TinyJit capture,
where nothing may be read, it is checked when the result is computed instead (a deferred check,
tinyfw/engine/realize.py). A pick that needs no gradient and would cost more than _HOST_PICK_WORK
elements of work is made on the host outside a capture (the same values, much faster for a
batch of rows of a big data set); inside a capture it stays in the graph.
"""
from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from tinyfw.device import Device
from tinyfw.dtype import DType, dtypes
from tinyfw.helpers import normalize_axis, prod, shape_str
from tinyfw.engine.capture import capture_in_this_thread
from tinyfw.mixin.core import TensorCore, index_dtype
from tinyfw.mixin import derived

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from tinyfw.tensor import Tensor
    from tinyfw.uop.ops import UOp

# Above this many elements of one-hot work (N * K * R), a pick that needs no gradient is made on
# the host when no TinyJit is capturing (see the module's docstring).
_HOST_PICK_WORK = 1 << 24
_FLOAT_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                "are valid indices (got {})")
_TENSOR_INDEX_DTYPE = "tensors used as indices must be long, int, byte or bool tensors"
# The index dtypes torch takes for gather and scatter.
_INDEX_DTYPES = (dtypes.int32, dtypes.int64)


class _Adv:
    """An advanced index of one axis of the tensor basic indexing leaves (y): its position
    there, the axis' size, the axis of x it indexes (for messages), and the index itself (host
    ints, or an integer tensor)."""
    __slots__ = ("axis", "size", "dim", "index")

    def __init__(self, axis: int, size: int, dim: int, index: np.ndarray | Tensor):
        self.axis, self.size, self.dim, self.index = axis, size, dim, index


def _is_tensor(x: Any) -> TypeIs[Tensor]:
    """Whether x is a tensor (of the class the mixins are in)."""
    return hasattr(x, "uop")


def _index_tuple(index: Any) -> tuple:
    """index as the tuple of entries torch reads it as: a tuple is one, and so is a list (not a
    numpy array) of fewer than 32 items that holds a tensor, a sequence, a slice, None or '...'
    (torch's legacy reading, deprecated there but still what it does: x[[[0, 1], [1, 2]]] is
    x[[0, 1], [1, 2]]); anything else is a single entry."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and len(index) < 32 and any(
            _is_tensor(v) or v is None or v is Ellipsis
            or isinstance(v, (slice, list, tuple, range, str, bytes, np.ndarray)) for v in index):
        return tuple(index)
    return (index,)


def _host_ints(what: Any) -> np.ndarray:
    """A list, tuple or numpy index as an array of bools (a mask) or of int64, as torch makes
    its index tensor: floats are truncated toward 0 (a nan or a float past int64 in a list
    raises torch's RuntimeError; in a numpy array it is cast, as torch casts it, and then out of
    bounds), a complex number in a list raises TypeError."""
    if any(_is_tensor(v) for v in (what if isinstance(what, (list, tuple)) else ())):
        raise IndexError("a list index holds numbers, not tensors: index with one tensor")
    if isinstance(what, (list, tuple)) and (bad := _numpy_float_in(what)) is not None:
        raise TypeError(f"'numpy.{type(bad).__name__}' object cannot be interpreted as an "
                        "integer (a list index truncates Python floats only, as torch)")
    try:
        arr = np.asarray(what)
    except ValueError as e:  # a ragged list
        raise IndexError(f"a list index must be rectangular: {e}") from None
    if arr.dtype.kind in "biu":
        return arr
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "fc" or (arr.dtype.kind == "c" and not isinstance(what, np.ndarray)):
        raise TypeError(f"an index of {arr.dtype.name} values: a list index holds ints, floats "
                        "or bools")
    if not isinstance(what, np.ndarray):
        finite = np.isfinite(arr) & (np.abs(arr) < 2.0 ** 63)
        if not finite.all():
            raise RuntimeError("value cannot be converted to type int64 without overflow")
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)  # the real part, as torch
        return arr.astype(np.int64)


def _numpy_float_in(items: list | tuple) -> Any:
    """The first numpy float scalar (not a Python float, as np.float64 is) in nested lists."""
    for v in items:
        if isinstance(v, (list, tuple)):
            if (found := _numpy_float_in(v)) is not None:
                return found
        elif isinstance(v, np.floating) and not isinstance(v, float):
            return v
    return None


def _entry(item: Any) -> Any:
    """One element of an index tuple in a uniform form: None, Ellipsis, an int, a slice, a
    bool (0-d mask), a bool mask (np or tensor) or an int index (np or tensor)."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        return item
    if isinstance(item, (bool, np.bool_)):
        return bool(item)
    if isinstance(item, (int, np.integer)):
        return int(item)
    if _is_tensor(item):
        if item.dtype in (dtypes.bool, dtypes.uint8):  # uint8: a mask, as torch (deprecated)
            return item
        if item.dtype not in _INDEX_DTYPES:
            raise IndexError(_TENSOR_INDEX_DTYPE)
        return item
    if isinstance(item, (list, tuple, np.ndarray)):
        return _host_ints(item)
    if isinstance(item, (str, bytes)):  # a sequence torch tries to make a tensor of
        raise TypeError(f"new(): invalid data type '{type(item).__name__}'")
    raise IndexError(_FLOAT_INDEX.format(type(item).__name__))


def _is_mask(e: Any) -> bool:
    """Whether an entry is a boolean mask of one or more axes (a bool alone is a 0-d mask)."""
    if _is_tensor(e):
        return e.dtype in (dtypes.bool, dtypes.uint8)
    return isinstance(e, np.ndarray) and e.dtype.kind == "b"


def _consumed(e: Any) -> int:
    """How many axes of x an entry indexes."""
    if e is None or e is Ellipsis or isinstance(e, bool):
        return 0
    if _is_mask(e):
        return e.ndim
    return 1


def _expand_ellipsis(entries: list[Any], ndim: int) -> list[Any]:
    """The entries, one per axis of x (None and bools aside): '...' as whole slices, and whole
    slices for the axes no entry reaches. As in torch, an index may hold more than one '...':
    each moves on by the k axes the other entries leave, so x[..., 0, ...] is x[..., 0]. Where
    k > 0, the entries after a second '...' land k axes on; one past the last axis raises
    IndexError, but for a whole slice (`:`, `0:`, `::1`), which torch lets pass there (doing
    nothing), and a None or bool right after the last axis (a new last axis). (torch also lets
    some bounded slices pass there, by reading past the tensor's sizes: those raise here.)"""
    used = sum(_consumed(e) for e in entries)
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    k = ndim - used
    out: list[Any] = []
    at = 0  # the axis of x the next entry indexes
    for e in entries:
        if e is Ellipsis:
            out += [slice(None)] * max(0, min(k, ndim - at))
            at += k
            continue
        n = _consumed(e)
        if at + n > ndim or (n == 0 and at > ndim):
            if isinstance(e, slice) and e.start in (None, 0) and e.stop is None \
                    and e.step in (None, 1):
                at += 1
                continue
            raise IndexError(f"an index with more than one ellipsis ('...') reaches past the "
                             f"last of the tensor's {ndim} axes: each '...' stands for {k} axes "
                             "here")
        out.append(e)
        at += n
    return out + [slice(None)] * max(0, ndim - at)


def _mask_indices(mask: Any, shape: tuple[int, ...], dim: int) -> list[np.ndarray]:
    """The int index of each axis a boolean mask covers (axes dim.. of shape): its True places,
    read on the host (the result's size depends on them)."""
    arr = mask.numpy() if _is_tensor(mask) else mask
    arr = arr.astype(bool)
    for j, (m, s) in enumerate(zip(arr.shape, shape[dim:])):
        if m != s:
            raise IndexError(f"The shape of the mask {shape_str(arr.shape)} at index {j} does "
                             f"not match the shape of the indexed tensor {shape_str(shape)} at "
                             f"index {dim + j}")
    return list(np.nonzero(arr))


def _plan(entries: list[Any], shape: tuple[int, ...]) -> tuple[tuple, list[_Adv]]:
    """The basic index (ints, slices, None; whole slices where advanced indices are) and the
    advanced indices, each at its axis of what the basic index makes."""
    basic: list[Any] = []
    advs: list[_Adv] = []
    dim = axis = 0
    for e in entries:
        if e is None or isinstance(e, bool):
            basic.append(None)
            if isinstance(e, bool):  # a 0-d mask: a new axis of size 1, kept once or not at all
                advs.append(_Adv(axis, 1, dim, np.zeros(int(e), dtype=np.int64)))
            axis += 1
        elif isinstance(e, int):
            basic.append(e)
            dim += 1
        elif isinstance(e, slice):
            basic.append(e)
            dim, axis = dim + 1, axis + 1
        elif _is_mask(e):
            for picks in _mask_indices(e, shape, dim):
                basic.append(slice(None))
                advs.append(_Adv(axis, shape[dim], dim, picks))
                dim, axis = dim + 1, axis + 1
        else:
            basic.append(slice(None))
            advs.append(_Adv(axis, shape[dim], dim, e))
            dim, axis = dim + 1, axis + 1
    return tuple(basic), advs


def _broadcast_shapes(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The shape the advanced indices broadcast to, or torch's IndexError."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                         "with shapes " + ", ".join(shape_str(s) for s in shapes)) from None


def _check_host_bounds(picks: np.ndarray, size: int, dim: int, error: type[Exception],
                       wrap: bool = True) -> None:
    """torch's error for the first index outside [-size, size) (or [0, size) without wrap)."""
    low = -size if wrap else 0
    bad = (picks < low) | (picks >= size)
    if bad.any():
        raise error(f"index {picks[bad].flat[0]} is out of bounds for dimension {dim} with size "
                    f"{size}")


def _capturing() -> bool:
    """Whether a TinyJit capture is under way in this thread (a host read would be refused)."""
    return capture_in_this_thread() is not None


class IndexingOps(TensorCore):
    """x[index] and x[index] = value with numpy's and torch's index forms, gather, scatter,
    scatter_reduce, masked_fill, masked_select, nonzero."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # The ops here also use MovementOps' views (reshape, permute, shrink, pad, flip, expand),
    # DerivedOps' reductions and Tensor's elementwise ops (not restated: a stub here would hide
    # the methods of the mixins before this one), and Tensor's arange, full and assign.
    # type(self)(data, device=, dtype=) makes a tensor of an array.
    _view: tuple[Any, tuple] | None

    @property
    def requires_grad(self) -> bool | None: raise NotImplementedError

    @property
    def is_leaf(self) -> bool: raise NotImplementedError

    def _read(self, copy: bool) -> np.ndarray:
        """The value on the host: the one read of data, which a TinyJit capturing refuses."""
        raise NotImplementedError

    # --- reading x[index] ---

    def __getitem__(self: Tensor, index: Any) -> Tensor:
        """x[index] as numpy and torch: ints, slices (any step), None, ..., and advanced indices
        (integer tensors, lists, numpy arrays, boolean masks) in any position. The advanced
        indices broadcast together; their shape goes where they are when they are adjacent
        (after the ints are taken, as torch), else first. Negative indices count from the end.
        A boolean mask is read on the host (the result's size depends on it); see the module's
        docstring for how the rest is done in the graph."""
        entries = [_entry(i) for i in _index_tuple(index)]
        if self.ndim == 0 and any(_consumed(e) for e in entries):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python "
                             "or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        basic, advs = _plan(_expand_ellipsis(entries, self.ndim), self.shape)
        y = self._basic_index(basic)
        return y._take(advs) if advs else y

    def _basic_index(self: Tensor, index: tuple) -> Tensor:
        """x[index] for ints, slices and None, one per axis of x (None aside): a view of x."""
        out_shape: list[int | None] = []  # each axis of the result: an axis of x, or None (new)
        bounds, flips, steps, drop = [], [], [], []
        dim = 0
        for i in index:
            if i is None:
                out_shape.append(None)
                continue
            size = self.shape[dim]
            if isinstance(i, int):
                if not -size <= i < size:
                    raise IndexError(f"index {i} is out of bounds for dimension {dim} with size "
                                     f"{size}")
                i %= size
                bounds.append((i, i + 1))
                flips.append(False)
                steps.append(1)
                drop.append(True)
            else:
                picked = range(*i.indices(size))  # a negative step flips (numpy's rule)
                if len(picked) == 0:
                    lo, hi, flip = 0, 0, False
                elif picked.step > 0:
                    lo, hi, flip = picked.start, picked[-1] + 1, False
                else:
                    lo, hi, flip = picked[-1], picked.start + 1, True
                bounds.append((lo, hi))
                flips.append(flip)
                steps.append(abs(picked.step))
                drop.append(False)
            out_shape.append(dim)
            dim += 1
        x = self.shrink(bounds)
        if any(flips):
            x = x._flip_view([d for d, f in enumerate(flips) if f])
        if any(s > 1 for s in steps):
            x = x._take_every(steps)
        final = [1 if entry is None else x.shape[entry] for entry in out_shape
                 if entry is None or not drop[entry]]
        return x.reshape(tuple(final))

    def _advanced_layout(self: Tensor, advs: list[_Adv]) -> tuple[Tensor, tuple[int, ...], int]:
        """self (y) with the advanced axes first, flattened to (K, R); the broadcast shape of
        the indices; where their axes go in the result."""
        axes = [a.axis for a in advs]
        rest = [d for d in range(self.ndim) if d not in axes]
        adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
        at = sum(1 for d in rest if d < axes[0]) if adjacent else 0
        batch = _broadcast_shapes([tuple(a.index.shape) for a in advs])
        laid = self.permute(axes + rest)
        k = prod(self.shape[d] for d in axes)
        # a view of self even where torch's reshape would copy: setitem writes through it
        return laid._reshape_view((k, prod(self.shape[d] for d in rest))), batch, at

    def _linear_index(self: Tensor, advs: list[_Adv], batch: tuple[int, ...],
                      error: type[Exception] = IndexError) -> np.ndarray | Tensor:
        """The advanced indices as one flat index into the K elements of their axes, in the
        broadcast shape (host ints if every index is host data, else a tensor), wrapped to
        positive and bounds-checked (at once on the host, when computed for a tensor)."""
        stride, parts = 1, list[Any]()
        for a in reversed(advs):
            if _is_tensor(a.index) and a.index.dtype.itemsize == 8 \
                    and not Device[a.index.device].has_float64 and not _capturing():
                # a device without 64-bit types (WEBGPU) can hold an int64 index but not load
                # it in a kernel: its values are read (and bounds-checked) on the host
                a = _Adv(a.axis, a.size, a.dim, a.index._read(copy=True))
            if isinstance(a.index, np.ndarray):
                _check_host_bounds(a.index, a.size, a.dim, error)
                parts.append((a.index % max(a.size, 1)).astype(np.int64) * stride)
            else:
                t = a.index.cast(dtypes.int32)
                parts.append(((t < 0).where(t + a.size, t)) * stride)
            stride *= a.size
        if all(isinstance(p, np.ndarray) for p in parts):
            return np.broadcast_to(sum(parts), batch).reshape(-1)
        total = sum(p if _is_tensor(p) else type(self)(p.astype(np.int32), device=self.device)
                    for p in parts)
        return total._broadcast_to(batch).reshape(-1)  # type: ignore[union-attr]

    def _bounds_checks(self: Tensor, out: Tensor, advs: list[_Adv]) -> None:
        """torch's IndexError for an out-of-range tensor index (see _check_index)."""
        for a in advs:
            if _is_tensor(a.index):
                _check_index(out, a.index, a.size, a.dim, IndexError, wrap=True)

    def _take(self: Tensor, advs: list[_Adv]) -> Tensor:
        """y[advanced indices] (the basic ones already taken): see the module's docstring."""
        laid, batch, at = self._advanced_layout(advs)
        linear = self._linear_index(advs, batch)
        k, r = laid.shape
        rest = tuple(self.shape[d] for d in range(self.ndim) if d not in [a.axis for a in advs])
        if self._pick_on_host(linear, k, r):
            self._bounds_checks(self, advs)  # (not capturing: checked now, before the read)
            rows = laid._read(copy=False)[np.asarray(linear.numpy() if _is_tensor(linear)
                                                     else linear)]
            picked = type(self)(np.ascontiguousarray(rows), device=self.device,
                                dtype=self.dtype)
        else:
            picked = laid._pick_rows(linear)
            self._bounds_checks(picked, advs)
        out = picked.reshape(batch + rest)
        order = list(range(len(batch), len(batch) + at)) + list(range(len(batch))) + \
            list(range(len(batch) + at, len(batch) + len(rest)))
        return out.permute(order)

    def _pick_on_host(self: Tensor, linear: np.ndarray | Tensor, k: int, r: int) -> bool:
        """Whether the pick is data only, big enough to be worth a host read, and no TinyJit
        is capturing (see the module's docstring)."""
        work = prod(linear.shape) * k * r
        return not self.requires_grad and work > _HOST_PICK_WORK and not _capturing()

    def _pick_rows(self: Tensor, linear: np.ndarray | Tensor) -> Tensor:
        """Rows linear[n] of self (K, R), as (N, R), picked by a one-hot mask (see _selected)."""
        k, r = self.shape
        idx = linear if _is_tensor(linear) else type(self)(
            np.asarray(linear, dtype=np.int32), device=self.device)
        n = prod(idx.shape)
        hot = idx.reshape(n, 1, 1) == type(self).arange(k, device=self.device).reshape(1, k, 1)
        return _selected(hot, self.reshape(1, k, r), 1)

    # --- writing x[index] = value ---

    def __setitem__(self: Tensor, index: Any, value: Any) -> None:
        """x[index] = value, written into x (which stays the same tensor), with every index
        form of __getitem__; value (a number or a tensor) is broadcast to x[index]'s shape.
        A number takes x's dtype; a tensor is cast for basic indices, and must have x's dtype
        for advanced ones (torch's index_put). With an index repeated, the last value wins."""
        entries = [_entry(i) for i in _index_tuple(index)]
        if self.ndim == 0 and any(_consumed(e) for e in entries):
            raise IndexError("invalid index of a 0-dim tensor")
        basic, advs = _plan(_expand_ellipsis(entries, self.ndim), self.shape)
        self._check_leaf_write(view=not advs)
        y = self._basic_index(basic)
        if not advs:
            tensor = value if _is_tensor(value) else type(self)(value, device=self.device,
                                                                dtype=self.dtype)
            y._write(tensor.cast(self.dtype)._broadcast_to(y.shape))
            return
        if _is_tensor(value) and value.dtype != self.dtype:
            raise RuntimeError("Index put requires the source and destination dtypes match, got "
                               f"{self.dtype.name} for the destination and {value.dtype.name} "
                               "for the source.")
        y._put(advs, value)


    def _put(self: Tensor, advs: list[_Adv], value: Any) -> None:
        """y[advanced indices] = value (the basic ones already taken; y a view of x)."""
        laid, batch, at = self._advanced_layout(advs)
        k, r = laid.shape
        rest = tuple(self.shape[d] for d in range(self.ndim) if d not in [a.axis for a in advs])
        target = rest[:at] + batch + rest[at:]
        given = value if _is_tensor(value) else type(self)(value, device=self.device,
                                                           dtype=self.dtype)
        try:
            given = given._broadcast_to(target)
        except RuntimeError:
            raise RuntimeError(f"shape mismatch: value tensor of shape {shape_str(given.shape)} "
                               f"cannot be broadcast to indexing result of shape "
                               f"{shape_str(target)}") from None
        n = prod(batch)
        rows = given.permute(list(range(at, at + len(batch))) + list(range(at)) +
                             list(range(at + len(batch), len(target)))).reshape(n, r)
        linear = self._linear_index(advs, batch)
        if n == 0:
            self._bounds_checks(self, advs)
            return
        idx = linear if _is_tensor(linear) else type(self)(
            np.asarray(linear, dtype=np.int32), device=self.device)
        new = _written(laid, idx, rows)
        self._bounds_checks(new, advs)
        laid._write(new)

    def __delitem__(self, index: Any) -> None:
        """del x[index]: torch's TypeError (a tensor's elements cannot be removed)."""
        raise TypeError("Tensor does not support deleting items")

    def _take_every(self: Tensor, steps: list[int]) -> Tensor:
        """Every steps[d]-th element along each axis d, by a pad, a reshape and a shrink."""
        counts = [-(-s // st) for s, st in zip(self.shape, steps)]
        x = self.pad([(0, c * st - s) for c, st, s in zip(counts, steps, self.shape)])
        x = x.reshape(tuple(v for c, st in zip(counts, steps) for v in (c, st)))
        x = x.shrink([b for c in counts for b in ((0, c), (0, 1))])
        out = x.reshape(tuple(counts))
        return self._as_view_of_self(out, ("every", tuple(steps)))  # a view of self

    # --- gather and scatter ---

    def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
        """out[i][j][k] = self[index[i][j][k]][j][k] for dim 0 (likewise for the others), as
        torch.gather: index has self's number of axes and is no larger than self on the axes
        other than dim. Done in the graph; an index out of range raises torch's RuntimeError
        when the result is computed."""
        index = _index_tensor("gather", index)
        dim = self._gather_dims("gather", dim, index)
        x, idx = self._at_last(dim, index), index.transpose(dim, -1) if index.ndim else index
        if self.ndim == 0:
            x, idx = x.reshape(1), idx.reshape(1)
        s = x.shape[-1]
        hot = idx.unsqueeze(-1) == type(self).arange(s, device=self.device)
        out = _selected(hot, x.unsqueeze(-2), -1)
        _check_index(out, idx, s, dim, RuntimeError, wrap=False)
        return out.reshape(()) if self.ndim == 0 else out.transpose(dim, -1)

    def _gather_dims(self: Tensor, what: str, dim: int, index: Tensor,
                     src: Tensor | None = None) -> int:
        """dim as a positive axis, after torch's checks of index's (and src's) shape."""
        dim = normalize_axis(dim, self.ndim)
        if index.ndim != max(self.ndim, 1) and not (index.ndim == 0 and self.ndim <= 1):
            raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                               f"{'input' if what == 'gather' else 'self'} tensor")
        if index.ndim == 0 or self.ndim == 0:
            return dim
        small = all(i <= s for d, (i, s) in enumerate(zip(index.shape, self.shape)) if d != dim)
        if src is not None:
            small = small and all(i <= s for i, s in zip(index.shape, src.shape))
        if not small:
            if src is None:
                at = next(d for d, (i, s) in enumerate(zip(index.shape, self.shape))
                          if d != dim and i > s)
                raise RuntimeError(f"Size does not match at dimension {at} expected index "
                                   f"{shape_str(index.shape)} to be no larger than self "
                                   f"{shape_str(self.shape)} apart from dimension {dim}")
            raise RuntimeError(f"Expected index {shape_str(index.shape)} to be no larger than "
                               f"self {shape_str(self.shape)} apart from dimension {dim} and to "
                               f"be no larger size than src {shape_str(src.shape)}")
        return dim

    def _at_last(self: Tensor, dim: int, index: Tensor) -> Tensor:
        """self cut to index's size on the axes other than dim, with dim moved last."""
        if self.ndim == 0:
            return self
        cut = self.shrink([None if d == dim else (0, index.shape[d]) for d in range(self.ndim)])
        return cut.transpose(dim, -1)

    def scatter(self: Tensor, dim: int, index: Tensor, src: Tensor | float | int | bool,
                reduce: str | None = None) -> Tensor:
        """A copy of self with self[index[i][j]][j] = src[i][j] for dim 0 (likewise for the
        others), as torch.scatter; src a tensor (self's dtype) or a number; reduce "add" or
        "multiply" combines instead of replacing. With an index repeated and no reduce, the
        last value wins (torch leaves it undefined)."""
        if reduce not in (None, "add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        combine = {None: "replace", "add": "sum", "multiply": "prod"}[reduce]
        return self._scatter("scatter", dim, index, src, combine, True)

    def scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                       include_self: bool = True) -> Tensor:
        """A copy of self where each element some index[i][j] names (dim 0; likewise for the
        others) is the reduce ("sum", "prod", "mean", "amax", "amin") of the src values sent
        to it, and of its own value when include_self, as torch.scatter_reduce (which takes
        "max" and "min" for amax and amin too, whose backward raises torch's RuntimeError)."""
        if reduce in ("max", "min"):
            out = self.scatter_reduce(dim, index, src, "a" + reduce, include_self)
            return out._with_gradient(_named_max_gradient, (self, src), (reduce,)) \
                if _is_tensor(src) else out
        if reduce not in ("sum", "prod", "mean", "amax", "amin"):
            raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, "
                               f"got {reduce}")
        if not _is_tensor(src):
            raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not "
                            f"{type(src).__name__}")
        return self._scatter("scatter_reduce", dim, index, src, reduce, include_self)

    def scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """self with each src value added to the element index names along dim, as
        torch.scatter_add (scatter_reduce with "sum", self included)."""
        return self.scatter_reduce(dim, index, src, "sum")

    def _scatter(self: Tensor, what: str, dim: int, index: Tensor, src: Any, reduce: str,
                 include_self: bool) -> Tensor:
        """scatter and scatter_reduce: the checks, then the reduce over the one-hot mask of
        index along dim, written into the part of self index covers."""
        index = _index_tensor(what, index)
        if _is_tensor(src):
            if src.dtype != self.dtype:
                raise RuntimeError(f"{what}(): Expected self.dtype to be equal to src.dtype")
        else:
            src = type(self).full(index.shape, src, dtype=self.dtype, device=self.device)
        dim = self._gather_dims(what, dim, index, src)
        if index.numel() == 0 or self.numel() == 0:  # nothing is written: self, as torch
            return self.clone()
        if self.ndim == 0:
            return self.reshape(1)._scatter(what, 0, index.reshape(1), src.reshape(1), reduce,
                                            include_self).reshape(())
        x = self._at_last(dim, index)
        vals = src.shrink([(0, s) for s in index.shape]).transpose(dim, -1)
        idx = index.transpose(dim, -1)
        s = x.shape[-1]
        hot = idx.unsqueeze(-1) == type(self).arange(s, device=self.device)  # (..., M, S)
        out = _combine(x, hot, vals.unsqueeze(-1), reduce, include_self)
        _check_index(out, idx, s, dim, RuntimeError, wrap=False)
        placed = self._placed(out.transpose(dim, -1))
        if reduce == "prod" and what == "scatter_reduce":
            return placed._with_gradient(_scatter_prod_gradient, (self, src),
                                         (dim, index, include_self, type(self)))
        return placed

    def _placed(self: Tensor, part: Tensor) -> Tensor:
        """self with part (of a shape no larger, from the origin) written over its corner."""
        if part.shape == self.shape:
            return part
        grow = [(0, s - p) for s, p in zip(self.shape, part.shape)]
        inside = type(self).full(part.shape, True, dtype=dtypes.bool, device=self.device)
        return inside.pad(grow).where(part.pad(grow), self)

    # --- masks ---

    def masked_fill(self: Tensor, mask: Tensor, value: Tensor | float | int | bool) -> Tensor:
        """value where mask (a bool tensor, broadcast with self) is true, else self; value a
        number or a 0-d tensor, taking self's dtype."""
        if not _is_tensor(mask) or not mask.dtype.is_bool:
            got = mask.dtype.name if _is_tensor(mask) else type(mask).__name__
            raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with "
                               f"dtype {got}")
        if _is_tensor(value):
            if value.ndim != 0:
                raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but "
                                   f"got tensor with {value.ndim} dimension(s).")
            return mask.where(value.cast(self.dtype), self)
        return mask.where(_as_dtype(value, self.dtype), self)

    def masked_select(self: Tensor, mask: Tensor) -> Tensor:
        """The elements of self where mask (bool, broadcast with self) is true, as a 1-D
        tensor. The mask is read on the host: the result's size depends on it."""
        if not _is_tensor(mask) or not mask.dtype.is_bool:
            raise RuntimeError("masked_select: expected BoolTensor for mask")
        x, m = self._operands(mask)
        return x.reshape(-1)[np.flatnonzero(m._read(copy=False))]

    def nonzero(self: Tensor, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
        """The indices of the nonzero elements: int64 of shape (count, ndim) (as_tuple: one
        1-D tensor per axis), as torch. Read on the host: the result's size depends on the
        data."""
        where = np.argwhere(self._read(copy=False))
        dtype = index_dtype(self.device)  # int64, as torch (int32 on WEBGPU)
        if as_tuple:
            columns = where.T if self.ndim else where.reshape(-1, 1).T
            return tuple(type(self)(np.ascontiguousarray(c).astype(dtype.np),
                                    device=self.device, dtype=dtype) for c in columns)
        return type(self)(where.astype(dtype.np), device=self.device, dtype=dtype)

    def nonzero_static(self: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
        """nonzero with a size known ahead, as torch.nonzero_static: the indices (int64, of
        shape (size, ndim)) of the first `size` nonzero elements, rows of fill_value after the
        last; computed on the device (nothing read on the host, so a TinyJit may capture it)."""
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
        if self.numel() == 0 or self.ndim == 0 or size == 0:  # nothing found, or no columns
            return type(self).full((size, self.ndim), fill_value, dtype=dtypes.int64,
                                   device=self.device)
        flat = self.flatten() != 0
        n = flat.numel()
        place = flat.cast(dtypes.int64).cumsum(0) - 1  # each nonzero's row in the result
        rows = type(self).arange(size, dtype=dtypes.int64, device=self.device).unsqueeze(-1)
        hot = flat & (place == rows)  # (size, n): row j takes the j-th nonzero
        at = type(self).arange(n, dtype=dtypes.int64, device=self.device)
        found = hot.any(-1, keepdim=True)
        index = hot.where(at, 0).sum(-1, keepdim=True, dtype=dtypes.int64)  # (size, 1)
        strides = [math.prod(self.shape[d + 1:]) for d in range(self.ndim)]
        coords = [index // st % sh for st, sh in zip(strides, self.shape)]
        return found.where(type(self).cat(*coords, dim=-1), fill_value).cast(dtypes.int64)


def _named_max_gradient(grad: UOp, node: UOp, x: UOp, src: UOp, reduce: str
                        ) -> tuple[None, None]:
    """scatter_reduce's gradient for torch's "max" and "min": none; torch's backward raises."""
    raise RuntimeError("Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' "
                       f"but got {reduce}.")


def _check_index(out: Tensor, index: Tensor, size: int, dim: int, error: type[Exception],
                 wrap: bool) -> None:
    """torch's error for an index outside [-size, size) ([0, size) without wrap): raised now, as
    torch does, by reading the index (small) on the host; inside a TinyJit capture (where no
    read may happen) raised when out is computed, by a deferred check."""
    if not _capturing():
        _check_host_bounds(index._read(copy=False), size, dim, error, wrap)
        return
    t = index.cast(dtypes.int32)
    bad = ((t < -size) if wrap else (t < 0)) | (t >= size)
    derived._check_labels(out, t, bad, error,
                          f"index {{value}} is out of bounds for dimension {dim} with size {size}")


def _index_tensor(what: str, index: Any) -> Tensor:
    """index, an int32 or int64 tensor, or torch's error."""
    if not _is_tensor(index):
        raise TypeError(f"{what}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{what}(): Expected dtype int32/int64 for index")
    return index


def _as_dtype(value: Any, dtype: DType) -> Any:
    """A Python number as a value of dtype (truncated for ints, as torch's fill)."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_int:
        return int(value)
    return float(value)


def _written(laid: Tensor, idx: Tensor, rows: Tensor) -> Tensor:
    """laid (K, R) with row idx[n] replaced by rows[n] (N, R); the last n wins a repeat."""
    k = laid.shape[0]
    n = rows.shape[0]
    dev = laid.device
    hot = idx.reshape(n, 1) == type(laid).arange(k, device=dev).reshape(1, k)  # (N, K)
    order = type(laid).arange(n, device=dev).reshape(n, 1)
    last = hot.where(order, -1).max(0)  # (K,): the last n writing row k, or -1
    chosen = order == last.reshape(1, k)  # (N, K)
    picked = _selected(chosen.reshape(n, k, 1), rows.reshape(n, 1, -1), 0)
    return (last >= 0).reshape(k, 1).where(picked, laid)


def _combine(x: Tensor, hot: Tensor, vals: Tensor, reduce: str, include_self: bool) -> Tensor:
    """The scatter of vals (..., M, 1) into x (..., S) along the one-hot hot (..., M, S)."""
    hit = hot.any(-2)
    if reduce == "replace":
        order = type(x).arange(hot.shape[-2], device=x.device).reshape(-1, 1)
        last = hot.where(order, -1).max(-2, keepdim=True)  # the last m sent to each s
        picked = _selected((order == last) & hot, vals.cast(x.dtype), -2)
        return hit.where(picked, x)
    if reduce in ("sum", "mean"):
        total = _summed(hot, vals, x.dtype)
        own = x if include_self else x.zeros_like()
        total = total + own
        if reduce == "sum":
            return hit.where(total, x)
        count = hot.sum(-2, dtype=x.dtype if x.dtype.is_float else dtypes.int32) + \
            int(include_self)
        mean = total / count if x.dtype.is_float else total.div(count, rounding_mode="floor")
        return hit.where(mean.cast(x.dtype), x)
    if reduce == "prod":
        product = hot.where(vals, 1).prod(-2, dtype=x.dtype)
        return hit.where(product * x if include_self else product, x)
    fill = _extreme(x.dtype, low=reduce == "amax")
    stack, sent = hot.where(vals, fill), hot  # (..., M, S): the values sent, and which are
    if include_self:  # self's value as one more row
        stack = stack.cat(x.unsqueeze(-2), dim=-2)
        sent = sent.cat(hit.unsqueeze(-2).ones_like(), dim=-2)
    best = stack.max(-2) if reduce == "amax" else stack.min(-2)
    if x.dtype.is_float:  # torch's gradient: shared evenly by the values equal to the result
        ties = sent & (stack == best.detach().unsqueeze(-2))  # (none for a nan: nan != nan)
        share = 1 / ties.sum(-2, keepdim=True, dtype=x.dtype)
        best = best.detach()._with_gradient(_tie_gradient, (stack, ties, share))
    return hit.where(best, x)


def _scatter_prod_gradient(grad: UOp, node: UOp, x: UOp, src: UOp, dim: int, index: Tensor,
                           include_self: bool, tensor: type[Tensor]) -> tuple[UOp, UOp]:
    """scatter_reduce(prod)'s gradient, torch's formula (so its nan and inf where self or src
    holds one): self's is grad * the product with self's zeros taken as 1, over self (as 1 where
    0); src's is grad * the result over src, or, for the one zero sent to a place, grad * the
    product of the others."""
    g, s, v, result = tensor(grad), tensor(x), tensor(src), tensor(node)
    v = v.shrink([(0, n) for n in index.shape])  # the part of src that is sent
    masked_self = (s == 0).where(1.0, s)
    to_self = g * masked_self.scatter_reduce(dim, index, v, "prod", include_self) / masked_self
    if not include_self:
        to_self = to_self.scatter(dim, index, 0.0)
    zero = v == 0
    zeros_sent = s.zeros_like().scatter_add(dim, index, zero.cast(s.dtype)).gather(dim, index)
    single = zero & (zeros_sent == 1)
    others = s.scatter_reduce(dim, index, single.where(1.0, v), "prod", include_self)
    to_src = single.where((g * others).gather(dim, index),
                          (g * result).gather(dim, index) / zero.where(1.0, v))
    grow = [(0, full - n) for full, n in zip(src.shape, index.shape)]
    return to_self.uop, to_src.pad(grow).uop


def _tie_gradient(grad: UOp, node: UOp, stack: UOp, ties: UOp, share: UOp
                  ) -> tuple[UOp, None, None]:
    """scatter_reduce's amax/amin gradient, torch's: each value equal to the result (self's
    included) gets an even share of the result's gradient (share: 1 / their number)."""
    kept = stack.shape[:-2] + (1,) + stack.shape[-1:]  # grad with the reduced axis back
    each = grad.reshape(kept) * share
    return ties.where(each.expand(stack.shape), 0.0), None, None


def _selected(hot: Tensor, vals: Tensor, axis: int) -> Tensor:
    """Along axis, the value of vals where hot is true (hot and vals broadcast together), for
    hot true at one place of the axis at most; where it is true nowhere, the value is to be
    masked by the caller. A float is picked with its exact bits (-0.0 stays -0.0, as in torch):
    a max over the others filled with -inf, not a sum (which starts at 0.0: -0.0 + 0.0 is 0.0),
    in one reduce kernel as the sum was; its gradient is the sum's, all to the place picked (a
    max's would be shared among ties, and none for a nan)."""
    shape = tuple(np.broadcast_shapes(hot.shape, vals.shape))
    hot, vals = hot._broadcast_to(shape), vals._broadcast_to(shape)
    axis = normalize_axis(axis, len(shape))
    if not vals.dtype.is_float or shape[axis] == 0:  # exact as a sum (a max of nothing raises)
        as_int = vals.cast(dtypes.int32) if vals.dtype.is_bool else vals
        total = hot.where(as_int, 0).sum(axis, dtype=as_int.dtype)
        return total.cast(dtypes.bool) if vals.dtype.is_bool else total
    picked = hot.where(vals, -float("inf")).max(axis)
    return picked._with_gradient(_selection_gradient, (vals, hot), (axis,))


def _selection_gradient(grad: UOp, node: UOp, vals: UOp, hot: UOp, axis: int
                        ) -> tuple[UOp, None]:
    """The gradient of _selected: the gradient at each pick, to the place it was picked from."""
    kept = hot.shape[:axis] + (1,) + hot.shape[axis + 1:]  # grad with the picked axis back
    return hot.where(grad.reshape(kept).expand(hot.shape), 0.0), None


def _summed(hot: Tensor, vals: Tensor, dtype: DType) -> Tensor:
    """The sum over M of vals (..., M, 1) where hot (..., M, S), in dtype (bools as any)."""
    if dtype.is_bool:
        return hot.where(vals.cast(dtypes.int32), 0).sum(-2, dtype=dtypes.int32).cast(dtype)
    return hot.where(vals, 0).sum(-2, dtype=dtype)


def _extreme(dtype: DType, low: bool) -> Any:
    """The identity of max (low) or min (not low) in dtype: an infinity or the integer bound."""
    if dtype.is_float:
        return -float("inf") if low else float("inf")
    if dtype.is_bool:
        return not low
    info = np.iinfo(dtype.np)
    return int(info.min) if low else int(info.max)

