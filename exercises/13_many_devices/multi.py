# Exercises of chapter 13, generated from tinyfw/multi.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/13_many_devices
# generated text id: 5e0f8f90181a5f35 (lets tools.generate tell your edits apart)
"""Many devices (chapter 13): a tensor's value spread over several devices, and all-reduce.

A value over several devices is a node of the graph like any other, whose `device` is a tuple of
device names. The Tensor builds its ops on such nodes as it builds them on any (elementwise,
movement, reduce, of the whole value's shape) and never asks where a value lives. Where the
value's layout is known, the node is a MULTI: its sources are its *parts*, one plain lazy graph
per device (in device order), and its argument the axis they split, or None when every device
holds the whole value (*replicated*). Constants on a tuple of devices and copies to one are the
other leaves of such graphs.

Before it schedules a graph, the engine hands it to `lowered`, the rewrite pass here: sources
first, each node over many devices is rewritten by the rule of its op (`rewrite`) into a MULTI
whose parts do the work on each device, from its sources' MULTIs. What the scheduler sees is
then graphs of one device each, scheduled, compiled and run as any other; what moves between
devices is a COPY node in them (so a TinyJit captures it as a copy). The rules:

* elementwise (`alu_multi`): part by part. A replicated operand meets a sharded one by cutting,
  on its own device, the slice each part needs (a SHRINK: no copy); two operands sharded on
  different axes are refused.
* reduce (`reduce_multi`): over other axes, part by part; over the sharded axis, each part
  reduces its rows and an all-reduce combines the partial results, so that every device holds
  the total (replicated).
* movement: part by part, with the sharded axis followed: a permute moves it, a reshape keeps
  it when the split still falls on whole rows of an axis of the new shape; expand, pad, shrink
  and flip work on the other axes. Anything that would cut across parts is refused with an
  error that says so (raised when the graph is realized), never computed wrongly.
* copies: to a tuple of devices, a whole copy on each; from many devices to one, the parts
  copied there and put side by side (gathered).
* constants, CONTIGUOUS and DETACH: one per part.

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

Gradients need nothing of their own: the backward pass (tinyfw/uop/gradient.py) runs on the
graph the Tensor built, of whole values, before any rewrite, and its result is rewritten like
any graph. A replicated weight's gradient in data-parallel training is a sum over the batch the
devices split: the reduce rule makes it each device's partial sum and an all-reduce. Sharding a
value moves it without changing it, so its gradient goes back unchanged to where it came from
(`placed`: a gradient override).
"""
from __future__ import annotations

import os
import weakref
from collections.abc import Sequence

from tinyfw.helpers import prod
from tinyfw.dtype import dtypes
from tinyfw.uop import ops
from tinyfw.uop.gradient import GradientOverride, with_gradient
from tinyfw.uop.ops import ALU, Ops, UOp, const, device_node

# elements of one part from which a ring all-reduce is used (with more than 2 devices):
# bench/allreduce.py on this project's 2-core machine, 4 devices, 2**20 float32: ring 17 ms,
# naive 28 ms; below it the ring's twice as many (smaller) copies cost more than they save
RING_THRESHOLD = 1 << 20


class MultiError(RuntimeError):
    """An op a value over many devices does not support (rather than a wrong answer)."""


