"""ONNX's operators that make, reshape, slice, gather and scatter tensors, as tinyfw ops."""
from __future__ import annotations

from typing import cast

import math

import numpy as np

from tinyfw.dtype import dtypes
from tinyfw.onnx import rules
from tinyfw.onnx.types import dtype_of
from tinyfw.onnx.registry import Call, NodeInfo, op
from tinyfw.tensor import Tensor


def _axis(a: int, ndim: int) -> int:
    return a + ndim if a < 0 else a


# --- constants and shapes ---
def _check_constant(info: NodeInfo) -> str | None:
    if "sparse_value" in info.attrs or "value_string" in info.attrs or \
            "value_strings" in info.attrs:
        return "sparse and string constants are not supported"
    return None


@op("Constant", check=_check_constant)
def constant(n: Call) -> Tensor:
    for name, dtype in (("value", None), ("value_float", np.float32),
                        ("value_floats", np.float32), ("value_int", np.int64),
                        ("value_ints", np.int64)):
        if name in n.info.attrs:
            return n.const(n.attr(name), dtype)
    raise NotImplementedError("a Constant without a value")


@op("Shape")
def shape(n: Call, x: Tensor) -> Tensor:
    dims = x.shape
    start, end = n.attr("start", 0), n.attr("end", None)
    return n.const(np.array(dims[start:end] if end is not None else dims[start:], np.int64))


@op("Size")
def size(n: Call, x: Tensor) -> Tensor:
    return n.const(np.array(x.numel(), np.int64))


@op("ConstantOfShape")
def constant_of_shape(n: Call, dims: Tensor) -> Tensor:
    value = n.attr("value", np.zeros(1, np.float32))
    arr = np.asarray(value).reshape(-1)
    shape = tuple(n.ints(dims))
    from tinyfw.dtype import dtypes as d
    return Tensor.full(shape, arr[0].item(), dtype=d.from_np(arr.dtype), device=n.device)


@op("Range")
def range_(n: Call, start: Tensor, limit: Tensor, delta: Tensor) -> Tensor:
    s, lim, d = (n.values(t).item() for t in (start, limit, delta))
    count = max(math.ceil((lim - s) / d), 0)
    return (Tensor.arange(count, device=n.device).cast(start.dtype) * d + s).cast(start.dtype)


@op("EyeLike")
def eye_like(n: Call, x: Tensor) -> Tensor:
    dtype = dtype_of(n.attr("dtype"), "EyeLike") if n.attr("dtype") is not None else x.dtype
    rows, cols = x.shape
    k = n.attr("k", 0)
    r = Tensor.arange(rows, device=n.device).reshape(rows, 1)
    c = Tensor.arange(cols, device=n.device).reshape(1, cols)
    return (c - r == k).cast(dtype)


# --- reshaping ---
@op("Reshape")
def reshape(n: Call, x: Tensor, dims: Tensor | None = None) -> Tensor:
    new = list(n.attr("shape")) if dims is None else n.ints(dims)
    new = rules.reshape_dims(x.shape, new, bool(n.attr("allowzero", 0)))
    return x.reshape(*new) if new else x.reshape(())


@op("Flatten")
def flatten(n: Call, x: Tensor) -> Tensor:
    axis = _axis(n.attr("axis", 1), x.ndim)
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


@op("Squeeze")
def squeeze(n: Call, x: Tensor, axes_t: Tensor | None = None) -> Tensor:
    axes = n.ints(axes_t) if axes_t is not None else n.attr("axes", None)
    if axes is None:
        axes = [i for i, s in enumerate(x.shape) if s == 1]
    axes = [_axis(a, x.ndim) for a in axes]
    return x.reshape(*[s for i, s in enumerate(x.shape) if i not in axes])


@op("Unsqueeze")
def unsqueeze(n: Call, x: Tensor, axes_t: Tensor | None = None) -> Tensor:
    axes = n.ints(axes_t) if axes_t is not None else n.attr("axes")
    ndim = x.ndim + len(axes)
    axes = sorted(_axis(a, ndim) for a in axes)
    dims = list(x.shape)
    for a in axes:
        dims.insert(a, 1)
    return x.reshape(*dims) if dims else x


@op("Transpose")
def transpose(n: Call, x: Tensor) -> Tensor:
    perm = n.attr("perm", None) or list(range(x.ndim))[::-1]
    return x.permute(*perm) if perm else x


@op("Expand")
def expand(n: Call, x: Tensor, dims: Tensor) -> Tensor:
    out = rules.broadcast_shape(x.shape, n.ints(dims))
    own = [1] * (len(out) - x.ndim) + list(x.shape)
    return x.reshape(*own).expand(*out) if out else x


