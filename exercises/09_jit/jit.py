# Exercises of chapter 09, generated from tinyfw/jit/jit.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/09_jit
# generated text id: 840047e1e66739f6 (lets tools.generate tell your edits apart)
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

Where each part lives (tinyfw/jit/). This module holds TinyJit, which tells call 1, 2 and 3+
apart and composes the others: inputs.py (a call's arguments and result, as buffers),
capture.py (call 2: the Recorder and the checks of a capture), state.py (state kept in its old
buffers, and pinned tensors assigned between calls copied back), plan.py (the memory plan),
replay.py (calls 3+: this call's buffers, device graphs, deferred checks, JIT_VERIFY), watch.py
(the Python state checked before a replay) with places.py, and errors.py (JitError). What the
layers below TinyJit know of a capture is in tinyfw/engine/capture.py.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from tinyfw.device import Buffer
from tinyfw.engine import realize
from tinyfw.engine.capture import Launch
from tinyfw.engine.settings import debug_level
from tinyfw.engine.graph import graphs_enabled
from tinyfw.jit.capture import (Recorder, check_capture, leftover_grads, refuse_nesting,
                                rng_state)
from tinyfw.jit.errors import JitError
from tinyfw.jit.inputs import (InputSpec, arguments, check_call, output_tensors,
                               positional_names, realize_inputs, rebuilt, returned_buffers,
                               tensor_buffer, view)
from tinyfw.jit.places import Place, find_places
from tinyfw.jit.plan import plan_cache
from tinyfw.jit.replay import (CapturedCheck, captured_checks, device_graphs, fresh_outputs,
                               input_buffer, raise_violated, run_steps, verified_replay,
                               verifying)
from tinyfw.jit.state import copy_back_moved, keep_in, live_jits
from tinyfw.jit.watch import Watched, check_python_state, watch, watching
from tinyfw.runtime.graph import DeviceGraph
from tinyfw.tensor import Tensor

__all__ = ["InputSpec", "JitError", "Launch", "TinyJit", "watch"]


class TinyJit:
    """`TinyJit(fn)` or `@TinyJit`: call 1 runs fn, call 2 captures the kernels it launches,
    calls 3+ replay them on the new inputs without calling fn (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.name: str = getattr(fn, "__qualname__", repr(fn))
        self.positional = positional_names(fn)
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
        self.checks: list[CapturedCheck] = []     # deferred checks (replay.py)
        self.training = False                     # Tensor.training when it was captured
        self.watched: list[Watched] = []          # Python values its kernels hold (watch.py)
        self.steps: list[Launch | DeviceGraph] = []  # the cache with device graphs (graph.py)
        self.places: list[Place] = []             # where its tensors live (places.py)
        self.bytes_before = self.bytes_after = 0  # memory the cache writes (plan.py)

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        """Used on a method, the instance is passed as the first argument."""
        return self if obj is None else functools.partial(self.__call__, obj)

    def __repr__(self) -> str:
        return f"<TinyJit {self.name} cnt={self.cnt} kernels={len(self.jit_cache)}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        refuse_nesting(self.name)
        copy_back_moved()
        tensors, others = arguments(self.name, self.positional, args, kwargs)
        realize_inputs(self.name, tensors)  # inputs are buffers before the call
        if self.cnt == 0:
            ret = self.fn(*args, **kwargs)
            Tensor.realize_all(*output_tensors(ret, self.name))
        elif self.cnt == 1:
            # values computed earlier from the inputs would be read, not recomputed: forgotten
            realize.forget_readers({tensor_buffer(t) for t in tensors.values()},
                                   keep=frozenset(t.uop for t in tensors.values()))
            self.training = Tensor.training
            with watching() as watched:
                ret = self.capture(args, kwargs, tensors, others)
            self.watched = watched
            self._prepare_replays(others)
        else:
            ret = self._replay_call(args, kwargs, tensors, others)
        if self.cnt >= 1:  # the state buffers changed in place: values computed from them are old
            realize.forget_readers(self.written | self.pinned)
        self.cnt += 1
        return ret

    # --- call 2: capture ---
    def capture(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                tensors: dict[str, Tensor], others: dict[str, Any]) -> Any:
        """Run the function while recording every launch into the jit cache, then keep each
        assigned tensor's state in one buffer so that the cache can run again and again."""
        # TODO 09.capture: write this part. The chapter explains it:
        #   chapters/09_jit/README.md#capturing
        raise NotImplementedError("not done yet: 09.capture")

    def _prepare_replays(self, others: dict[str, Any]) -> None:
        """After the capture: the deferred checks found, the memory planned (plan.py; before
        the graphs, which hold the cache's buffers), the device graphs made, and the places
        of the tensors the replays read noted (places.py)."""
        self.checks = captured_checks(self.jit_cache)
        inputs = {spec.buffer for spec in self.inputs.values()}
        returned = set(returned_buffers(self.ret))
        flags = {b for _, flag, value in self.checks for b in (flag, value) if b is not None}
        # (plan_cache counts any other reference to an intermediate as one from outside the
        # JIT, which keeps it out of the plan: written lets go of them while it looks)
        self.written = set()
        self.bytes_before, self.bytes_after = plan_cache(self.name, self.jit_cache,
                                                         inputs | self.pinned | returned | flags)
        self.written = {launch.out for launch in self.jit_cache}
        self.steps = device_graphs(self.name, self.jit_cache, inputs | returned) \
            if graphs_enabled() else []
        self.places = find_places(self.fn, others, self.pinned)

    # --- call 3 and after: replay ---
    def _replay_call(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                     tensors: dict[str, Tensor], others: dict[str, Any]) -> Any:
        """A call after the capture: checked against it (the arguments, the Python state),
        replayed, and with JIT_VERIFY=1 checked against the function run the slow way."""
        check_call(self.name, self.inputs, self.constants, tensors, others)
        check_python_state(self.name, self.training, self.places, self.watched)
        if verifying():
            return verified_replay(self.name, lambda: self._replay_checked(tensors),
                                   lambda: self.fn(*args, **kwargs), tensors, self.pinned,
                                   self.written)
        return self._replay_checked(tensors)

    def _replay_checked(self, tensors: dict[str, Tensor]) -> Any:
        """The replay (with device graphs where there are), then its deferred checks."""
        ret = self.replay_graphs(tensors) if self.steps else self.replay(tensors)
        raise_violated(self.checks)
        return ret

    def replay(self, tensors: dict[str, Tensor]) -> Any:
        """Launch each captured kernel again, with the new inputs' buffers standing in for the
        captured call's, and new buffers for the outputs. The function is not called; what it
        returned comes back in the same shape, holding this call's values."""
        # TODO 09.replay: write this part. The chapter explains it:
        #   chapters/09_jit/README.md#replaying
        raise NotImplementedError("not done yet: 09.replay")

    def replay_graphs(self, tensors: dict[str, Tensor]) -> Any:
        """replay, with each device graph launching its kernels in one call (graph
        execution): the graph is told which buffers are new this time."""
        swap = {self.inputs[name].buffer: input_buffer(t, self.inputs[name], self.written)
                for name, t in tensors.items()}
        swap.update(fresh_outputs(self.ret, self.inputs, self.written, self.pinned))
        run_steps(self.steps, swap)
        if debug_level() >= 2:
            print(f"TinyJit({self.name}): replayed {len(self.jit_cache)} launches in "
                  f"{len(self.steps)} call{'s' if len(self.steps) != 1 else ''}")
        return rebuilt(self.ret, swap)
