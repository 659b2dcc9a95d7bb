"""Turning lazy nodes into buffers: schedule the kernels, then run them on their device."""
from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

import numpy as np

from tinyfw.engine.debug import print_kernel_details, print_kernel_run, print_schedule
from tinyfw.engine.settings import debug_level
from tinyfw.device import Buffer, Device
from tinyfw.engine.program import CompiledKernel, build_programs, get_program
from tinyfw.engine.schedule import ScheduleItem
from tinyfw.engine.buffers import buffer_of, is_buffer_view, is_realized
from tinyfw.engine.const_args import with_const_args
from tinyfw.engine.schedule_cache import Walk, cached_schedule, recent_schedule, remember_recent
from tinyfw import multi
from tinyfw.uop.ops import Ops, UOp

# A lazy node already computed holds the buffer of its value in its `realized` field (and the
# buffer goes with the node). Nodes are immutable and buffers are never written twice, so a
# node's value never changes (except where a TinyJit replays the kernels that wrote them: see
# tinyfw/jit/jit.py, and forget below). Each node given a value is also listed here, weakly,
# for forget: the list drops the nodes gone or forgotten as it grows. (`realized` is the one
# field of a node written after it is made: through its slot, past UOp's __setattr__.)
_set_realized: Callable[[UOp, Any], None] = UOp.__dict__["realized"].__set__
_realized: list[weakref.ref[UOp]] = []
_prune_at = 1024
_prune_lock = threading.Lock()


def _remember(node: UOp, buffer: Buffer) -> None:
    """node's value is in buffer."""
    _set_realized(node, buffer)
    _realized.append(weakref.ref(node))
    if len(_realized) > _prune_at:
        _computed_nodes()


def _computed_nodes() -> list[UOp]:
    """Every node holding a value now (the list of them pruned on the way)."""
    global _prune_at
    with _prune_lock:
        count = len(_realized)  # (nodes listed meanwhile by another thread stay, after these)
        alive = {id(node): node for ref in _realized[:count]
                 if (node := ref()) is not None and node.realized is not None}
        _realized[:count] = [weakref.ref(node) for node in alive.values()]
        _prune_at = max(1024, 2 * len(alive))
        return list(alive.values())


# --- deferred checks ---
# Some errors depend on data a lazy graph has not computed yet: an integer division by a tensor
# holding a zero, a class index out of range. The op that could go wrong attaches a check to the
# node it makes; realizing a graph that contains that node computes the check's flag in the same
# schedule and raises the check's error if the flag is true.

@dataclass(frozen=True, eq=False)
class Check:
    """A condition on data: `violated` (a bool node of shape ()) must come out False, else
    `error(message)` is raised; "{value}" in message is replaced by the value of `value`, a
    node of shape () computed with it (the offending value, say), or by its first element
    when it has several, "{value[i]}" by its element i."""
    violated: UOp
    error: type[Exception]
    message: str
    value: UOp | None = None

    def nodes(self) -> list[UOp]:
        """The nodes to compute for this check."""
        return [self.violated] if self.value is None else [self.violated, self.value]


# checked node -> its checks. (A check's nodes are built from the op's inputs, not from the
# checked node, so the entry goes when the checked node does.)
_checks: weakref.WeakKeyDictionary[UOp, list[Check]] = weakref.WeakKeyDictionary()
# flag node -> its check, weakly both ways (a check holds its flag: a strong value would keep
# the key alive forever): how a schedule's step is known to compute a check
_check_of: weakref.WeakKeyDictionary[UOp, weakref.ref[Check]] = weakref.WeakKeyDictionary()
checks_made = False  # (until the first: no realize looks for any)


def attach_check(node: UOp, check: Check) -> None:
    """Make every realize of a graph containing node verify check (see Check)."""
    if multi.over_many(node):  # (tinyfw/multi.py): each part checks, on one device
        value = None if check.value is None else multi.one_device(check.value)
        check = Check(multi.one_device(check.violated), check.error, check.message, value)
        for part in multi.parts_of(node):
            attach_check(part, check)
        return
    global checks_made
    checks_made = True
    _checks.setdefault(node, []).append(check)
    _check_of[check.violated] = weakref.ref(check)


def check_of(node: UOp) -> Check | None:
    """The check whose flag node is node, if it is one."""
    ref = _check_of.get(node)
    return None if ref is None else ref()


