# Exercises of chapter 13, generated from tinyfw/multi.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/13_many_devices
# generated text id: 351661300044466b (lets tools.generate tell your edits apart)
"""Many devices (chapter 13): a tensor's value spread over several devices, and all-reduce.

A sharded tensor is an ordinary Tensor whose `.uop` is a MultiUOp instead of a UOp: one plain
lazy graph per device (its *parts*, in device order) and the axis they split (`axis`), or None
when every device holds the whole value (*replicated*). Nothing below the Tensor knows of it:
each part is a graph of one device like any other, scheduled, compiled and run as today, and
what moves between devices is a COPY node in those graphs (so a TinyJit captures it as a copy).

How each op of the Tensor's vocabulary runs on parts (the MultiUOp methods below):

* elementwise: part by part. A replicated operand meets a sharded one by cutting, on its own
  device, the slice each part needs (a SHRINK: no copy); two operands sharded on different axes
  are refused.
* movement: part by part, with the sharded axis followed: a permute moves it, a reshape keeps
  it when the split still falls on whole rows of an axis of the new shape; expand, pad, shrink
  and flip work on the other axes. Anything that would cut across parts is refused with an
  error that says so, never computed wrongly.
* reduce: over other axes, part by part; over the sharded axis, each part reduces its rows and
  an all-reduce combines the partial results, so that every device holds the total
  (replicated).

All-reduce (every device starts with a partial value of one shape and ends with the sum of all
of them) is written in two ways, both of COPY and ADD (or MAX) nodes:

* naive: every device copies every other device's part and adds them, in device order (the same
  order everywhere, so every device gets the same bits). n devices move n * (n - 1) whole parts.
* ring: each part is cut into n chunks. Reduce-scatter: n - 1 steps in which each device passes
  one chunk's running sum to its right neighbour, who adds its own; after them device d holds
  the total of chunk d + 1. All-gather: n - 1 more steps pass the finished chunks around the
  ring. Each device sends 2 * (n - 1) chunks of 1 / n of a part: about 2 parts in all, however
  many devices there are (the reason big all-reduces use a ring).

`all_reduce` picks the ring for more than 2 devices and parts of at least RING_THRESHOLD
elements (2**20, measured: bench/README.md; tinygrad's rule has the same shape), else the naive
one; ALLREDUCE=naive or ALLREDUCE=ring in the environment forces one.

Gradients: the parts are plain graphs, so the backward pass runs on them as it is
(tinyfw/uop/gradient.py: a COPY's gradient is a COPY back). Tensor.backward of a multi tensor
seeds each part (a replicated scalar loss: only the first part, which already depends on every
shard through the all-reduce); a replicated parameter's gradient is the all-reduce of its parts'
gradients (each device saw only its own shard of the batch), a sharded one's is its parts'.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tinyfw.dtype import DType, dtypes
from tinyfw.helpers import prod
from tinyfw.uop.ops import ALU, COMPARISON, Ops, UOp, const

# elements of one part from which a ring all-reduce is used (with more than 2 devices):
# bench/allreduce.py on this project's 2-core machine, 4 devices, 2**20 float32: ring 17 ms,
# naive 28 ms; below it the ring's twice as many (smaller) copies cost more than they save
RING_THRESHOLD = 1 << 20


class MultiError(RuntimeError):
    """An op a sharded tensor does not support (rather than a wrong answer)."""


def split_sizes(size: int, n: int) -> list[int]:
    """How an axis of `size` splits over n devices: as evenly as it goes, the first ones one
    longer (10 over 3: 4, 3, 3)."""
    if size < n:
        raise MultiError(f"cannot shard an axis of {size} over {n} devices: each needs a row")
    return [size // n + (1 if i < size % n else 0) for i in range(n)]


class MultiUOp:
    """A value over several devices: `parts[i]` lives on `devices[i]`; `axis` is the axis the
    parts split (in order), or None when each part is the whole value (replicated)."""
    __slots__ = ("parts", "axis")

    def __init__(self, parts: Sequence[UOp], axis: int | None):
        self.parts, self.axis = tuple(parts), axis
        assert len(self.parts) >= 1 and len({p.dtype for p in self.parts}) == 1
        if axis is None:
            assert len({p.shape for p in self.parts}) == 1, "replicated parts of many shapes"
        else:
            rest = {p.shape[:axis] + p.shape[axis + 1:] for p in self.parts}
            assert len(rest) == 1, "parts differ off their sharded axis"

    def __repr__(self) -> str:
        return f"<MultiUOp {self.shape} {self.dtype.name} axis={self.axis} on {self.device}>"

    # --- what it is ---
    @property
    def device(self) -> tuple[str, ...]:
        return tuple(p.device for p in self.parts)

    @property
    def dtype(self) -> DType:
        return self.parts[0].dtype

    @property
    def shape(self) -> tuple[int, ...]:
        shape = self.parts[0].shape
        if self.axis is None:
            return shape
        return shape[:self.axis] + (self.sizes(),) + shape[self.axis + 1:]

    def sizes(self) -> int:
        """The length of the whole sharded axis."""
        assert self.axis is not None
        return sum(p.shape[self.axis] for p in self.parts)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return prod(self.shape)

    def bounds(self) -> list[tuple[int, int]]:
        """(start, end) of each part along the sharded axis."""
        assert self.axis is not None
        out, start = [], 0
        for p in self.parts:
            out.append((start, start + p.shape[self.axis]))
            start += p.shape[self.axis]
        return out

    def _map(self, fn: Any, axis: int | None = -1) -> MultiUOp:
        return MultiUOp([fn(p) for p in self.parts], self.axis if axis == -1 else axis)

    # --- placing a value ---
    def to_axis(self, axis: int | None, bounds: list[tuple[int, int]] | None = None) -> MultiUOp:
        """The same value split on `axis` (with these bounds), or replicated (None). A
        replicated value is cut locally; a sharded one is gathered to every device first."""
        if axis == self.axis and (axis is None or bounds is None or bounds == self.bounds()):
            return self
        whole = self if self.axis is None else self.gathered_everywhere()
        if axis is None:
            return whole
        bounds = bounds or _even_bounds(self.shape[axis], len(self.parts))
        parts = []
        for part, (start, end) in zip(whole.parts, bounds):
            cut = [(0, s) for s in part.shape]
            cut[axis] = (start, end)
            parts.append(part.shrink(tuple(cut)))
        return MultiUOp(parts, axis)

    def gathered_everywhere(self) -> MultiUOp:
        """Replicated: every device gets every part (an all-gather)."""
        if self.axis is None:
            return self
        return MultiUOp([self.gather(d) for d in self.device], None)

    def gather(self, device: str) -> UOp:
        """The whole value on one device: the parts copied there and put side by side."""
        if self.axis is None:
            return next((p for p in self.parts if p.device == device), self.parts[0]) \
                .copy_to(device)
        return concat([p.copy_to(device) for p in self.parts], self.axis)

    def copy_to(self, device: str | tuple[str, ...]) -> UOp | MultiUOp:
        if isinstance(device, tuple):
            if device != self.device:
                raise MultiError(f"cannot move a tensor on {self.device} to {device}: gather it "
                                 "to one device (.to(device)) and shard that")
            return self
        return self.gather(device)

    # --- elementwise ---
    def alu(self, op: Ops, *others: MultiUOp | UOp) -> MultiUOp:
        operands: list[MultiUOp] = []
        for o in (self, *others):
            if not isinstance(o, MultiUOp) or o.device != self.device:
                raise MultiError(f"{op} of a tensor on {self.device} with one on "
                                 f"{getattr(o, 'device', '?')}: shard both on the same devices")
            operands.append(o)
        axes = {o.axis for o in operands if isinstance(o, MultiUOp) and o.axis is not None}
        if len(axes) > 1:
            raise MultiError(f"{op} of tensors sharded on different axes {sorted(axes)}: "
                             "not supported (reshard one of them first)")
        axis = axes.pop() if axes else None
        bounds = next((o.bounds() for o in operands if o.axis is not None), None)
        dtype = dtypes.bool if op in COMPARISON else (operands[-1].dtype if op is Ops.WHERE
                                                      else self.dtype)
        # TODO 13.per_shard: write this part. The chapter explains it:
        #   chapters/13_many_devices/README.md#ops-on-shards
        raise NotImplementedError("not done yet: 13.per_shard")

    def const_like(self, value: float | int | bool, dtype: DType | None = None) -> MultiUOp:
        """value in this value's layout (each part's shape on its device)."""
        dtype = dtype or self.dtype
        return self._map(lambda p: const(value, dtype, p.device, p.shape))

    def _lift(self, x: MultiUOp | float) -> MultiUOp:
        return x if isinstance(x, MultiUOp) else self.const_like(x)

    # the small vocabulary UOp offers the math written on nodes (tinyfw/uop/elementwise_math)
    def _bin(self, op: Ops, x: MultiUOp | float, swap: bool = False) -> MultiUOp:
        return self._lift(x).alu(op, self) if swap else self.alu(op, self._lift(x))

    def __add__(self, x: MultiUOp | float) -> MultiUOp: return self._bin(Ops.ADD, x)
    def __radd__(self, x: float) -> MultiUOp: return self._bin(Ops.ADD, x, True)
    def __mul__(self, x: MultiUOp | float) -> MultiUOp: return self._bin(Ops.MUL, x)
    def __rmul__(self, x: float) -> MultiUOp: return self._bin(Ops.MUL, x, True)
    def __neg__(self) -> MultiUOp: return self.alu(Ops.NEG)
    def __sub__(self, x: MultiUOp | float) -> MultiUOp: return self + (-self._lift(x))
    def __rsub__(self, x: float) -> MultiUOp: return self._lift(x) + (-self)
    def __truediv__(self, x: MultiUOp | float) -> MultiUOp: return self._bin(Ops.FDIV, x)
    def __rtruediv__(self, x: float) -> MultiUOp: return self._bin(Ops.FDIV, x, True)
    def __lt__(self, x: MultiUOp | float) -> MultiUOp: return self._bin(Ops.CMPLT, x)
    def __gt__(self, x: MultiUOp | float) -> MultiUOp: return self._bin(Ops.CMPLT, x, True)
    def ne(self, x: MultiUOp | float) -> MultiUOp: return self._bin(Ops.CMPNE, x)
    def eq(self, x: MultiUOp | float) -> MultiUOp:
        return self.ne(x).alu(Ops.XOR, self.const_like(True, dtypes.bool))
    def maximum(self, x: MultiUOp | float) -> MultiUOp: return self._bin(Ops.MAX, x)
    def sqrt(self) -> MultiUOp: return self.alu(Ops.SQRT)
    def reciprocal(self) -> MultiUOp: return self.alu(Ops.RECIPROCAL)
    def sin(self) -> MultiUOp: return self.alu(Ops.SIN)
    def exp2(self) -> MultiUOp: return self.alu(Ops.EXP2)
    def log2(self) -> MultiUOp: return self.alu(Ops.LOG2)

    @staticmethod
    def true_like(x: MultiUOp) -> MultiUOp:
        return x.const_like(True, dtypes.bool)

    def where(self, x: MultiUOp | float, y: MultiUOp | float) -> MultiUOp:
        ref = x if isinstance(x, MultiUOp) else y
        assert isinstance(ref, MultiUOp), "where needs at least one node among its branches"
        return self.alu(Ops.WHERE, ref._lift(x), ref._lift(y))

    def cast(self, dtype: DType) -> MultiUOp: return self._map(lambda p: p.cast(dtype))
    def bitcast(self, dtype: DType) -> MultiUOp: return self._map(lambda p: p.bitcast(dtype))
    def detach(self) -> MultiUOp: return self._map(lambda p: p.detach())
    def contiguous(self) -> MultiUOp: return self._map(lambda p: p.contiguous())

    # --- reduce ---
    def reduce(self, op: Ops, axes: tuple[int, ...]) -> MultiUOp:
        """op (ADD or MAX) over axes: each part reduces its own rows; over the sharded axis an
        all-reduce then combines the partial results, so every device holds the total."""
        # TODO 13.per_shard: write this part. The chapter explains it:
        #   chapters/13_many_devices/README.md#ops-on-shards
        raise NotImplementedError("not done yet: 13.per_shard")

    def sum(self, axes: tuple[int, ...]) -> MultiUOp:
        return self.reduce(Ops.ADD, axes)

    # --- movement ---
    def permute(self, order: tuple[int, ...]) -> MultiUOp:
        order = tuple(order)
        axis = None if self.axis is None else order.index(self.axis)
        return self._map(lambda p: p.permute(order), axis)

    def reshape(self, shape: tuple[int, ...]) -> MultiUOp:
        shape = tuple(shape)
        if self.axis is None:
            return self._map(lambda p: p.reshape(shape))
        if prod(shape) != self.numel:
            raise MultiError(f"reshape {self.shape} -> {shape} changes the size")
        new = _reshaped_axis(self.shape, self.axis, shape, self.bounds())
        if new is None:
            raise MultiError(f"reshape {self.shape} -> {shape} of a tensor sharded on axis "
                             f"{self.axis}: the split would not fall on whole rows of one "
                             "axis of the new shape; not supported")
        total = self.shape[self.axis]

        def part_shape(p: UOp) -> tuple[int, ...]:
            size = shape[new] * p.shape[self.axis] // total  # type: ignore[index]
            return shape[:new] + (size,) + shape[new + 1:]
        return MultiUOp([p.reshape(part_shape(p)) for p in self.parts], new)

    def expand(self, shape: tuple[int, ...]) -> MultiUOp:
        shape = tuple(shape)
        if self.axis is None:
            return self._map(lambda p: p.expand(shape))
        if shape[self.axis] != self.shape[self.axis]:
            raise MultiError(f"expand {self.shape} -> {shape} grows the sharded axis "
                             f"{self.axis}: not supported")
        axis = self.axis
        return self._map(lambda p: p.expand(shape[:axis] + (p.shape[axis],) + shape[axis + 1:]))

    def _off_axis(self, name: str, arg: tuple, untouched: Any) -> None:
        if self.axis is not None and arg[self.axis] != untouched(self.shape[self.axis]):
            raise MultiError(f"{name} {arg} of a tensor sharded on axis {self.axis} touches "
                             "the sharded axis: not supported (gather it first)")

    def pad(self, padding: tuple[tuple[int, int], ...]) -> MultiUOp:
        padding = tuple((int(b), int(a)) for b, a in padding)
        self._off_axis("pad", padding, lambda s: (0, 0))
        return self._map(lambda p: p.pad(padding))

    def shrink(self, bounds: tuple[tuple[int, int], ...]) -> MultiUOp:
        bounds = tuple((int(s), int(e)) for s, e in bounds)
        self._off_axis("shrink", bounds, lambda s: (0, s))
        if self.axis is None:
            return self._map(lambda p: p.shrink(bounds))
        axis = self.axis
        return self._map(lambda p: p.shrink(bounds[:axis] + ((0, p.shape[axis]),)
                                            + bounds[axis + 1:]))

    def flip(self, axes_mask: tuple[bool, ...]) -> MultiUOp:
        self._off_axis("flip", tuple(bool(m) for m in axes_mask), lambda s: False)
        return self._map(lambda p: p.flip(axes_mask))

    # --- realizing and assigning ---
    def assigned(self, number: int) -> MultiUOp:
        """Each part a node of its own (Tensor.assign's DETACH numbered `number`)."""
        return self._map(lambda p: UOp(Ops.DETACH, p.dtype, (p,), number))

    def toposort(self, stop: Any = None) -> list[UOp]:
        """The nodes of every part's graph, each once."""
        seen: set[UOp] = set()
        return [n for p in self.parts for n in p.toposort(stop, seen)]


def _even_bounds(size: int, n: int) -> list[tuple[int, int]]:
    out, start = [], 0
    for s in split_sizes(size, n):
        out.append((start, start + s))
        start += s
    return out


def _reshaped_axis(old: tuple[int, ...], axis: int, new: tuple[int, ...],
                   bounds: list[tuple[int, int]]) -> int | None:
    """The axis of `new` that the split of `old` along `axis` falls on, or None. The parts are
    runs of whole rows (of prod(old[axis+1:]) elements) in memory order: the new axis is one
    with the same number of elements before it, whose own rows each part's run covers whole."""
    before, total = prod(old[:axis]), old[axis]
    for j in range(len(new)):
        if prod(new[:j]) != before or prod(new[j:]) != prod(old[axis:]):
            continue
        if new[j] == 1 and total != 1:
            continue
        if all((s * new[j]) % total == 0 and (e * new[j]) % total == 0 for s, e in bounds):
            return j
    return None


def concat(parts: list[UOp], axis: int) -> UOp:
    """Parts of one device side by side along axis: each padded with zeros to the whole and
    added (bools as ints: they have no ADD)."""
    if len(parts) == 1:
        return parts[0]
    dtype = parts[0].dtype
    as_ints = [p.cast(dtypes.int32) for p in parts] if dtype.is_bool else parts
    total, start, out = sum(p.shape[axis] for p in parts), 0, None
    for p in as_ints:
        pad = [(0, 0)] * p.ndim
        pad[axis] = (start, total - start - p.shape[axis])
        start += p.shape[axis]
        placed = p.pad(tuple(pad))
        out = placed if out is None else out + placed
    assert out is not None
    return out.cast(dtypes.bool) if dtype.is_bool else out


# --- all-reduce ---
def _combine(op: Ops, a: UOp, b: UOp) -> UOp:
    assert op in ALU
    return a.alu(op, b)


def naive_all_reduce(op: Ops, parts: list[UOp]) -> list[UOp]:
    """Every device copies every part and combines them in device order (the same bits on
    every device)."""
    out = []
    for device in (p.device for p in parts):
        total = parts[0].copy_to(device)
        for p in parts[1:]:
            total = _combine(op, total, p.copy_to(device))
        out.append(total)
    return out


def ring_all_reduce(op: Ops, parts: list[UOp]) -> list[UOp]:
    """Reduce-scatter then all-gather around the ring of devices, over n chunks of each part
    (flattened; the chunks as even as they go)."""
    n, shape = len(parts), parts[0].shape
    numel = prod(shape)
    if numel < n:  # too small to cut into a chunk per device
        return naive_all_reduce(op, parts)
    flat = [p.reshape((numel,)) for p in parts]
    cuts = _even_bounds(numel, n)
    # chunks[d][c]: device d's current value of chunk c
    chunks = [[f.shrink(((s, e),)) for s, e in cuts] for f in flat]
    devices = [p.device for p in parts]
    # TODO 13.ring: write this part. The chapter explains it:
    #   chapters/13_many_devices/README.md#the-ring-all-reduce
    raise NotImplementedError("not done yet: 13.ring")
    return [concat(chunks[d], 0).reshape(shape) for d in range(n)]


def all_reduce(op: Ops, parts: list[UOp], kind: str | None = None) -> list[UOp]:
    """Each device's part combined (ADD or MAX) with all the others: the total on every device.
    kind: "naive", "ring", or None to choose by size (module docstring)."""
    kind = kind or os.getenv("ALLREDUCE") or \
        ("ring" if len(parts) > 2 and prod(parts[0].shape) >= RING_THRESHOLD else "naive")
    if kind not in ("naive", "ring"):
        raise ValueError(f"all-reduce kind {kind!r}: say naive or ring")
    return (ring_all_reduce if kind == "ring" else naive_all_reduce)(op, parts)


def shard(node: UOp | MultiUOp, devices: tuple[str, ...], axis: int | None) -> MultiUOp:
    """node's value on devices: a copy of the whole on each (axis None), or split along axis
    as evenly as it goes (split_sizes: the first devices one row longer), each device copying
    only its own slice."""
    if isinstance(node, MultiUOp):
        if node.device != devices:
            node = node.gather(node.device[0])
        else:
            return node.to_axis(axis)
    assert isinstance(node, UOp)
    # TODO 13.shard: write this part. The chapter explains it:
    #   chapters/13_many_devices/README.md#sharding-a-tensor
    raise NotImplementedError("not done yet: 13.shard")


def data_parallel_gradient(target: MultiUOp, grads: dict[UOp, UOp]) -> MultiUOp | None:
    """The gradient of a tensor over many devices from those the backward pass found for its
    parts (`grads`, by part; a part no gradient reached is missing): None when none was
    reached. A replicated tensor (a parameter in data-parallel training) was used by every
    device on its own shard of the batch, so its gradient is the all-reduced sum of its parts'
    (a part that got none counts zero); a sharded tensor's parts keep their own gradients."""
    # TODO 13.gradients: write this part. The chapter explains it:
    #   chapters/13_many_devices/README.md#data-parallel-gradients
    raise NotImplementedError("not done yet: 13.gradients")


def with_gradient_parts(value: MultiUOp, inputs: list[Any], override: Any) -> MultiUOp:
    """tinyfw/uop/gradient.py's with_gradient part by part: each part of value gets the
    override, with the inputs' parts on its device (placed as value is)."""
    from tinyfw.uop.gradient import with_gradient
    placed = []
    for x in inputs:
        if not isinstance(x, MultiUOp) or x.device != value.device:
            raise MultiError(f"a gradient override of a tensor on {value.device} with an input "
                             f"on {getattr(x, 'device', '?')}: not supported")
        if x.axis is not None and x.shape != value.shape:
            # an input of another shape (a loss's logits (N, C) for its values (N,)) is taken
            # part by part where it is cut alike: on the value's axis, into parts as long
            if value.axis != x.axis or [q.shape[x.axis] for q in x.parts] != \
                    [q.shape[x.axis] for q in value.parts]:
                raise MultiError(f"a gradient override with a sharded input of shape {x.shape} "
                                 f"for a value of shape {value.shape}: not supported")
            placed.append(x)
            continue
        placed.append(x if x.axis is None and x.shape != value.shape else
                      x.to_axis(value.axis, value.bounds() if value.axis is not None else None))
    return MultiUOp([with_gradient(p, tuple(x.parts[i] for x in placed), override)
                     for i, p in enumerate(value.parts)], value.axis)


def one_device(node: Any) -> UOp:
    """A value as a plain graph of one device: itself, a replicated value's first part, or a
    sharded one gathered on its first device."""
    if isinstance(node, UOp):
        return node
    return node.parts[0] if node.axis is None else node.gather(node.device[0])


def parts_of(node: UOp | MultiUOp) -> tuple[UOp, ...]:
    """The plain graphs of a tensor's value: its parts, or itself."""
    return node.parts if isinstance(node, MultiUOp) else (node,)
