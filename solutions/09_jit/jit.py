# Solutions of chapter 09, generated from tinyfw/jit/jit.py by `python -m tools.generate`.
# Edit tinyfw/jit/jit.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/09_jit --impl=solutions
# generated text id: 11b719420e4515a9 (lets tools.generate tell your edits apart)
"""TinyJit: run a function of tensors for real twice, then replay the kernels it launched.

On a small model, a training step spends most of its time in Python: building the lazy graph,
differentiating it, scheduling it into kernels and finding their compiled programs. None of
that changes from one step to the next; only the data does. `step = TinyJit(step)` (after
tinygrad's TinyJit) takes advantage of it:

  call 1   runs the function as usual (its kernels get compiled);
  call 2   runs it as usual while *capturing*: every kernel (or copy) launched is recorded in
           the jit cache, with the exact Buffer objects it read and wrote;
  call 3+  does not call the function. The new inputs' buffers stand in for the captured
           call's, new buffers for its outputs, and the cached kernels are launched in order.
           The tensors returned are new each call: a loss kept from an earlier step keeps its
           value (tinygrad's replays overwrite the same output tensors, a known pitfall).

State. tinyfw's assign is lazy: `p.assign(p - lr * p.grad)`, realized, gives p a *new* buffer.
Replayed as captured, the kernels would read p's old buffer every time, and every step would
start from the same parameters. So the capture follows each tensor assigned in the function
(Tensor.assign tells realize.note_assign) and, at its end, keeps that tensor's value in the
buffer it held before the call, `old`, so that every replay reads and writes the same buffers:
  - in place where safe: the kernel that computed the new value writes `old` itself, as
    tinygrad's assign does. Safe when no later kernel reads `old` (none wants the old value),
    the kernel reads `old` only at the element it writes (the same view as its store, as an
    SGD update does: each element is read before it is written, by the same thread), no
    returned tensor shows the new buffer, and the device lets one kernel read and write one
    buffer (WebGPU does not);
  - else by a copy new -> old, appended to the jit cache (one extra copy per replay).
Then the tensor points at `old` again. In-place beats copying: no extra pass over the memory.

Tensors the cache reads but never writes, or keeps state in, are *pinned*: a learning rate,
frozen weights, the parameters an eval step reads. Assigning one outside a capture is fine:
before the next call of any TinyJit, its new value is copied into the pinned buffer.

Graphs. Replayed one by one, every kernel is a call from Python into the device. After the
capture, each run of kernels on one device that has a graph class becomes one DeviceGraph
(tinyfw/engine/graph.py, tinyfw/runtime/graph.py): prepared once, told per replay which buffers
are this call's inputs and outputs, launched with one call (replay_graphs). JIT_GRAPH=0 keeps
the kernel-by-kernel replay (replay).

Random numbers. Tensor.rand, randn, uniform, normal and dropout are computed on the device from
a state tensor (tinyfw/mixin/threefry.py) that each draw assigns: the capture keeps it like any
state, and each replay draws new numbers. randint, randperm and multinomial sample with numpy
on the host while the graph is built, so a replay would reuse the captured call's numbers
forever: a function that draws those while it is captured raises JitError; draw them outside
and pass them in as a tensor argument. (Other host data made inside the function,
Tensor.arange or Tensor([...]), is a constant.)

Constants. A kernel whose every buffer (its output's and its inputs') was made during the
capture and is written by no kernel kept for replays computes a constant of the function: it
runs once, at the capture, and its output stays (pinned). Reading such a value, or one made of
constants alone, is allowed while captured: a replay would read the same (an ONNX model's
shapes, folded on the host as the graph is walked).

Deferred checks. An error that depends on data (an integer division by a tensor holding 0, a
class label out of range: realize.Check) is raised by realize once the graph is computed. The
kernels computing such checks are captured like any other; after each replay their flags are
read back (a scalar each) and a violated one raises its error, as realize would have.

Memory. Once captured, the buffers that live only inside the step (activations, gradients,
temporaries) share memory where their lifetimes in the cache do not overlap: the memory planner
(tinyfw/engine/memory.py) puts each in a buffer an earlier one has finished with. Never shared:
the inputs', the state's and the other pinned buffers, the returned tensors', the deferred
checks' flags, and any buffer still referenced outside the JIT after the capture: a tensor the
function realized and kept (`self.hidden = h`) keeps a buffer of its own, which each replay
overwrites with that replay's value (never with another tensor's). jit.bytes_before and
jit.bytes_after tell the memory the cache writes per step without and with the plan (DEBUG=1
prints them); JIT_PLAN=0 turns the planner off.

Rules, each checked with a JitError that says what to do: inputs are the tensor arguments
(passed directly, not inside lists) and keep their shapes, dtypes and devices; other arguments
keep their values; the function returns None, a Tensor, or tuples, lists and dicts of them
(not its inputs); it does not read data (.numpy(), .item(), print) while captured, but
constants; it
launches some kernel; the tensors it assigns are realized before the call and by its end; it
sets .grad to None before backward (a replay cannot add to an earlier call's gradient); no
TinyJit is called inside another's capture; Tensor.training is as it was at the capture, and so
is every value watched then (watch(): an optimizer's float learning rate); a tensor the
replays read, found at the capture in an attribute, list or dict the function can reach
(`model.w`), is still there (places.py: `model.w = Tensor(...)` would not be seen by a
replay; `model.w.assign(...)` is). Not checked: a replay sees only the buffers it captured, so
other Python state the function reads (a global number, a tensor in a place the walk does not
reach) is fixed at capture. JIT_VERIFY=1 finds those too, at a price: each replay is followed
by the function run the slow way from the same state, and a JitError names the first output,
state or input whose values differ (then the slow run's state is kept).

Threads. A capture is its thread's alone: the kernels launched, the reads refused and the
nested calls refused are the capturing thread's; another thread may meanwhile realize, read
and jit tensors of its own. (Random numbers are the exception: Tensor's generator is shared,
so another thread drawing from it during a capture makes the capture fail.)
"""
from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tinyfw.engine import realize
from tinyfw.engine.capture import (Launch, capture_in_this_thread, set_capture_in_this_thread,
                                   set_replayer)