def checks_in(walk: Walk, taken: set[Check]) -> list[Check]:
    """The checks, not in taken yet, attached to nodes of walk that its schedule computes (not
    to nodes below one already computed, whose checks were verified when it was), in the
    walk's order; they are added to taken."""
    if not _checks:
        return []
    checked = sorted(walk.position.keys() & set(_checks.keys()), key=walk.position.__getitem__)
    if not checked:
        return []
    computed = walk.computed()
    found: list[Check] = []
    for node in checked:
        if node in computed and not is_loaded(node):
            for check in _checks.get(node, ()):
                if check not in taken:
                    taken.add(check)
                    found.append(check)
    return found


def violation(check: Check, flag: Buffer, value: Buffer | None) -> Exception | None:
    """The error of a check whose flag buffer (and value buffer) were computed, if violated."""
    if not bool(flag.numpy().reshape(-1)[0]):
        return None
    shown = [] if value is None else value.numpy().reshape(-1).tolist()
    message = check.message
    for i, v in enumerate(shown):
        message = message.replace(f"{{value[{i}]}}", str(v))
    return check.error(message.replace("{value}", str(shown[0]) if shown else ""))


def _verify(items: list[ScheduleItem]) -> None:
    """After a schedule ran: raise the error of the first violated check it computed. The nodes
    it computed are forgotten first, so a later realize computes (and checks) them again."""
    if not checks_made or not _check_of:  # (no check exists anywhere: nothing to look up)
        return
    for item in items:
        check = check_of(item.output)
        if check is None or item.output.realized is None:
            continue
        value = None if check.value is None else buffer_of(realize(check.value))
        error = violation(check, item.output.realized, value)
        if error is not None:
            for done in items:
                _set_realized(done.output, None)
            raise error


# (Enum members looked up on the class are slow in Python 3.11: see tinyfw/uop/ops.py)
_BUFFER, _RESHAPE = Ops.BUFFER, Ops.RESHAPE


def is_loaded(node: UOp) -> bool:
    """True for a node the scheduler loads from memory rather than computes: a buffer in its own
    shape (one reshape of a BUFFER) or a node computed before from buffers. Reshapes stacked on
    those stay in the kernel as views of the load, so a deeper buffer view is realized but not
    loaded itself. A node computed before from constants alone (`Tensor.ones(3)`, realized)
    is computed again where it is used: nodes are shared (hash-consed), so another graph that
    builds the same constant would otherwise read it from that buffer, not inline it."""
    direct = node.op is _BUFFER or (node.op is _RESHAPE and node.src[0].op is _BUFFER)
    return direct or (node.realized is not None and reads_a_buffer(node))


def forget(buffers: set[Buffer]) -> None:
    """Forget the nodes computed into these buffers: a TinyJit's replays overwrite them, so a
    later realize must compute such a node again rather than trust the buffer."""
    for node in _computed_nodes():
        if node.realized in buffers:
            _set_realized(node, None)


def forget_readers(buffers: set[Buffer], keep: frozenset[UOp] = frozenset()) -> None:
    """Forget the nodes computed from (or into) these buffers: their memory is about to change
    or has changed in place (a TinyJit's state), so a computed value read from it is stale.
    The nodes in keep stay computed (a TinyJit's inputs: their buffers are what it reads)."""
    if not buffers:
        return
    for node in _computed_nodes():
        if node in keep:
            continue
        if node.realized in buffers or not buffers.isdisjoint(buffers_read(node)):
            _set_realized(node, None)


def buffers_read(node: UOp) -> frozenset[Buffer]:
    """The buffers node's value is computed from (found once per node: a TinyJit asks after
    every replay, for every value computed so far)."""
    if (found := _buffers_read.get(node)) is None:
        found = frozenset(n.arg for n in node.toposort() if n.op is Ops.BUFFER)
        _buffers_read[node] = found
    return found


_buffers_read: weakref.WeakKeyDictionary[UOp, frozenset[Buffer]] = weakref.WeakKeyDictionary()