@op("Tile")
def tile(n: Call, x: Tensor, repeats: Tensor) -> Tensor:
    return x.repeat(*n.ints(repeats)) if x.ndim else x


@op("Concat")
def concat(n: Call, *xs: Tensor) -> Tensor:
    axis = _axis(n.attr("axis"), xs[0].ndim)
    parts = [x for x in xs if x.shape[axis] > 0] or [xs[0]]
    return Tensor.cat(*parts, dim=axis) if len(parts) > 1 else parts[0]


@op("Split")
def split(n: Call, x: Tensor, sizes_t: Tensor | None = None) -> list[Tensor]:
    axis = _axis(n.attr("axis", 0), x.ndim)
    sizes = n.ints(sizes_t) if sizes_t is not None else n.attr("split", None)
    if not sizes:
        parts = n.attr("num_outputs", n.n_outputs)
        each = math.ceil(x.shape[axis] / parts)
        sizes = [min(each, x.shape[axis] - i * each) for i in range(parts)]
    out, at = [], 0
    for s in sizes:
        out.append(x.shrink(tuple((at, at + s) if i == axis else None
                                  for i in range(x.ndim))))
        at += s
    return out


@op("Slice")
def slice_(n: Call, x: Tensor, starts: Tensor | None = None, ends: Tensor | None = None,
           axes: Tensor | None = None, steps: Tensor | None = None) -> Tensor:
    if n.opset < 10:
        st, en = list(n.attr("starts")), list(n.attr("ends"))
        ax = list(n.attr("axes", range(len(st))))
        sp = [1] * len(st)
    else:
        assert starts is not None and ends is not None
        st, en = n.ints(starts), n.ints(ends)
        ax = n.ints(axes) if axes is not None else list(range(len(st)))
        sp = n.ints(steps) if steps is not None else [1] * len(st)
    index: list[slice] = [slice(None)] * x.ndim
    for s, e, a, p in zip(st, en, ax, sp):
        a = _axis(a, x.ndim)
        dim = x.shape[a]
        s, e = s + dim if s < 0 else s, e + dim if e < 0 else e
        if p > 0:
            index[a] = slice(min(max(s, 0), dim), min(max(e, 0), dim), p)
        else:  # backwards: from at most dim - 1 down to past 0 (-1, Python's None there)
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
            index[a] = slice(s, None if e < 0 else e, p)
    return x[tuple(index)]


# --- gathering and scattering ---
def _wrap(idx: Tensor, dim: int) -> Tensor:
    return (idx < 0).where(idx + dim, idx)


@op("Gather")
def gather(n: Call, x: Tensor, idx: Tensor) -> Tensor:
    axis = _axis(n.attr("axis", 0), x.ndim)
    idx = _wrap(idx.cast(dtypes.int64), x.shape[axis])
    if idx.ndim == 0:
        return x.shrink(tuple(None if i != axis else (0, x.shape[axis])
                              for i in range(x.ndim)))[(slice(None),) * axis + (idx,)] \
            if x.ndim else x
    return x[(slice(None),) * axis + (idx,)]


@op("GatherElements")
def gather_elements(n: Call, x: Tensor, idx: Tensor) -> Tensor:
    axis = _axis(n.attr("axis", 0), x.ndim)
    return x.gather(axis, _wrap(idx.cast(dtypes.int64), x.shape[axis]))


@op("GatherND")
def gather_nd(n: Call, x: Tensor, idx: Tensor) -> Tensor:
    b = n.attr("batch_dims", 0)
    k = idx.shape[-1]
    idx = idx.cast(dtypes.int64)
    # the flat position of each index tuple in x's axes b .. b+k
    dims = x.shape[b:b + k]
    flat = None
    for j in range(k):
        part = _wrap(idx[..., j], dims[j]) * math.prod(dims[j + 1:])
        flat = part if flat is None else flat + part
    assert flat is not None
    batch = math.prod(x.shape[:b])
    xs = x.reshape(batch, math.prod(dims), *x.shape[b + k:])
    fl = flat.reshape(batch, -1)  # (batch, m)
    rows = Tensor.arange(batch, device=x.device).reshape(batch, 1).expand(*fl.shape)
    out = xs[rows, fl]  # (batch, m, *rest)
    return out.reshape(*idx.shape[:-1], *x.shape[b + k:])


def _reduction(name: str) -> str | None:
    return {"none": None, "add": "sum", "mul": "prod", "max": "amax", "min": "amin"}[name]


