"""State across the calls of a TinyJit: tensors kept in the same buffers from call to call.

tinyfw's assign is lazy: `p.assign(p - lr * p.grad)`, realized, gives p a *new* buffer, and the
captured kernels would read p's old one at every replay. So at the end of a capture keep_in
makes each tensor the function assigned hold its value in the buffer it held before the call,
`old`: the kernel that computed the new value writes `old` itself where that is safe (in place),
else a copy new -> old is appended to the jit cache. Every replay then reads and writes the same
buffers.

Buffers the cache reads but does not make are *pinned* (a learning rate, frozen weights, the
state). A pinned tensor assigned outside a capture (a learning-rate schedule, a checkpoint
loaded) moves to a new buffer that no replay reads: the Guard, always listening to realize,
notes it, and copy_back_moved, called before each TinyJit call, copies its value back into the
pinned buffer.
"""
from __future__ import annotations

import weakref
from typing import Any, Protocol

from tinyfw.device import Buffer, Device
from tinyfw import multi
from tinyfw.engine import realize
from tinyfw.engine.capture import Launch, capture_in_this_thread
from tinyfw.engine.schedule import ScheduleItem
from tinyfw.helpers import shape_str
from tinyfw.jit.errors import JitError
from tinyfw.jit.inputs import view
from tinyfw.tensor import Tensor
from tinyfw.uop.ops import Ops, UOp


class Part:
    """One part of a tensor over many devices (tinyfw/multi.py), standing for a tensor of its
    own where a capture keeps state: its node is the part's; setting it sets that part."""

    def __init__(self, tensor: Tensor, index: int):
        self.tensor, self.index = tensor, index

    @property
    def uop(self) -> UOp:
        return multi.parts_of(self.tensor.uop)[self.index]

    @uop.setter
    def uop(self, node: UOp) -> None:
        whole = multi.lowered(self.tensor.uop)
        parts = list(whole.src)
        parts[self.index] = node
        self.tensor.uop = multi.multi(parts, whole.arg)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.uop.shape


# --- at the capture: each assigned tensor's value kept in its old buffer ---
def keep_in(name: str, cache: list[Launch], tensor: Any, old: Buffer,
            outputs: list[Tensor]) -> bool:
    """Make replays of cache (TinyJit(name)'s, which returned outputs) leave tensor's value in
    old, the buffer it held before the captured call: the kernel that wrote its new value writes
    old instead where that is safe, else a copy new -> old is appended to cache. Old gets this
    call's value now and tensor (a Tensor, or a Part of one) points at it. False if the tensor
    did not move to a new buffer."""
    if not realize.is_realized(tensor.uop):
        raise JitError(f"TinyJit({name}): the function assigned to a tensor of shape "
                       f"{shape_str(tensor.shape)} but left it unrealized, so replays would "
                       "not update it. Realize it in the function (Tensor.realize_all(...) "
                       "with the parameters) or return it.")
    new = realize.buffer_of(tensor.uop)
    if new is old:
        return False
    writer = next((i for i, launch in enumerate(cache) if launch.out is new), None)
    shown = any(t is not tensor and realize.is_realized(t.uop)
                and realize.buffer_of(t.uop) is new for t in outputs)
    if writer is not None and not shown and _can_write_in_place(cache, writer, old):
        for launch in cache[writer:]:
            launch.out = old if launch.out is new else launch.out
            launch.inputs = [old if b is new else b for b in launch.inputs]
    else:
        cache.append(Launch(copy_item(old, new), old, [new]))
    old.copyin(new.numpy())
    tensor.uop = view(old, tensor.shape)
    if isinstance(tensor, Tensor):  # (not a part of a tensor over many devices)
        tensor._refresh_views()  # its views read old too, which replays write
    return True


def _can_write_in_place(cache: list[Launch], writer: int, old: Buffer) -> bool:
    """Can the kernel at cache[writer] write old rather than its own new buffer?"""
    launch = cache[writer]
    ast = launch.item.ast
    # (a device whose kernels may not read and write one buffer says so: WebGPU refuses a
    # buffer bound both as a kernel's writable output and as one of its read-only inputs)
    if ast is None or not Device[launch.item.device].renderer.in_place:
        return False
    if any(old in later.inputs for later in cache[writer + 1:]):
        return False  # a later kernel reads the old value
    reads = {i + 1 for i, b in enumerate(launch.inputs) if b is old}  # LOAD args count from 1
    store_view = ast.src[0].arg
    return all(node.src[0].arg == store_view for node in ast.toposort()
               if node.op is Ops.LOAD and node.arg in reads)


def copy_item(dest: Buffer, src: Buffer) -> ScheduleItem:
    """A schedule step copying src into dest (a copy: ast None)."""
    return ScheduleItem(None, view(dest, (dest.size,)), (view(src, (src.size,)),),
                        f"copy {dest.size}")


# --- between the calls: pinned tensors assigned, copied back ---
class Pinning(Protocol):
    """A captured TinyJit, as the Guard sees it: the buffers its replays read and do not make."""
    pinned: set[Buffer]


live_jits: weakref.WeakSet[Pinning] = weakref.WeakSet()  # the TinyJits captured, still alive
# pinned tensors assigned since (with the index of the part, for a tensor over many devices)
_moved: list[tuple[weakref.ref[Tensor], Buffer, int | None]] = []


class Guard(realize.Listener):
    """Always listening: a pinned tensor assigned outside a capture is noted, so that its new
    value is copied into its pinned buffer before the next TinyJit call."""

    def assigning(self, tensor: Any) -> None:
        if capture_in_this_thread() is not None:  # this thread's capture follows it itself
            return
        whole = not isinstance(tensor.device, tuple)
        for index, node in enumerate(multi.parts_of(tensor.uop)):
            if not realize.is_realized(node):
                continue
            buf = realize.buffer_of(node)
            if any(buf in jit.pinned for jit in list(live_jits)):
                _moved.append((weakref.ref(tensor), buf, None if whole else index))


realize.listeners.append(Guard())


def copy_back_moved() -> None:
    """Each pinned tensor assigned since the last TinyJit call: its new value is copied into
    its pinned buffer (through the host), and it points at that buffer again."""
    global _moved
    moved, _moved = _moved, []
    for ref, pinned, index in moved:
        if (found := ref()) is None:
            continue
        tensor: Any = found if index is None else Part(found, index)
        value = realize.buffer_of(realize.realize(tensor.uop))
        if value is not pinned:
            pinned.copyin(value.numpy())
            realize.forget_readers({pinned})
        tensor.uop = view(pinned, tensor.shape)
        if index is None:
            found._refresh_views()