def reads_a_buffer(node: UOp) -> bool:
    """Whether a buffer is below node: bool(buffers_read(node)), each node's answer made from
    its sources' (remembered), so asking of every node of a deep graph walks it once in all,
    not once for each (a prompt's realized cache of keys sits on the whole history of writes)."""
    if (known := _reads_a_buffer.get(node)) is not None:
        return known
    for n in node.toposort(stop=lambda m: m in _reads_a_buffer):
        if n not in _reads_a_buffer:
            _reads_a_buffer[n] = n.op is Ops.BUFFER or any(_reads_a_buffer[s] for s in n.src)
    return _reads_a_buffer[node]


_reads_a_buffer: weakref.WeakKeyDictionary[UOp, bool] = weakref.WeakKeyDictionary()


class Listener:
    """Something told of what realize and Tensor do: a TinyJit (tinyfw/jit/jit.py) records the
    kernels launched while it captures, follows assigns and forbids reads of data."""

    def launched(self, item: ScheduleItem, out: Buffer, inputs: list[Buffer]) -> None:
        """A kernel (or copy) just ran, writing out from inputs."""

    def assigning(self, tensor: Any) -> None:
        """Tensor.assign is about to give tensor a new value."""

    def reading(self, tensor: Any) -> None:
        """Tensor._read (numpy, item, x[list], ...) is about to read tensor's value on the host."""


# Listeners told of what every thread does (TinyJit's guard of pinned buffers).
listeners: list[Listener] = []
# Listeners told only of what one thread does: a TinyJit's capture records the kernels its own
# thread launches, and forbids reads in that thread alone; another thread that realizes or
# reads tensors meanwhile is none of its business.
class _ThreadListeners(threading.local):
    def __init__(self) -> None:
        self.listeners: list[Listener] = []  # (each thread starts with none)


_this_thread = _ThreadListeners()


def thread_listeners() -> list[Listener]:
    """The listeners of the calling thread only (a capture under way in it, if any)."""
    return _this_thread.listeners


def active_listeners() -> list[Listener]:
    """Everyone to tell of what the calling thread does: the global listeners, then its own."""
    return listeners + _this_thread.listeners


def note_assign(tensor: Any) -> None:
    """Called by Tensor.assign before it changes the tensor."""
    for listener in active_listeners():
        listener.assigning(tensor)


def note_read(tensor: Any) -> None:
    """Called by Tensor._read, the one path of every host read, before it reads the data."""
    for listener in active_listeners():
        listener.reading(tensor)


def schedule(*nodes: UOp) -> list[ScheduleItem]:
    """The kernels that realizing nodes would run, in order (a value over many devices: its
    parts', each a graph of one device, rewritten so by tinyfw/multi.py)."""
    if len(nodes) != 1 or multi.over_many(nodes[0]):  # (one node of one device: itself)
        nodes = tuple(part for node in nodes for part in multi.parts_of(node))
    # One walk of the graph: it finds the deferred checks under the nodes (and under the
    # checks' own nodes), which are computed with them, and makes the schedule cache's key.
    if len(nodes) == 1 and not (checks_made and _checks) and not is_realized(nodes[0]):
        if (items := recent_schedule(nodes[0])) is not None:  # (an eager op)
            return items
    walk = Walk(is_loaded)
    walk.add(n for n in nodes if not is_realized(n))
    taken: set[Check] = set()
    while checks := checks_in(walk, taken):
        walk.add(dict.fromkeys(n for c in checks for n in c.nodes() if not is_loaded(n)))
    items = with_const_args(cached_schedule(walk))  # numbers that vary: kernel arguments
    if not taken:  # (a schedule with checks is never one found without a walk)
        remember_recent(walk, items)
    return items


def run_schedule(items: list[ScheduleItem]) -> None:
    """Run each step on its device, giving each output a new buffer (DEBUG=1..5 tells)."""
    level = debug_level()
    if level >= 1 and items:
        print_schedule(items)
    # (DEBUG>=3 shows each kernel's passes as get_program runs them, one kernel at a time)
    built = build_programs(items) if level < 3 else [None] * len(items)
    told = active_listeners()
    for number, (item, compiled) in enumerate(zip(items, built)):
        output = item.output
        inputs = [buffer_of(n) for n in item.inputs]
        out = Buffer(output.device, output.numel, output.dtype)
        if out.size == 0:  # nothing to compute (nor to build)
            _remember(output, out)
            continue
        if item.ast is None:  # a copy
            launch(item, out, inputs)
        elif level < 2:  # (the program was found or built above)
            assert compiled is not None
            Device[output.device].run(compiled.runner, item, out, inputs)
        else:  # timed, the program built first (DEBUG>=3: here, its passes printed)
            compiled = compiled or get_program(item)
            if level >= 3:
                print_kernel_details(compiled)
            start = time.perf_counter()
            launch(item, out, inputs, compiled)
            Device[output.device].synchronize()  # a device that queues work (WEBGPU) is done
            in_bytes = sum(b.size * b.dtype.itemsize for b in inputs)
            print_kernel_run(number, item, time.perf_counter() - start, in_bytes)
        for listener in told:
            listener.launched(item, out, inputs)
        _remember(output, out)
    _verify(items)