from tinyfw.engine.debug import debug_level
from tinyfw.engine.memory import lifetimes, memory_bytes, plan_memory
from tinyfw.device import Buffer, Device
from tinyfw.renderer.base import NotSupportedError
from tinyfw.dtype import DType
from tinyfw.helpers import shape_str
from tinyfw import multi
from tinyfw.engine.graph import graph_steps, graphs_enabled
from tinyfw.jit.places import Place, find_places, replaced
from tinyfw.engine.schedule import ScheduleItem
from tinyfw.runtime.graph import DeviceGraph
from tinyfw.tensor import Tensor
from tinyfw.uop.ops import Ops, UOp

class JitError(RuntimeError):
    """A function TinyJit cannot replay faithfully, or a call unlike the captured one."""


@dataclass(frozen=True)
class InputSpec:
    """What the captured call got for one tensor argument."""
    buffer: Buffer
    shape: tuple[int, ...]
    dtype: DType
    device: str


class TinyJit:
    """`TinyJit(fn)` or `@TinyJit`: call 1 runs fn, call 2 captures the kernels it launches,
    calls 3+ replay them on the new inputs without calling fn (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.name: str = getattr(fn, "__qualname__", repr(fn))
        self.positional = _positional_names(fn)
        self.reset()

    def reset(self) -> None:
        """Forget the capture: the next call runs the function as call 1 again."""
        self.cnt = 0                              # calls so far
        self.jit_cache: list[Launch] = []         # what a replay launches, in order
        self.inputs: dict[str, InputSpec] = {}    # tensor arguments of the captured call
        self.constants: dict[str, Any] = {}       # its other arguments
        self.pinned: set[Buffer] = set()          # buffers read, not made, by the cache
        self.written: set[Buffer] = set()         # buffers the cache writes
        self.ret: Any = None                      # what the captured call returned
        self.checks: list[tuple[realize.Check, Buffer, Buffer | None]] = []  # see _verify
        self.training = False                     # Tensor.training when it was captured
        self.watched: list[Watched] = []          # Python values its kernels hold (watch())
        self.steps: list[Launch | DeviceGraph] = []  # the cache with device graphs (graph.py)
        self.places: list[Place] = []             # where its tensors live (places.py)
        self.bytes_before = self.bytes_after = 0  # memory the cache writes, see _plan_memory

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        """Used on a method, the instance is passed as the first argument."""
        return self if obj is None else functools.partial(self.__call__, obj)

    def __repr__(self) -> str:
        return f"<TinyJit {self.name} cnt={self.cnt} kernels={len(self.jit_cache)}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if (capturing := _capture_in_this_thread()) is not None:
            raise JitError(f"TinyJit({self.name}) was called while TinyJit({capturing.name}) "
                           "captured its function: nested JITs are not supported. Jit only the "
                           "outer function (the inner one's kernels are captured with it), or "
                           "call the inner function undecorated.")
        _copy_back_moved()
        tensors, others = _arguments(self.name, self.positional, args, kwargs)
        if any(isinstance(t.device, tuple) for t in tensors.values()):
            raise JitError(f"TinyJit({self.name}): an argument is a tensor over many devices "
                           "(tinyfw/multi.py); pass it on one device and shard it inside")
        for t in tensors.values():
            t.realize()  # inputs are buffers before the call
        if self.cnt == 0:
            ret = self.fn(*args, **kwargs)
            Tensor.realize_all(*_output_tensors(ret, self.name))
        elif self.cnt == 1:
            # values computed earlier from the inputs would be read, not recomputed: forgotten
            realize.forget_readers({_buffer(t) for t in tensors.values()},
                                   keep=frozenset(t.uop for t in tensors.values()))
            self.training = Tensor.training
            with _watching() as watched:
                ret = self.capture(args, kwargs, tensors, others)
            self.checks, self.watched = _captured_checks(self.jit_cache), watched
            self._plan_memory()  # (before the graphs, which hold the cache's buffers)
            self.steps = self._graphed() if graphs_enabled() else []
            self.places = find_places(self.fn, others, self.pinned)
        else:
            self._check_call(tensors, others)
            self._check_python_state()
            if os.getenv("JIT_VERIFY", "0") not in ("", "0"):
                ret = self._replay_verified(args, kwargs, tensors)
            else:
                ret = self.replay_graphs(tensors) if self.steps else self.replay(tensors)
                self._verify()
        if self.cnt >= 1:  # the state buffers changed in place: values computed from them are old
            realize.forget_readers(self.written | self.pinned)
        self.cnt += 1
        return ret

    # --- call 2: capture ---
    def capture(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                tensors: dict[str, Tensor], others: dict[str, Any]) -> Any:
        """Run the function while recording every launch into the jit cache, then keep each
        assigned tensor's state in one buffer so that the cache can run again and again."""
        # >>> exercise 09.capture #capturing
        self.inputs = {name: InputSpec(_buffer(t), t.shape, t.dtype, t.device)
                       for name, t in tensors.items()}
        self.constants = others
        old_grads, rng = _leftover_grads(), _rng_state()
        with _Recorder(self.name) as recorder:
            ret = self.fn(*args, **kwargs)
            outputs = _output_tensors(ret, self.name)
            Tensor.realize_all(*outputs)
        self.jit_cache = recorder.launches
        self._check_capture(outputs, old_grads, rng)
        olds = {id(old): old for t, old in recorder.assigned if self._keep_in(t, old, outputs)}
        for t in outputs:  # the tensors returned hold just their buffers, which replays refresh
            t.uop = _view(_buffer(t), t.shape)
        self.written = {launch.out for launch in self.jit_cache}
        read = {b for launch in self.jit_cache for b in launch.inputs}
        inputs = {spec.buffer for spec in self.inputs.values()}
        self.pinned = ({b for b in read if b not in self.written} | set(olds.values())) - inputs
        realize.forget(self.written)  # replays overwrite these: nodes must not trust them
        self.ret = _rebuilt(ret, {})  # its own tensors: the caller may assign to its own
        _jits.add(self)
        if debug_level() >= 1:
            copies = sum(launch.item.ast is None for launch in self.jit_cache)
            print(f"TinyJit({self.name}): captured {len(self.jit_cache)} launches ({copies} "
                  f"copies), {len(self.inputs)} inputs, {len(olds)} tensors of state")
        return ret
        # <<< exercise

    def _plan_memory(self) -> None:
        """After the capture: the intermediate buffers of the cache whose lifetimes do not
        overlap share memory (tinyfw/engine/memory.py). Kept out of the plan: the inputs', the
        pinned (state included) and the returned tensors' buffers, the deferred checks' flags
        and values, and every buffer still referenced outside the JIT (a tensor the function
        realized and kept), which must never show another tensor's data. JIT_PLAN=0: no plan.

        bytes_before and bytes_after: the bytes of device memory behind the buffers the cache
        writes (each memory counted once), as captured and as planned. That is what a replay
        writes: the state, the returned tensors (new buffers of the same sizes at each replay),
        the checks' flags and the intermediates; not the inputs nor the read-only pinned."""
        self.bytes_before = self.bytes_after = memory_bytes(self.written)
        if os.getenv("JIT_PLAN", "1") == "0":
            return
        keep = {spec.buffer for spec in self.inputs.values()} | self.pinned
        keep |= {_buffer(t) for t in _output_tensors(self.ret, self.name)}
        keep |= {b for _, flag, value in self.checks for b in (flag, value) if b is not None}
        keep |= self._held_elsewhere(keep)
        plan = plan_memory(self.jit_cache, keep)
        self._swap({buf: home if home.size == buf.size else
                    Buffer(buf.device, buf.size, buf.dtype, base=home)
                    for buf, home in plan.items() if home is not buf})
        self.bytes_after = memory_bytes(self.written)
        if debug_level() >= 1:
            print(f"TinyJit({self.name}): memory plan: {len(plan)} intermediates in "
                  f"{len(set(plan.values()))} buffers, {memory_bytes(plan)} -> "
                  f"{memory_bytes(plan.values())} bytes; cache writes {self.bytes_before} -> "
                  f"{self.bytes_after} bytes")

    def _held_elsewhere(self, keep: set[Buffer]) -> set[Buffer]:
        """The intermediates someone outside the JIT still references. The cache's references
        are swapped for stand-ins (new buffers alike, no memory yet), realize forgets the nodes
        computed into them, and those a garbage collection leaves alive are held elsewhere: they
        are swapped back. (The others, no longer referenced, free their memory.)"""
        candidates = list(lifetimes(self.jit_cache, keep))
        stand_ins = [Buffer(buf.device, buf.size, buf.dtype) for buf in candidates]
        self._swap(dict(zip(candidates, stand_ins)))
        realize.forget(set(candidates))
        refs = [weakref.ref(buf) for buf in candidates]
        del candidates
        gc.collect()  # (tensors in reference cycles, as autograd makes them)
        back = {stand_in: buf for ref, stand_in in zip(refs, stand_ins)
                if (buf := ref()) is not None}
        self._swap(back)
        return set(back.values())

    def _swap(self, swap: dict[Buffer, Buffer]) -> None:
        """Each buffer of the cache in swap replaced by its value; written follows. Each item
        is made anew on the launch's buffers (_detached), so that the cache holds no buffer
        but those it launches with."""
        for launch in self.jit_cache:
            launch.out = swap.get(launch.out, launch.out)
            launch.inputs = [swap.get(b, b) for b in launch.inputs]
            launch.item = _detached(launch)
        self.written = {launch.out for launch in self.jit_cache}

    def _keep_in(self, tensor: Tensor, old: Buffer, outputs: list[Tensor]) -> bool:
        """Make replays leave tensor's value in old, the buffer it held before the captured
        call: the kernel that wrote its new value writes old instead where that is safe, else
        a copy new -> old is appended. Old gets this call's value now and tensor points at it.
        False if the tensor did not move to a new buffer."""
        if not realize.is_realized(tensor.uop):
            raise JitError(f"TinyJit({self.name}): the function assigned to a tensor of shape "
                           f"{shape_str(tensor.shape)} but left it unrealized, so replays would "
                           "not update it. Realize it in the function (Tensor.realize_all(...) "
                           "with the parameters) or return it.")
        new = realize.buffer_of(tensor.uop)
        if new is old:
            return False
        writer = next((i for i, launch in enumerate(self.jit_cache) if launch.out is new), None)
        shown = any(t is not tensor and realize.is_realized(t.uop)
                    and realize.buffer_of(t.uop) is new for t in outputs)
        if writer is not None and not shown and self._can_write_in_place(writer, old):
            for launch in self.jit_cache[writer:]:
                launch.out = old if launch.out is new else launch.out
                launch.inputs = [old if b is new else b for b in launch.inputs]
        else:
            self.jit_cache.append(Launch(_copy_item(old, new), old, [new]))
        old.copyin(new.numpy())
        tensor.uop = _view(old, tensor.shape)
        if isinstance(tensor, Tensor):  # (not a part of a tensor over many devices)
            tensor._refresh_views()  # its views read old too, which replays write
        return True

    def _can_write_in_place(self, writer: int, old: Buffer) -> bool:
        """Can the kernel at jit_cache[writer] write old rather than its own new buffer?"""
        launch = self.jit_cache[writer]
        ast = launch.item.ast
        # (a device whose kernels may not read and write one buffer says so: WebGPU refuses a
        # buffer bound both as a kernel's writable output and as one of its read-only inputs)
        if ast is None or not Device[launch.item.device].renderer.in_place:
            return False
        if any(old in later.inputs for later in self.jit_cache[writer + 1:]):
            return False  # a later kernel reads the old value
        reads = {i + 1 for i, b in enumerate(launch.inputs) if b is old}  # LOAD args count from 1
        store_view = ast.src[0].arg
        return all(node.src[0].arg == store_view for node in ast.toposort()
                   if node.op is Ops.LOAD and node.arg in reads)

    def _check_capture(self, outputs: list[Tensor], old_grads: set[Buffer],
                       rng: tuple[int, Any]) -> None:
        """What a capture must not have done; see the module docstring."""
        if not self.jit_cache:
            raise JitError(f"TinyJit({self.name}): the captured call launched no kernel, so "
                           "there is nothing to replay. A jitted function must compute with "
                           "tensors and return (or realize) the result; one that only returns "
                           "values computed before needs no JIT.")
        if _rng_state() != rng:
            raise JitError(f"TinyJit({self.name}): the function drew random numbers on the host "
                           "(randint, randperm or multinomial) while it was captured. tinyfw "
                           "samples those as the graph is built, so every replay would reuse "
                           "these same numbers. Draw them outside the function and pass them in "
                           "as a tensor argument (rand, randn, uniform, normal and dropout are "
                           "computed on the device: a replay draws new ones).")
        if any(b in old_grads for launch in self.jit_cache for b in launch.inputs):
            raise JitError(f"TinyJit({self.name}): backward added to a .grad left from an "
                           "earlier call; a replay would add to that old gradient every time. "
                           "Set .grad = None on the parameters (zero_grad) in the function, "
                           "before backward.")
        by_buffer = {id(spec.buffer): name for name, spec in self.inputs.items()}
        if len(by_buffer) < len(self.inputs):
            raise JitError(f"TinyJit({self.name}): two tensor arguments share one buffer; the "
                           "cache could not tell them apart on a replay. Pass distinct tensors "
                           "(a copy: t.clone().realize()).")
        for t in outputs:
            if (name := by_buffer.get(id(_buffer(t)))) is not None:
                raise JitError(f"TinyJit({self.name}): the function returned its input {name}; "
                               "a replay would return the captured call's tensor, not the new "
                               f"one. Return a copy ({name}.clone()) or leave it out.")

    # --- call 3 and after: replay ---
    def _check_python_state(self) -> None:
        """JitError where Python state the captured kernels hold has changed since: the
        training flag, or a value watched during the capture (an optimizer's float learning
        rate). A replay would compute with the old one."""
        if Tensor.training != self.training:
            raise JitError(f"TinyJit({self.name}): captured with Tensor.training="
                           f"{self.training}, called with {Tensor.training}: a replay runs the "
                           "captured kernels, computed for the other mode (dropout, BatchNorm's "
                           "statistics). Use one TinyJit per mode (a train step and an eval "
                           "step), or call .reset() after switching to capture again.")
        if (place := replaced(self.places)) is not None:
            now = place.holds_now()
            what = f"a tensor of shape {shape_str(now.shape)}" if isinstance(now, Tensor) else \
                f"{type(now).__name__}"
            raise JitError(f"TinyJit({self.name}): {place.name} was replaced by {what} since the "
                           f"capture (`{place.name} = ...`); replays read the buffer of the "
                           f"tensor it held then. Give it new values in place with "
                           f"{place.name}.assign(...), or call .reset() to capture again.")
        for owner_ref, attribute, value in self.watched:
            owner = owner_ref()
            if owner is not None and not _same(now := getattr(owner, attribute), value):
                raise JitError(
                    f"TinyJit({self.name}): {type(owner).__name__}.{attribute} was {value!r} "
                    f"when the function was captured and is {now!r} now; the replayed kernels "
                    f"hold {value!r}. Make it a Tensor (as lr=Tensor(0.01)) and .assign() new "
                    "values to it, or call .reset() to capture again.")

    def _check_call(self, tensors: dict[str, Tensor], others: dict[str, Any]) -> None:
        """The call must look like the captured one: the same arguments, tensors of the same
        shapes, dtypes and devices, and equal other arguments."""
        fix = "pass arguments like the captured call's, or call .reset() (or use another " \
              "TinyJit) to capture anew"
        if tensors.keys() != self.inputs.keys() or others.keys() != self.constants.keys():
            raise JitError(f"TinyJit({self.name}): called with tensor arguments "
                           f"{sorted(tensors)} and others {sorted(others)}, but captured with "
                           f"{sorted(self.inputs)} and {sorted(self.constants)}: {fix}.")
        for name, t in tensors.items():
            spec = self.inputs[name]
            for what, now, then in (("shape", shape_str(t.shape), shape_str(spec.shape)),
                                    ("dtype", t.dtype.name, spec.dtype.name),
                                    ("device", t.device, spec.device)):
                if now != then:
                    raise JitError(f"TinyJit({self.name}): input {name} has {what} {now}, but "
                                   f"the captured call's {name} had {what} {then}. The "
                                   f"captured kernels fit only that {what}: {fix}.")
        for name, value in others.items():
            if not _same(value, self.constants[name]):
                raise JitError(f"TinyJit({self.name}): argument {name} is {value!r}, but the "
                               f"captured call had {self.constants[name]!r}. Non-tensor "
                               "arguments are baked into the captured kernels: pass a Tensor "
                               f"for a value that changes, or {fix}.")

    def replay(self, tensors: dict[str, Tensor]) -> Any:
        """Launch each captured kernel again, with the new inputs' buffers standing in for the
        captured call's, and new buffers for the outputs. The function is not called; what it
        returned comes back in the same shape, holding this call's values."""
        # >>> exercise 09.replay #replaying
        swap = {self.inputs[name].buffer: self._input_buffer(name, t)
                for name, t in tensors.items()}
        swap.update(self._fresh_outputs())
        for launch in self.jit_cache:
            out = swap.get(launch.out, launch.out)
            inputs = [swap.get(b, b) for b in launch.inputs]
            realize.launch(launch.item, out, inputs)
        if debug_level() >= 2:
            print(f"TinyJit({self.name}): replayed {len(self.jit_cache)} launches")
        return _rebuilt(self.ret, swap)
        # <<< exercise

    def _graphed(self) -> list[Launch | DeviceGraph]:
        """The jit cache with each run of kernels one device can graph made one DeviceGraph
        (tinyfw/engine/graph.py); [] where no graph was made."""
        inputs = {spec.buffer for spec in self.inputs.values()}
        returned = {_buffer(t) for t in _output_tensors(self.ret, self.name)}
        steps = graph_steps(self.jit_cache, inputs | returned)
        graphs = [step for step in steps if isinstance(step, DeviceGraph)]
        if debug_level() >= 1 and graphs:
            alone = len(steps) - len(graphs)
            rest = "1 launch on its own" if alone == 1 else f"{alone} launches on their own"
            print(f"TinyJit({self.name}): replays run " + ", ".join(repr(g) for g in graphs) +
                  f" and {rest}")
        return steps if graphs else []

    def replay_graphs(self, tensors: dict[str, Tensor]) -> Any:
        """replay, with each device graph launching its kernels in one call (graph
        execution): the graph is told which buffers are new this time."""
        swap = {self.inputs[name].buffer: self._input_buffer(name, t)
                for name, t in tensors.items()}
        swap.update(self._fresh_outputs())
        for step in self.steps:
            if isinstance(step, DeviceGraph):
                step(swap)
            else:
                realize.launch(step.item, swap.get(step.out, step.out),
                               [swap.get(b, b) for b in step.inputs])
        if debug_level() >= 2:
            print(f"TinyJit({self.name}): replayed {len(self.jit_cache)} launches in "
                  f"{len(self.steps)} call{'s' if len(self.steps) != 1 else ''}")
        return _rebuilt(self.ret, swap)

    def _replay_verified(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                         tensors: dict[str, Tensor]) -> Any:
        """JIT_VERIFY=1: the replay, then the state it changed put back and the function run
        the slow way (as without TinyJit); JitError naming the first output, state or input
        whose values differ, which means the function reads something the replay cannot see
        (a global changed since the capture). Else the replay's result, the state as both
        left it."""
        state = sorted((b for b in self.pinned if b in self.written), key=id)
        changed = state + [_buffer(t) for t in tensors.values()]  # (an input may be assigned)
        before = [b.numpy() for b in changed]
        ret = self.replay_graphs(tensors) if self.steps else self.replay(tensors)
        self._verify()
        outputs = _output_tensors(ret, self.name)
        replayed = [_buffer(t).numpy() for t in outputs] + [b.numpy() for b in changed]
        for buf, value in zip(changed, before):  # undo the replay
            buf.copyin(value)
        realize.forget_readers(self.written | self.pinned)
        slow = _output_tensors(self.fn(*args, **kwargs), self.name)
        Tensor.realize_all(*slow, *tensors.values())
        # (read before the state moves back, which makes values computed from it stale)
        rights = [t.numpy() for t in slow] + [t.numpy() for t in tensors.values()]
        _copy_back_moved()  # the state the slow call assigned, back in its buffers
        rights[len(slow):len(slow)] = [b.numpy() for b in state]
        names = [f"output {i} (shape {shape_str(t.shape)})" for i, t in enumerate(slow)] + \
            [f"state of shape {shape_str((b.size,))} ({b.dtype.name})" for b in state] + \
            [f"input {name}" for name in tensors]
        for name, fast, right in zip(names, replayed, rights):
            fast, right = fast.reshape(-1), right.reshape(-1)
            if not np.array_equal(fast, right, equal_nan=fast.dtype.kind in "fc"):
                raise JitError(
                    f"TinyJit({self.name}): JIT_VERIFY: the replay's {name} differs from the "
                    f"function's own result (first at element "
                    f"{int(np.argmax(fast != right))}). The function reads "
                    "something a replay cannot see, which changed since the capture: a global "
                    "or an attribute (pass it as a tensor argument), a tensor replaced rather "
                    "than assigned (use .assign()), or a tensor the function realized and kept "
                    "(a replay overwrites its buffer; return it instead).")
        return ret

    def _verify(self) -> None:
        """The deferred checks (realize.Check) the captured kernels computed, read again after
        a replay: a violated one raises its error, as realize would have (the replay's state
        updates have been made by then; its return value is not given)."""
        for check, flag, value in self.checks:
            if (error := realize.violation(check, flag, value)) is not None:
                raise error

    def _fresh_outputs(self) -> dict[Buffer, Buffer]:
        """A new buffer for each returned tensor's that the cache writes (except state kept in
        place), so that a value returned by an earlier call is not overwritten by this one. (A
        returned tensor no kernel writes, computed before the call, comes back as it is; an
        input the function wrote in place and returned, `x += 1; return x`, is this call's
        input, written in place again.)"""
        outputs = [_buffer(t) for t in _output_tensors(self.ret, self.name)]
        inputs = {spec.buffer for spec in self.inputs.values()}
        return {buf: Buffer(buf.device, buf.size, buf.dtype) for buf in outputs
                if buf in self.written and buf not in self.pinned and buf not in inputs}

    def _input_buffer(self, name: str, t: Tensor) -> Buffer:
        """The buffer of input `name`; a copy if the cache writes it elsewhere (an output fed
        back in, as in `h = step(h)`: a kernel would read it while another overwrites it)."""
        buf = _buffer(t)
        if buf in self.written and buf is not self.inputs[name].buffer:
            return Buffer(buf.device, buf.size, buf.dtype, buf.numpy())
        return buf


