"""The memory plan of a jit cache: its intermediates share memory where their lives do not meet.

Once captured, the buffers that live only inside the step (activations, gradients, temporaries)
share memory where their lifetimes in the cache do not overlap: the memory planner
(tinyfw/engine/memory.py) puts each in a buffer an earlier one has finished with. TinyJit says
which buffers are never shared (the inputs', the pinned, the returned tensors', the deferred
checks'); plan_cache adds every buffer still referenced outside the JIT, found by
held_elsewhere. The cache's launches are then made anew on the planned buffers (detached).
"""
from __future__ import annotations

import gc
import os
import weakref

from tinyfw.device import Buffer
from tinyfw.engine import realize
from tinyfw.engine.capture import Launch
from tinyfw.engine.settings import debug_level
from tinyfw.engine.memory import lifetimes, memory_bytes, plan_memory
from tinyfw.engine.schedule import ScheduleItem
from tinyfw.jit.inputs import view


def plan_enabled() -> bool:
    """Whether TinyJit plans the memory of its caches (JIT_PLAN, default 1)."""
    return os.getenv("JIT_PLAN", "1") != "0"


def plan_cache(name: str, cache: list[Launch], keep: set[Buffer]) -> tuple[int, int]:
    """The intermediate buffers of TinyJit(name)'s cache whose lifetimes do not overlap made to
    share memory, in place in cache's launches. Kept out of the plan: keep, and every buffer
    still referenced outside the JIT (a tensor the function realized and kept), which must never
    show another tensor's data; the caller must hold no reference to the cache's buffers but
    keep's while this runs. JIT_PLAN=0: no plan.

    Returns the bytes of device memory behind the buffers the cache writes (each memory counted
    once), as captured and as planned. That is what a replay writes: the state, the returned
    tensors (new buffers of the same sizes at each replay), the checks' flags and the
    intermediates; not the inputs nor the read-only pinned."""
    before = memory_bytes({launch.out for launch in cache})
    if not plan_enabled():
        return before, before
    plan = plan_memory(cache, keep | held_elsewhere(cache, keep))
    swap_buffers(cache, {buf: home if home.size == buf.size else
                         Buffer(buf.device, buf.size, buf.dtype, base=home)
                         for buf, home in plan.items() if home is not buf})
    after = memory_bytes({launch.out for launch in cache})
    if debug_level() >= 1:
        print(f"TinyJit({name}): memory plan: {len(plan)} intermediates in "
              f"{len(set(plan.values()))} buffers, {memory_bytes(plan)} -> "
              f"{memory_bytes(plan.values())} bytes; cache writes {before} -> "
              f"{after} bytes")
    return before, after


def held_elsewhere(cache: list[Launch], keep: set[Buffer]) -> set[Buffer]:
    """The intermediates someone outside the JIT still references. The cache's references
    are swapped for stand-ins (new buffers alike, no memory yet), realize forgets the nodes
    computed into them, and those a garbage collection leaves alive are held elsewhere: they
    are swapped back. (The others, no longer referenced, free their memory.)"""
    candidates = list(lifetimes(cache, keep))
    stand_ins = [Buffer(buf.device, buf.size, buf.dtype) for buf in candidates]
    swap_buffers(cache, dict(zip(candidates, stand_ins)))
    realize.forget(set(candidates))
    refs = [weakref.ref(buf) for buf in candidates]
    del candidates
    gc.collect()  # (tensors in reference cycles, as autograd makes them)
    back = {stand_in: buf for ref, stand_in in zip(refs, stand_ins)
            if (buf := ref()) is not None}
    swap_buffers(cache, back)
    return set(back.values())


def swap_buffers(cache: list[Launch], swap: dict[Buffer, Buffer]) -> None:
    """Each buffer of the cache in swap replaced by its value. Each item is made anew on the
    launch's buffers (detached), so that the cache holds no buffer but those it launches
    with."""
    for launch in cache:
        launch.out = swap.get(launch.out, launch.out)
        launch.inputs = [swap.get(b, b) for b in launch.inputs]
        launch.item = detached(launch)


def detached(launch: Launch) -> ScheduleItem:
    """The launch's item with the same kernel, name and program, its output and inputs views
    of the launch's buffers. A captured item holds the lazy graph it computed, which holds the
    buffers of the tensors realized in the function: a buffer the cache no longer uses would
    seem in use (see held_elsewhere)."""
    item = launch.item
    views = tuple(view(b, (b.size,)) for b in launch.inputs)
    made = ScheduleItem(item.ast, view(launch.out, item.output.shape), views, item.name)
    if made == item:  # (an equal new one would lose the program: realize._launched is weak)
        return item
    realize.share_program(made, item)
    return made