def split_sizes(size: int, n: int) -> list[int]:
    """How an axis of `size` splits over n devices: as evenly as it goes, the first ones one
    longer (10 over 3: 4, 3, 3)."""
    if size < n:
        raise MultiError(f"cannot shard an axis of {size} over {n} devices: each needs a row")
    return [size // n + (1 if i < size % n else 0) for i in range(n)]


def _even_bounds(size: int, n: int) -> list[tuple[int, int]]:
    """(start, end) of each of n parts of an axis of `size` (split_sizes)."""
    out, start = [], 0
    for s in split_sizes(size, n):
        out.append((start, start + s))
        start += s
    return out


# --- a value over many devices whose layout is known: a MULTI node ---
def multi(parts: Sequence[UOp], axis: int | None) -> UOp:
    """The MULTI node of parts (one graph per device, in device order) that split axis, or
    that each hold the whole value (axis None: replicated)."""
    return UOp(Ops.MULTI, parts[0].dtype, tuple(parts), axis)


def devices_of(node: UOp) -> tuple[str, ...]:
    """The devices node's value is on, as a tuple (one device: a tuple of one)."""
    device: str | tuple[str, ...] = node.device
    return device if isinstance(device, tuple) else (device,)


def bounds(value: UOp) -> list[tuple[int, int]]:
    """(start, end) of each part of a MULTI along its sharded axis."""
    axis = value.arg
    assert value.op is Ops.MULTI and axis is not None
    out, start = [], 0
    for p in value.src:
        out.append((start, start + p.shape[axis]))
        start += p.shape[axis]
    return out


def to_axis(value: UOp, axis: int | None, cuts: list[tuple[int, int]] | None = None) -> UOp:
    """A MULTI's value split on `axis` (with these bounds, else as even as it goes), or
    replicated (None). A replicated value is cut locally; a sharded one is gathered to every
    device first."""
    if axis == value.arg and (axis is None or cuts is None or cuts == bounds(value)):
        return value
    whole = value if value.arg is None else gathered_everywhere(value)
    if axis is None:
        return whole
    cuts = cuts or _even_bounds(value.shape[axis], len(value.src))
    parts = []
    for part, (start, end) in zip(whole.src, cuts):
        cut = [(0, s) for s in part.shape]
        cut[axis] = (start, end)
        parts.append(_cut(part, tuple(cut)))
    return multi(parts, axis)


def _cut(part: UOp, cut: tuple[tuple[int, int], ...]) -> UOp:
    """part.shrink(cut); a constant broadcast to part's shape is made at the cut's shape
    instead (the same value in fewer nodes: constants meet every sharded operand)."""
    below = part.src[0] if part.op is Ops.EXPAND else part
    below = below.src[0] if below.op is Ops.RESHAPE else below
    if below.op is Ops.CONST:
        return const(below.arg, part.dtype, part.device, tuple(e - s for s, e in cut))
    return part.shrink(cut)


def gathered_everywhere(value: UOp) -> UOp:
    """A MULTI's value replicated: every device gets every part (an all-gather)."""
    if value.arg is None:
        return value
    return multi([gather(value, d) for d in devices_of(value)], None)


def gather(value: UOp, device: str) -> UOp:
    """A MULTI's whole value on one device: the parts copied there and put side by side (a
    replicated value: its part there, else its first, copied)."""
    if value.arg is None:
        return next((p for p in value.src if p.device == device), value.src[0]).copy_to(device)
    return concat([p.copy_to(device) for p in value.src], value.arg)


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


# --- sharding: a value of one device put on many ---
def shard(node: UOp, devices: tuple[str, ...], axis: int | None) -> UOp:
    """node's value on devices, as a MULTI: a copy of the whole on each (axis None), or split
    along axis as evenly as it goes (split_sizes: the first devices one row longer), each
    device copying only its own slice. A value over many devices already is laid out anew on
    its own devices, or gathered to its first and sharded from there."""
    node = lowered(node)  # (graphs of one device each: what the parts are made of)
    if node.op is Ops.MULTI:
        if node.device == devices:
            return to_axis(node, axis)
        node = gather(node, devices_of(node)[0])
    # TODO 13.shard: write this part. The chapter explains it:
    #   chapters/13_many_devices/README.md#sharding-a-tensor
    raise NotImplementedError("not done yet: 13.shard")


def placed(node: UOp, devices: tuple[str, ...], axis: int | None) -> UOp:
    """shard(node, devices, axis) as a node of the graph the backward pass differentiates
    (Tensor.shard): the same value, moved, so its gradient goes back to where node is (a
    gradient override: the parts' own graphs are no business of the whole value's)."""
    return with_gradient(shard(node, devices, axis), (node,), GradientOverride(_moved_back))


def placed_like(node: UOp, like: UOp) -> UOp:
    """node's value placed as like's is: sharded on like's devices and axis, or on its device."""
    device: str | tuple[str, ...] = like.device
    if isinstance(device, str):
        return node.copy_to(device)
    return placed(node, device, axis_of(like))


def _moved_back(grad: UOp, value: UOp, source: UOp) -> tuple[UOp]:
    """The gradient of a value moved from source (placed): grad, where source is."""
    return (grad.copy_to(source.device),)


# --- the rewrite: each node over many devices as a MULTI of per-device work ---
def alu_multi(node: UOp, sources: list[UOp]) -> UOp:
    """An elementwise node of sources (each rewritten: a MULTI) part by part: every operand laid
    out as the sharded ones are (a replicated one cut on each device), then the op on each
    device's parts."""
    for s in sources:
        if s.device != node.device:
            raise MultiError(f"{node.op} of a tensor on {node.device} with one on {s.device}: "
                             "shard both on the same devices")
    axes = {s.arg for s in sources if s.arg is not None}
    if len(axes) > 1:
        raise MultiError(f"{node.op} of tensors sharded on different axes {sorted(axes)}: "
                         "not supported (reshard one of them first)")
    axis = axes.pop() if axes else None
    cuts = next((bounds(s) for s in sources if s.arg is not None), None)
    # TODO 13.per_shard: write this part. The chapter explains it:
    #   chapters/13_many_devices/README.md#ops-on-shards
    raise NotImplementedError("not done yet: 13.per_shard")


def reduce_multi(node: UOp, source: UOp) -> UOp:
    """A REDUCE (ADD or MAX) of source (a MULTI): each part reduces its own rows; over the
    sharded axis an all-reduce then combines the partial results, so every device holds the
    total."""
    op, axes = node.arg
    # TODO 13.per_shard: write this part. The chapter explains it:
    #   chapters/13_many_devices/README.md#ops-on-shards
    raise NotImplementedError("not done yet: 13.per_shard")


def permute_multi(node: UOp, source: UOp) -> UOp:
    """A PERMUTE part by part; the sharded axis moves with it."""
    order = node.arg
    axis = None if source.arg is None else order.index(source.arg)
    return multi([p.permute(order) for p in source.src], axis)


def reshape_multi(node: UOp, source: UOp) -> UOp:
    """A RESHAPE part by part, where the split still falls on whole rows of one axis of the new
    shape (that axis is the new sharded one)."""
    shape, axis = node.arg, source.arg
    if axis is None:
        return multi([p.reshape(shape) for p in source.src], None)
    new = _reshaped_axis(source.shape, axis, shape, bounds(source))
    if new is None:
        raise MultiError(f"reshape {source.shape} -> {shape} of a tensor sharded on axis "
                         f"{axis}: the split would not fall on whole rows of one axis of the new "
                         "shape; not supported")
    total = source.shape[axis]
    return multi([p.reshape(shape[:new] + (shape[new] * p.shape[axis] // total,)
                            + shape[new + 1:]) for p in source.src], new)


def _reshaped_axis(old: tuple[int, ...], axis: int, new: tuple[int, ...],
                   cuts: list[tuple[int, int]]) -> int | None:
    """The axis of `new` that the split of `old` along `axis` falls on, or None. The parts are
    runs of whole rows (of prod(old[axis+1:]) elements) in memory order: the new axis is one
    with the same number of elements before it, whose own rows each part's run covers whole."""
    before, total = prod(old[:axis]), old[axis]
    for j in range(len(new)):
        if prod(new[:j]) != before or prod(new[j:]) != prod(old[axis:]):
            continue
        if new[j] == 1 and total != 1:
            continue
        if all((s * new[j]) % total == 0 and (e * new[j]) % total == 0 for s, e in cuts):
            return j
    return None


def expand_multi(node: UOp, source: UOp) -> UOp:
    """An EXPAND part by part, of the axes other than the sharded one."""
    shape, axis = node.arg, source.arg
    if axis is None:
        return multi([p.expand(shape) for p in source.src], None)
    if shape[axis] != source.shape[axis]:
        raise MultiError(f"expand {source.shape} -> {shape} grows the sharded axis {axis}: "
                         "not supported")
    return multi([p.expand(shape[:axis] + (p.shape[axis],) + shape[axis + 1:])
                  for p in source.src], axis)


def _off_axis(name: str, arg: tuple, source: UOp, untouched: object) -> None:
    """MultiError if a movement op's per-axis arg does something (is not `untouched`) to the
    sharded axis of source."""
    axis = source.arg
    if axis is not None and arg[axis] != untouched:
        raise MultiError(f"{name} {arg} of a tensor sharded on axis {axis} touches the sharded "
                         "axis: not supported (gather it first)")


def pad_multi(node: UOp, source: UOp) -> UOp:
    """A PAD part by part, of the axes other than the sharded one."""
    _off_axis("pad", node.arg, source, (0, 0))
    return multi([p.pad(node.arg) for p in source.src], source.arg)


def shrink_multi(node: UOp, source: UOp) -> UOp:
    """A SHRINK part by part, of the axes other than the sharded one."""
    cut, axis = node.arg, source.arg
    _off_axis("shrink", cut, source, None if axis is None else (0, source.shape[axis]))
    if axis is None:
        return multi([p.shrink(cut) for p in source.src], None)
    return multi([p.shrink(cut[:axis] + ((0, p.shape[axis]),) + cut[axis + 1:])
                  for p in source.src], axis)


def flip_multi(node: UOp, source: UOp) -> UOp:
    """A FLIP part by part, of the axes other than the sharded one."""
    _off_axis("flip", node.arg, source, False)
    return multi([p.flip(node.arg) for p in source.src], source.arg)


def copy_multi(node: UOp, source: UOp) -> UOp:
    """A COPY: from one device to a tuple of them, a whole copy on each; from many to one, the
    value gathered there; between two tuples, only to the same (nothing to do)."""
    target = node.arg
    if source.op is not Ops.MULTI:  # from one device (a COPY above a gather, or to many)
        return shard(source, target, None) if isinstance(target, tuple) else \
            source.copy_to(target)
    if not isinstance(target, tuple):
        return gather(source, target)
    if target != source.device:
        raise MultiError(f"cannot move a tensor on {source.device} to {target}: gather it to "
                         "one device (.to(device)) and shard that")
    return source


def const_multi(node: UOp) -> UOp:
    """A CONST on a tuple of devices: the same constant on each (replicated)."""
    return multi([UOp(Ops.CONST, node.dtype, (device_node(d),), node.arg)
                  for d in devices_of(node)], None)


def part_by_part(node: UOp, source: UOp) -> UOp:
    """A node of one source and no change of layout (CONTIGUOUS, DETACH) on each part."""
    return multi([UOp(node.op, node.dtype, (p,), node.arg) for p in source.src], source.arg)


def rewrite(node: UOp, sources: list[UOp]) -> UOp:
    """node, whose value is over many devices or computed from one that is, as graphs of one
    device each: a MULTI of them, or (a node on one device above a gather) the node itself
    made of its rewritten sources. sources: node's sources rewritten (a MULTI for a value over
    many devices), in order."""
    op = node.op
    if op is Ops.DETACH and isinstance(node.arg, GradientOverride):
        return sources[0]  # the value (the override is the backward pass's, done by now)
    if op is Ops.COPY:
        return copy_multi(node, sources[0])
    if not isinstance(node.device, tuple):  # on one device, above a gather
        return UOp(op, node.dtype, tuple(sources), node.arg)
    if op is Ops.CONST:
        return const_multi(node)
    if op in ALU:
        return alu_multi(node, sources)
    if op is Ops.REDUCE:
        return reduce_multi(node, sources[0])
    if op is Ops.RESHAPE:
        return reshape_multi(node, sources[0])
    if op is Ops.PERMUTE:
        return permute_multi(node, sources[0])
    if op is Ops.EXPAND:
        return expand_multi(node, sources[0])
    if op is Ops.PAD:
        return pad_multi(node, sources[0])
    if op is Ops.SHRINK:
        return shrink_multi(node, sources[0])
    if op is Ops.FLIP:
        return flip_multi(node, sources[0])
    if op in (Ops.CONTIGUOUS, Ops.DETACH):
        return part_by_part(node, sources[0])
    raise MultiError(f"{op} of a value over many devices: no rule to run it per device")


# --- the pass ---
# Each node rewritten, kept while the node lives: a value is computed once per part however
# often it is asked for (a tensor read after a realize finds its parts computed), and a graph
# rewritten again costs only its new nodes.
_lowered: weakref.WeakKeyDictionary[UOp, UOp] = weakref.WeakKeyDictionary()
# node -> whether a node over many devices is below it, for nodes on one device (worked out
# only once a gather was made: ops.gathers_made)
_over_many: weakref.WeakKeyDictionary[UOp, bool] = weakref.WeakKeyDictionary()


def lowered(node: UOp) -> UOp:
    """node's graph rewritten into graphs of one device each: for a value over many devices a
    MULTI of them (the parts), for a value on one device the node itself, or the node made
    anew above the gathers it reads. Sources first: each node left to rewrite (not `settled`)
    gets rewrite()'s result, from its sources' results (a source that is settled is its own
    result)."""
    if node.op is Ops.MULTI or not over_many(node):
        return node
    if node not in _lowered:
        # TODO 13.rewrite: write this part. The chapter explains it:
        #   chapters/13_many_devices/README.md#the-rewrite-pass
        raise NotImplementedError("not done yet: 13.rewrite")
    return _lowered[node]


def settled(node: UOp) -> bool:
    """Whether nothing is left to rewrite at node: a MULTI (its parts are of one device each),
    a device's name, a node of one device with none over many below, or one rewritten
    already."""
    return node.op is Ops.MULTI or node.op is Ops.DEVICE or not over_many(node) or \
        node in _lowered


def over_many(node: UOp) -> bool:
    """Whether node's value, or one it is computed from, is over many devices."""
    if isinstance(node.device, tuple):
        return True
    if not ops.gathers_made:  # (then a value of one device has none over many below it)
        return False
    if (known := _over_many.get(node)) is not None:
        return known
    for n in node.toposort(stop=lambda m: m in _over_many or isinstance(m.device, tuple)):
        if n not in _over_many and not isinstance(n.device, tuple):
            _over_many[n] = any(over_many(s) for s in n.src)
    return _over_many[node]


def parts_of(node: UOp) -> tuple[UOp, ...]:
    """The graphs of one device each that compute node's value: its parts, or itself."""
    value = lowered(node)
    return value.src if value.op is Ops.MULTI else (value,)


def axis_of(node: UOp) -> int | None:
    """The axis node's value is split on over its devices (None: replicated, or one device)."""
    value = lowered(node)
    return value.arg if value.op is Ops.MULTI else None


def one_device(node: UOp) -> UOp:
    """A value as a plain graph of one device: itself, a replicated value's first part, or a
    sharded one gathered on its first device."""
    value = lowered(node)
    if value.op is not Ops.MULTI:
        return value
    return value.src[0] if value.arg is None else gather(value, devices_of(value)[0])


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