# --- listening to realize and Tensor ---
class _Recorder(realize.Listener):
    """Listens while a function is captured: keeps each launch, and each tensor assigned with
    the buffer it held before (its first assign); refuses reads of data. `with _Recorder(name)
    as recorder:` listens during the block and marks a capture under way, undoing
    both at its end, even when the block raises. Both are the calling thread's alone
    (realize.thread_listeners, engine/capture.py): another thread's kernels and reads are not the
    captured function's."""

    def __init__(self, name: str):
        self.name = name
        self.launches: list[Launch] = []
        self.assigned: list[tuple[Tensor, Buffer]] = []
        self.since = Buffer.made  # buffers of a greater serial are made during the capture
        self.written: set[Buffer] = set()  # the outputs of the launches kept

    def __enter__(self) -> _Recorder:
        set_capture_in_this_thread(self)
        realize.thread_listeners().append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        realize.thread_listeners().remove(self)
        set_capture_in_this_thread(None)

    def launched(self, item: ScheduleItem, out: Buffer, inputs: list[Buffer]) -> None:
        if self._made_here(out) and all(self._made_here(b) for b in inputs):
            return  # a constant of the function, computed once (its buffer is kept, pinned)
        self.launches.append(Launch(item, out, list(inputs)))
        self.written.add(out)

    def _made_here(self, buffer: Buffer) -> bool:
        """Whether buffer is one of the function's constants: made during the capture and
        written by no kernel recorded for replays, or a number's value (const_args.py)."""
        return buffer.constant or (buffer.serial > self.since and buffer not in self.written)

    def assigning(self, tensor: Any) -> None:
        if isinstance(tensor.uop.device, tuple):  # over many devices: each part is state
            for i in range(len(multi.parts_of(tensor.uop))):
                if not any(isinstance(t, _Part) and t.tensor is tensor and t.index == i
                           for t, _ in self.assigned):
                    self.assigning(_Part(tensor, i))
            return
        if any(t is tensor for t, _ in self.assigned):
            return
        if not realize.is_realized(tensor.uop):
            raise JitError(f"TinyJit({self.name}): the function assigns to a tensor of shape "
                           f"{shape_str(tensor.shape)} whose value is still lazy (no buffer), "
                           "so there is no buffer to keep its state in. Realize it before the "
                           "call, e.g. with Tensor.realize_all(...) at the end of the function.")
        self.assigned.append((tensor, realize.buffer_of(tensor.uop)))

    def reading(self, tensor: Any) -> None:
        if self._of_constants(tensor):
            return
        raise JitError(f"TinyJit({self.name}): the function reads a tensor's data (.numpy(), "
                       ".item(), .tolist(), print, `if`, x[mask], nonzero, masked_select, "
                       "or requires_grad=True) while it is captured. Replays "
                       "do not run the function, so the read would not happen again. Return the "
                       "tensor and read it after the call.")


    def _of_constants(self, tensor: Any) -> bool:
        """Whether tensor's value is made only of the function's own constants: every buffer
        below it was made during the capture (from host data: Tensor(array)) and no captured
        kernel wrote it, so a read of it would read the same at every call, as Python's own
        constants are (an ONNX model's shapes, folded on the host). Inputs, state, and values
        computed from them are not."""
        if isinstance(tensor.device, tuple):
            return False
        node = tensor.uop
        buffers = set(realize.buffers_read(node))
        if not buffers:  # no buffer below: the graph's constants alone give its value
            return True
        if realize.is_realized(node):
            buffers.add(realize.buffer_of(node))
        return all(self._made_here(b) for b in buffers)


