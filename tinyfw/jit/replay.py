"""Calls 3 and after of a TinyJit: the captured launches run again on this call's buffers.

A replay maps each buffer of the capture to this call's (a dict `swap`): the inputs' to the new
arguments' (input_buffer), the returned tensors' to new buffers (fresh_outputs); every other
buffer (pinned, state, in between) stays. The launches then run kernel by kernel
(TinyJit.replay) or, after device_graphs made each run of kernels on one device a DeviceGraph
(tinyfw/engine/graph.py, tinyfw/runtime/graph.py), one call per graph (run_steps).

Deferred checks. An error that depends on data (an integer division by a tensor holding 0, a
class label out of range: realize.Check) is raised by realize once the graph is computed. The
kernels computing such checks are captured like any other (captured_checks finds them); after
each replay raise_violated reads their flags back and raises a violated one's error.

JIT_VERIFY=1 (verified_replay): each replay is followed by the function run the slow way from
the same state, and a JitError names the first output, state or input whose values differ.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from tinyfw.device import Buffer
from tinyfw.engine import realize
from tinyfw.engine.capture import Launch
from tinyfw.engine.settings import debug_level
from tinyfw.engine.graph import graph_steps
from tinyfw.helpers import shape_str
from tinyfw.jit.errors import JitError
from tinyfw.jit.inputs import InputSpec, output_tensors, returned_buffers, tensor_buffer
from tinyfw.jit.state import copy_back_moved
from tinyfw.runtime.graph import DeviceGraph
from tinyfw.tensor import Tensor

CapturedCheck = tuple[realize.Check, Buffer, Buffer | None]  # a check, its flag and value buffers


# --- this call's buffers ---
def input_buffer(t: Tensor, spec: InputSpec, written: set[Buffer]) -> Buffer:
    """The buffer of t, this call's input captured as spec; a copy if the cache writes it
    elsewhere (written: an output fed back in, as in `h = step(h)`: a kernel would read it while
    another overwrites it)."""
    buf = tensor_buffer(t)
    if buf in written and buf is not spec.buffer:
        return Buffer(buf.device, buf.size, buf.dtype, buf.numpy())
    return buf


def fresh_outputs(ret: Any, inputs: dict[str, InputSpec], written: set[Buffer],
                  pinned: set[Buffer]) -> dict[Buffer, Buffer]:
    """A new buffer for each buffer of a tensor in ret (what the capture returned) that the
    cache writes (except state kept in place, pinned), so that a value returned by an earlier
    call is not overwritten by this one. (A returned tensor no kernel writes, computed before
    the call, comes back as it is; an input the function wrote in place and returned, `x += 1;
    return x`, is this call's input, written in place again.)"""
    captured = {spec.buffer for spec in inputs.values()}
    return {buf: Buffer(buf.device, buf.size, buf.dtype) for buf in returned_buffers(ret)
            if buf in written and buf not in pinned and buf not in captured}


# --- device graphs ---
def device_graphs(name: str, cache: list[Launch],
                  variable: set[Buffer]) -> list[Launch | DeviceGraph]:
    """TinyJit(name)'s cache with each run of kernels one device can graph made one
    DeviceGraph (tinyfw/engine/graph.py), variable the buffers that change from call to call
    (inputs and outputs); [] where no graph was made."""
    steps = graph_steps(cache, variable)
    graphs = [step for step in steps if isinstance(step, DeviceGraph)]
    if debug_level() >= 1 and graphs:
        alone = len(steps) - len(graphs)
        rest = "1 launch on its own" if alone == 1 else f"{alone} launches on their own"
        print(f"TinyJit({name}): replays run " + ", ".join(repr(g) for g in graphs) +
              f" and {rest}")
    return steps if graphs else []


def run_steps(steps: list[Launch | DeviceGraph], swap: dict[Buffer, Buffer]) -> None:
    """Each step in order, with every buffer looked up in swap: a device graph launches its
    kernels in one call (told which buffers are new this time), a launch on its own as
    TinyJit.replay launches it."""
    for step in steps:
        if isinstance(step, DeviceGraph):
            step(swap)
        else:
            realize.launch(step.item, swap.get(step.out, step.out),
                           [swap.get(b, b) for b in step.inputs])


# --- deferred checks ---
def captured_checks(cache: list[Launch]) -> list[CapturedCheck]:
    """Each deferred check computed by the cache, with the buffers its flag and value land in."""
    written = {launch.item.output: launch.out for launch in cache}
    found = []
    for launch in cache:
        if (check := realize.check_of(launch.item.output)) is not None:
            value = None if check.value is None else written.get(check.value)
            found.append((check, launch.out, value))
    return found


def raise_violated(checks: list[CapturedCheck]) -> None:
    """The deferred checks (realize.Check) the captured kernels computed, read again after
    a replay: a violated one raises its error, as realize would have (the replay's state
    updates have been made by then; its return value is not given)."""
    for check, flag, value in checks:
        if (error := realize.violation(check, flag, value)) is not None:
            raise error


# --- JIT_VERIFY ---
def verifying() -> bool:
    """Whether each replay is checked against the slow run (JIT_VERIFY, default 0)."""
    return os.getenv("JIT_VERIFY", "0") not in ("", "0")


def verified_replay(name: str, replay: Callable[[], Any], slow: Callable[[], Any],
                    tensors: dict[str, Tensor], pinned: set[Buffer],
                    written: set[Buffer]) -> Any:
    """JIT_VERIFY=1: replay() (TinyJit(name)'s on this call's inputs, tensors), then the state
    it changed put back and slow() run (the function, as without TinyJit); JitError naming the
    first output, state or input whose values differ, which means the function reads something
    the replay cannot see (a global changed since the capture). Else the replay's result, the
    state as both left it."""
    state = sorted((b for b in pinned if b in written), key=id)
    changed = state + [tensor_buffer(t) for t in tensors.values()]  # (an input may be assigned)
    before = [b.numpy() for b in changed]
    ret = replay()
    outputs = output_tensors(ret, name)
    replayed = [tensor_buffer(t).numpy() for t in outputs] + [b.numpy() for b in changed]
    for buf, value in zip(changed, before):  # undo the replay
        buf.copyin(value)
    realize.forget_readers(written | pinned)
    slow_outputs = output_tensors(slow(), name)
    Tensor.realize_all(*slow_outputs, *tensors.values())
    # (read before the state moves back, which makes values computed from it stale)
    rights = [t.numpy() for t in slow_outputs] + [t.numpy() for t in tensors.values()]
    copy_back_moved()  # the state the slow call assigned, back in its buffers
    rights[len(slow_outputs):len(slow_outputs)] = [b.numpy() for b in state]
    names = [f"output {i} (shape {shape_str(t.shape)})" for i, t in enumerate(slow_outputs)] + \
        [f"state of shape {shape_str((b.size,))} ({b.dtype.name})" for b in state] + \
        [f"input {arg}" for arg in tensors]
    for what, fast, right in zip(names, replayed, rights):
        fast, right = fast.reshape(-1), right.reshape(-1)
        if not np.array_equal(fast, right, equal_nan=fast.dtype.kind in "fc"):
            raise JitError(
                f"TinyJit({name}): JIT_VERIFY: the replay's {what} differs from the "
                f"function's own result (first at element "
                f"{int(np.argmax(fast != right))}). The function reads "
                "something a replay cannot see, which changed since the capture: a global "
                "or an attribute (pass it as a tensor argument), a tensor replaced rather "
                "than assigned (use .assign()), or a tensor the function realized and kept "
                "(a replay overwrites its buffer; return it instead).")
    return ret