@op("ScatterElements", "Scatter")
def scatter_elements(n: Call, x: Tensor, idx: Tensor, upd: Tensor) -> Tensor:
    axis = _axis(n.attr("axis", 0), x.ndim)
    idx = _wrap(idx.cast(dtypes.int64), x.shape[axis])
    red = _reduction(n.attr("reduction", "none"))
    if red is None:
        return x.scatter(axis, idx, upd)
    return x.scatter_reduce(axis, idx, upd, red)


@op("ScatterND")
def scatter_nd(n: Call, x: Tensor, idx: Tensor, upd: Tensor) -> Tensor:
    k = idx.shape[-1]
    dims = x.shape[:k]
    flat = None
    idx = idx.cast(dtypes.int64)
    for j in range(k):
        part = _wrap(idx[..., j], dims[j]) * math.prod(dims[j + 1:])
        flat = part if flat is None else flat + part
    assert flat is not None
    rest = x.shape[k:]
    xs = x.reshape(math.prod(dims), math.prod(rest))
    fl = flat.reshape(-1, 1).expand(flat.numel(), math.prod(rest))
    us = upd.reshape(flat.numel(), math.prod(rest))
    red = _reduction(n.attr("reduction", "none"))
    out = xs.scatter(0, fl, us) if red is None else xs.scatter_reduce(0, fl, us, red)
    return out.reshape(x.shape)


@op("OneHot")
def one_hot(n: Call, idx: Tensor, depth: Tensor, values: Tensor) -> Tensor:
    d = int(n.values(depth).reshape(-1)[0])
    axis = n.attr("axis", -1)
    idx = idx.cast(dtypes.int64)
    idx = (idx < 0).where(idx + d, idx)
    hot = idx.unsqueeze(-1) == Tensor.arange(d, device=idx.device).cast(dtypes.int64)
    out = hot.where(values[1], values[0])
    axis = _axis(axis, out.ndim)
    perm = list(range(out.ndim - 1))
    perm.insert(axis, out.ndim - 1)
    return out.permute(*perm)


@op("Compress")
def compress(n: Call, x: Tensor, cond: Tensor) -> Tensor:
    keep = [i for i, c in enumerate(n.values(cond).reshape(-1)) if c]
    axis = n.attr("axis", None)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = _axis(axis, x.ndim)
    keep = [i for i in keep if i < x.shape[axis]]
    idx = Tensor(np.array(keep, np.int64), device=x.device)
    return x[(slice(None),) * axis + (idx,)]


@op("NonZero")
def nonzero(n: Call, x: Tensor) -> Tensor:
    found = (x.reshape(1) if x.ndim == 0 else x).nonzero()  # (count, ndim): its count is read
    assert isinstance(found, Tensor)
    return found.transpose(0, 1).cast(dtypes.int64)


@op("Trilu")
def trilu(n: Call, x: Tensor, k_t: Tensor | None = None) -> Tensor:
    k = n.ints(k_t)[0] if k_t is not None else 0
    rows, cols = x.shape[-2:]
    r = Tensor.arange(rows, device=x.device).reshape(rows, 1)
    c = Tensor.arange(cols, device=x.device).reshape(1, cols)
    keep = (c - r >= k) if n.attr("upper", 1) else (c - r <= k)
    return keep.where(x, Tensor.zeros(1, dtype=x.dtype, device=x.device).reshape(()))


@op("Pad")
def pad(n: Call, x: Tensor, pads_t: Tensor | None = None, value_t: Tensor | None = None,
        axes_t: Tensor | None = None) -> Tensor:
    pads = n.ints(pads_t) if pads_t is not None else list(n.attr("pads"))
    value = n.values(value_t).reshape(-1)[0].item() if value_t is not None and \
        value_t.numel() else n.attr("value", 0.0)
    axes = [_axis(a, x.ndim) for a in n.ints(axes_t)] if axes_t is not None else \
        list(range(x.ndim))
    half = len(axes)
    pairs: list[tuple[int, int] | None] = [None] * x.ndim
    for j, a in enumerate(axes):
        pairs[a] = (pads[j], pads[j + half])
    mode = n.attr("mode", "constant")
    full = [p or (0, 0) for p in pairs]
    if mode == "constant":
        return x.pad(full, value=value)
    tmode = {"reflect": "reflect", "edge": "replicate", "wrap": "circular"}[mode]
    grow = [(max(b, 0), max(a, 0)) for b, a in full]
    crop = [(min(b, 0), min(a, 0)) for b, a in full]
    out = x.pad(grow, mode=tmode) if any(b or a for b, a in grow) else x
    return out.pad(crop) if any(b or a for b, a in crop) else out