class _Guard(realize.Listener):
    """Always listening: a pinned tensor assigned outside a capture is noted, so that its new
    value is copied into its pinned buffer before the next TinyJit call."""

    def assigning(self, tensor: Any) -> None:
        if _capture_in_this_thread() is not None:  # this thread's capture follows it itself
            return
        whole = not isinstance(tensor.device, tuple)
        for index, node in enumerate(multi.parts_of(tensor.uop)):
            if not realize.is_realized(node):
                continue
            buf = realize.buffer_of(node)
            if any(buf in jit.pinned for jit in list(_jits)):
                _moved.append((weakref.ref(tensor), buf, None if whole else index))


_this_thread = threading.local()  # .watched: what watch() adds to, during a capture
_jits: weakref.WeakSet[TinyJit] = weakref.WeakSet()     # the TinyJits captured, still alive
# pinned tensors assigned since (with the index of the part, for a tensor over many devices)
_moved: list[tuple[weakref.ref[Tensor], Buffer, int | None]] = []
realize.listeners.append(_Guard())
set_replayer(lambda step: TinyJit(step))  # capture.replayed: a step Tensor's methods repeat


# (the object, by a weak reference; its attribute; the value it had during the capture)
Watched = tuple["weakref.ref[Any]", str, Any]


@contextlib.contextmanager
def _watching() -> Iterator[list[Watched]]:
    """Within the block, watch() in this thread adds to the list given."""
    watched: list[Watched] = []
    _this_thread.watched = watched
    try:
        yield watched
    finally:
        _this_thread.watched = None


