"""The memory planner: buffers that are never needed at the same time share memory.

A captured training step writes many buffers that live only inside the step: the activations
of the forward pass, the gradients of backward, the temporaries of the optimizer's update.
Captured as they are, each keeps memory of its own for as long as the TinyJit lives, although
most are needed by two or three kernels of the step. The replays launch the same kernels in the
same order every time, so which buffer is needed when is known in advance: the planner decides
once, at the capture, which buffers can share, as tinygrad's memory planner does.

On the list of launches a TinyJit replays, in order (launch i writes `out` from `inputs`):

1. An *intermediate* is a buffer some launch writes and no one reads after the step: not an
   input, a state buffer, a returned tensor, a deferred check's flag, nor a tensor someone kept.
   The JIT names those in `keep`. A buffer read before any launch writes it carries a value from
   one step to the next (state), so it is no intermediate either.
2. Its *lifetime* runs from the launch that first writes it to the last launch that uses it
   (reads or writes it). Two lifetimes that share a launch overlap: a launch that reads one
   buffer and writes another needs both at once, so those two never share.
3. Walk the lifetimes in the order they start, as a memory allocator that knows the future: an
   intermediate takes the smallest free buffer of its device and dtype that holds it (best fit),
   else keeps its own. When its lifetime has ended, the buffer it used is free for those after.

The plan maps each intermediate to the buffer whose memory holds it: itself, or one it shares.
Buffers of different devices or dtypes never share (a device may store a dtype its own way).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tinyfw.device import Buffer

if TYPE_CHECKING:
    from tinyfw.engine.capture import Launch


def lifetimes(launches: Sequence[Launch], keep: set[Buffer]) -> dict[Buffer, tuple[int, int]]:
    """Each intermediate of the launches (see the module docstring) with its lifetime: the
    numbers of the launch that first writes it and of the last that uses it. In the order they
    start."""
    start: dict[Buffer, int] = {}
    last: dict[Buffer, int] = {}
    read_first: set[Buffer] = set()  # read before written: a value from the step before
    for i, launch in enumerate(launches):
        for buf in launch.inputs:
            if buf not in start:
                read_first.add(buf)
            last[buf] = i
        start.setdefault(launch.out, i)
        last[launch.out] = i
    return {buf: (first, last[buf]) for buf, first in start.items()
            if buf not in keep and buf not in read_first}


def plan_memory(launches: Sequence[Launch], keep: set[Buffer]) -> dict[Buffer, Buffer]:
    """Each intermediate of the launches mapped to the buffer that will hold it: the smallest
    free one of its device and dtype that is large enough, else itself."""
    plan: dict[Buffer, Buffer] = {}
    busy: list[tuple[int, Buffer]] = []  # (the last launch that needs it, the buffer)
    free: list[Buffer] = []              # buffers no lifetime under way uses, in order freed
    for buf, (first, end) in lifetimes(launches, keep).items():
        free += [home for last, home in busy if last < first]
        busy = [(last, home) for last, home in busy if last >= first]
        fits = [home for home in free if home.device == buf.device
                and home.dtype == buf.dtype and home.size >= buf.size]
        home = min(fits, key=lambda b: b.size, default=buf)  # (the first freed among equals)
        if home is not buf:
            free.remove(home)
        plan[buf] = home
        busy.append((end, home))
    return plan


def memory_bytes(buffers: Iterable[Buffer]) -> int:
    """The bytes of device memory behind the buffers, each memory counted once (a buffer that
    shares another's, its `base`, counts as that one)."""
    bases = {buf if buf.base is None else buf.base for buf in buffers}
    return sum(buf.size * buf.dtype.itemsize for buf in bases)