@op("DepthToSpace")
def depth_to_space(n: Call, x: Tensor) -> Tensor:
    b, c, h, w = x.shape
    s = n.attr("blocksize")
    if n.attr("mode", "DCR") == "DCR":
        y = x.reshape(b, s, s, c // (s * s), h, w).permute(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(b, c // (s * s), s, s, h, w).permute(0, 1, 4, 2, 5, 3)
    return y.reshape(b, c // (s * s), h * s, w * s)


@op("SpaceToDepth")
def space_to_depth(n: Call, x: Tensor) -> Tensor:
    b, c, h, w = x.shape
    s = n.attr("blocksize")
    y = x.reshape(b, c, h // s, s, w // s, s)
    y = y.permute(0, 1, 3, 5, 2, 4) if n.attr("mode", "DCR") == "CRD" else \
        y.permute(0, 3, 5, 1, 2, 4)
    return y.reshape(b, c * s * s, h // s, w // s)


@op("TopK")
def topk(n: Call, x: Tensor, k_t: Tensor) -> tuple[Tensor, Tensor]:
    k = n.ints(k_t)[0] if n.opset >= 10 else n.attr("k")
    axis = _axis(n.attr("axis", -1), x.ndim)
    largest = bool(n.attr("largest", 1))
    values, indices = _stable_topk(x, k, axis, largest)
    return values, indices.cast(dtypes.int64)


def _stable_topk(x: Tensor, k: int, axis: int, largest: bool) -> tuple[Tensor, Tensor]:
    """The k largest (or smallest) along axis; equal values in index order, as ONNX asks."""
    values, order = x.sort(dim=axis, descending=largest, stable=True)
    sl = tuple((0, k) if i == axis else None for i in range(x.ndim))
    return values.shrink(sl), order.shrink(sl)


@op("Dropout")
def dropout(n: Call, x: Tensor, ratio: Tensor | None = None,
            training: Tensor | None = None) -> tuple[Tensor, Tensor]:
    if training is not None and bool(n.values(training).reshape(-1)[0]):
        raise NotImplementedError("Dropout in training mode (random) is not supported")
    return x, Tensor.ones(*x.shape, dtype=dtypes.bool, device=x.device)


@op("Unique", fold=False)
def unique(n: Call, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The distinct values (or slices along axis), sorted or in order of first appearance,
    with where each first appears, which one each element is, and how often each appears (as
    numpy's unique). Rows sorted on the device, one stable sort per column from the last; the
    number of distinct rows is read on the host (the outputs' sizes depend on it)."""
    axis = n.attr("axis", None)
    if axis is None:
        rows, a = x.reshape(-1, 1), 0
    else:
        a = axis % x.ndim
        rows = x.movedim(a, 0).reshape(x.shape[a], -1)
    count, width = rows.shape
    order = Tensor.arange(count, device=x.device)
    for column in reversed(range(width)):
        order = order[rows[order, column].argsort(stable=True)]
    ranked = rows[order]
    if count:
        changed = (ranked[1:] != ranked[:-1]).any(-1)
        starts_mask = Tensor.cat(Tensor.ones(1, dtype=dtypes.bool, device=x.device), changed)
    else:
        starts_mask = Tensor.zeros(0, dtype=dtypes.bool, device=x.device)
    starts = cast(Tensor, starts_mask.nonzero())[:, 0]  # (K,): where each distinct row starts
    groups = starts.shape[0]
    group = starts_mask.cast(dtypes.int64).cumsum(0) - 1  # each ranked row's distinct row
    first = order[starts]  # stable sorts: the lowest index of equal rows comes first
    ends = Tensor.cat(starts[1:], Tensor([count], dtype=starts.dtype, device=x.device))
    counts = ends - starts
    inverse = Tensor.zeros(count, dtype=dtypes.int64, device=x.device).scatter(
        0, order.cast(dtypes.int64), group)
    values = ranked[starts]
    if not n.attr("sorted", 1) and groups:
        by_first = first.argsort(stable=True)
        renumber = Tensor.zeros(groups, dtype=dtypes.int64, device=x.device).scatter(
            0, by_first.cast(dtypes.int64), Tensor.arange(groups, device=x.device).cast(
                dtypes.int64))
        first, counts, values = first[by_first], counts[by_first], values[by_first]
        inverse = renumber[inverse]
    if axis is None:
        y = values.reshape(groups)
    else:
        rest = [s for i, s in enumerate(x.shape) if i != a]
        y = values.reshape(groups, *rest).movedim(0, a)
    return y, first.cast(dtypes.int64), inverse, counts.cast(dtypes.int64)