def watch(owner: Any, attribute: str) -> None:
    """A Python value a function reads while TinyJit captures it, which the captured kernels
    then hold as a constant (an optimizer's float learning rate): a replay after it changed
    raises JitError instead of computing with the old value. Outside a capture, nothing."""
    watched = getattr(_this_thread, "watched", None)
    if watched is not None:
        watched.append((weakref.ref(owner), attribute, getattr(owner, attribute)))


def _capture_in_this_thread() -> _Recorder | None:
    """The capture under way in the calling thread, if any (other threads' do not count)."""
    found: _Recorder | None = capture_in_this_thread()
    return found


def _copy_back_moved() -> None:
    """Each pinned tensor assigned since the last TinyJit call: its new value is copied into
    its pinned buffer (through the host), and it points at that buffer again."""
    global _moved
    moved, _moved = _moved, []
    for ref, pinned, index in moved:
        if (found := ref()) is None:
            continue
        tensor: Any = found if index is None else _Part(found, index)
        value = realize.buffer_of(realize.realize(tensor.uop))
        if value is not pinned:
            pinned.copyin(value.numpy())
            realize.forget_readers({pinned})
        tensor.uop = _view(pinned, tensor.shape)
        if index is None:
            found._refresh_views()


# --- helpers ---
class _Part:
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