def launch(item: ScheduleItem, out: Buffer, inputs: list[Buffer],
           compiled: CompiledKernel | None = None) -> None:
    """Run one step of a schedule: its kernel's program (built if not given) on its device, or
    (ast None) a copy."""
    if item.ast is None:
        out.copyin(inputs[0].numpy())
    else:
        if compiled is None:  # (remembered for the next launch of item: a TinyJit's replay)
            compiled = _launched.get(item) or get_program(item)
            _launched[item] = compiled
        Device[item.device].run(compiled.runner, item, out, inputs)


def program_of(item: ScheduleItem) -> CompiledKernel:
    """The program a scheduled kernel ran with (built if it has not run)."""
    compiled = _launched.get(item) or get_program(item)
    _launched[item] = compiled
    return compiled


# The program each scheduled kernel last ran, kept while the item lives: a TinyJit replay
# launches its captured items again and finds their programs here, without the passes.
_launched: weakref.WeakKeyDictionary[ScheduleItem, CompiledKernel] = weakref.WeakKeyDictionary()


def share_program(item: ScheduleItem, like: ScheduleItem) -> None:
    """item launches the program `like` last ran (a TinyJit's item made anew, same kernel)."""
    if (program := _launched.get(like)) is not None:
        _launched[item] = program


def realize(node: UOp) -> UOp:
    """A buffer view holding node's value, computing it (and remembering it) if needed; for a
    value over many devices, a MULTI of one for each part (tinyfw/multi.py)."""
    if node.op is _BUFFER or is_buffer_view(node):
        return node
    rewritten = multi.lowered(node)
    if rewritten.op is Ops.MULTI:
        pending = [p for p in rewritten.src if not is_realized(p)]
        if pending:  # (in one schedule: the parts share work, an all-reduce's)
            run_schedule(schedule(*pending))
        return multi.multi([realize(p) for p in rewritten.src], rewritten.arg)
    if rewritten is not node:  # a node above a gather: its value is its rewritten node's
        value = realize(rewritten)
        if node.realized is None:
            _remember(node, buffer_of(value))
        return value
    if node.realized is None:
        run_schedule(schedule(node))
    view = UOp(_BUFFER, node.dtype, (), node.realized)
    return view if view.shape == node.shape else UOp(_RESHAPE, node.dtype, (view,), node.shape)


def read(node: UOp, copy: bool) -> np.ndarray:
    """node's value on the host, in its shape: an array of the caller's own (copy), or one only
    to read, with no copy where the device's memory is a numpy array. A value over many
    devices is read part by part and put together (a replicated one: its first part)."""
    value = realize(node)
    if value.op is Ops.MULTI:
        arrays = [read(p, copy) for p in value.src]
        return arrays[0] if value.arg is None else np.concatenate(arrays, axis=value.arg)
    buffer = buffer_of(value)
    # Buffer.numpy is already a new array of the caller's own: a copy more would be a second
    # pass over the memory and a second array at once.
    return (buffer.numpy() if copy else buffer.host_view()).reshape(node.shape)


def own_buffers(node: UOp) -> UOp:
    """node's value computed and copied into new buffers of its own (a parameter's, which no
    other node shares), laid out as it is: one per part over many devices."""
    value = realize(node)
    if value.op is Ops.MULTI:
        return multi.multi([own_buffers(p) for p in value.src], value.arg)
    old = buffer_of(value)
    buffer = Buffer(value.device, old.size, old.dtype, old.numpy())
    return UOp(_BUFFER, value.dtype, (), buffer).reshape(value.shape)