def _view(buf: Buffer, shape: tuple[int, ...]) -> UOp:
    """A lazy node for buf's whole memory, in shape."""
    return UOp(Ops.BUFFER, buf.dtype, (), buf).reshape(shape)


def _buffer(t: Tensor) -> Buffer:
    """The buffer of a realized tensor."""
    assert realize.is_realized(t.uop), "the tensor should have been realized"
    return realize.buffer_of(t.uop)


def _captured_checks(cache: list[Launch]) -> list[tuple[realize.Check, Buffer, Buffer | None]]:
    """Each deferred check computed by the cache, with the buffers its flag and value land in."""
    written = {launch.item.output: launch.out for launch in cache}
    found = []
    for launch in cache:
        if (check := realize.check_of(launch.item.output)) is not None:
            value = None if check.value is None else written.get(check.value)
            found.append((check, launch.out, value))
    return found


def _detached(launch: Launch) -> ScheduleItem:
    """The launch's item with the same kernel, name and program, its output and inputs views
    of the launch's buffers. A captured item holds the lazy graph it computed, which holds the
    buffers of the tensors realized in the function: a buffer the cache no longer uses would
    seem in use (see _held_elsewhere)."""
    item = launch.item
    views = tuple(_view(b, (b.size,)) for b in launch.inputs)
    detached = ScheduleItem(item.ast, _view(launch.out, item.output.shape), views, item.name)
    if detached == item:  # (an equal new one would lose the program: realize._launched is weak)
        return item
    realize.share_program(detached, item)
    return detached


def _copy_item(dest: Buffer, src: Buffer) -> ScheduleItem:
    """A schedule step copying src into dest (a copy: ast None)."""
    return ScheduleItem(None, _view(dest, (dest.size,)), (_view(src, (src.size,)),),
                        f"copy {dest.size}")


def _positional_names(fn: Callable[..., Any]) -> list[str]:
    """The names of fn's positional parameters (none known for a builtin)."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    try:
        return [p.name for p in inspect.signature(fn).parameters.values() if p.kind in kinds]
    except (TypeError, ValueError):
        return []


def _arguments(name: str, positional: list[str], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """A call's arguments by name (the parameter's, else args[i]), split into the tensors (the
    inputs) and the others."""
    named = {(positional[i] if i < len(positional) else f"args[{i}]"): a
             for i, a in enumerate(args)}
    named.update(kwargs)
    tensors, others = {}, {}
    for arg, value in named.items():
        if isinstance(value, Tensor):
            tensors[arg] = value
        elif isinstance(value, (list, tuple, dict)) and any(
                isinstance(v, Tensor) for v in (value.values() if isinstance(value, dict)
                                                else value)):
            raise JitError(f"TinyJit({name}): argument {arg} is a {type(value).__name__} "
                           "holding tensors; only tensors passed directly are inputs a replay "
                           "can swap. Pass each tensor as an argument of its own.")
        else:
            others[arg] = value
    return tensors, others


def _output_tensors(ret: Any, name: str) -> list[Tensor]:
    """The tensors in a return value: None, a Tensor, or tuples, lists and dicts of them (as
    in tinygrad). Anything else would be returned unchanged by every replay: JitError."""
    if ret is None:
        return []
    if isinstance(ret, Tensor):
        if isinstance(ret.device, tuple):
            raise JitError(f"TinyJit({name}): the function returned a tensor over many devices "
                           "(tinyfw/multi.py): return it gathered on one, .to(device)")
        return [ret]
    if isinstance(ret, (tuple, list, dict)):
        items = ret.values() if isinstance(ret, dict) else ret
        return [t for item in items for t in _output_tensors(item, name)]
    raise JitError(f"TinyJit({name}): the function returned a {type(ret).__name__}; a replay "
                   "does not run the function, so only tensors (whose buffers replays refresh) "
                   "can be returned. Return a Tensor, or a tuple, list or dict of tensors, or "
                   "None.")


def _rebuilt(ret: Any, swap: dict[Buffer, Buffer]) -> Any:
    """The captured return value with each tensor replaced by a new one on its buffer, swapped
    if swap has it: never a tensor the caller already holds, which it may have assigned to (an
    assign to a returned tensor made the next replays return that tensor's new value)."""
    if isinstance(ret, Tensor):
        buf = _buffer(ret)
        return Tensor(_view(swap.get(buf, buf), ret.shape))
    if isinstance(ret, dict):
        return {key: _rebuilt(value, swap) for key, value in ret.items()}
    if isinstance(ret, (tuple, list)):
        values = [_rebuilt(value, swap) for value in ret]
        return type(ret)(*values) if hasattr(ret, "_fields") else type(ret)(values)  # namedtuple
    return ret


def _leftover_grads() -> set[Buffer]:
    """The buffers of the .grad tensors there before a capture (realized now, before it)."""
    grads = [t.grad for t in list(Tensor._grad_leaves.values()) if t.grad is not None]
    try:
        Tensor.realize_all(*grads)
    except NotSupportedError:  # one its device cannot compute (float64 on WEBGPU): no kernel
        grads = [g for g in grads if _realized_if_possible(g)]  # there reads it, nor adds to it
    return {realize.buffer_of(p) for g in grads for p in multi.parts_of(realize.realize(g.uop))}


def _realized_if_possible(t: Tensor) -> bool:
    try:
        t.realize()
    except NotSupportedError:
        return False
    return True


def _rng_state() -> tuple[int, Any]:
    """Which generator Tensor samples with, and where it is in its sequence."""
    rng = Tensor._host_rng()
    return id(rng), rng.bit_generator.state


def _same(a: Any, b: Any) -> bool:
    """a and b are the same argument (equal, for values that compare)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # e.g. numpy arrays: an ambiguous truth value
        return False
