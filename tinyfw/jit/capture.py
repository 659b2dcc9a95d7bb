"""Call 2 of a TinyJit: what a capture records, and what it must not have done.

While the function runs, a Recorder listens to realize (realize.Listener) in the capturing
thread: it keeps each kernel launched as a Launch (tinyfw/engine/capture.py) with the buffers it
wrote and read, each tensor assigned with the buffer it held before, and refuses reads of data.
A kernel whose every buffer was made during the capture (and is written by no kernel kept for
replays) computes a constant of the function: it runs once, now, and is not recorded. Once the
function has returned, check_capture raises a JitError for each pitfall a replay would hide: no
kernel at all, random numbers drawn on the host, a gradient left from an earlier call added to,
two inputs on one buffer, an input returned.
"""
from __future__ import annotations

from typing import Any

from tinyfw.device import Buffer
from tinyfw import multi
from tinyfw.engine import realize
from tinyfw.engine.capture import Launch, capture_in_this_thread, set_capture_in_this_thread
from tinyfw.engine.schedule import ScheduleItem
from tinyfw.helpers import shape_str
from tinyfw.jit.errors import JitError
from tinyfw.jit.inputs import InputSpec, tensor_buffer
from tinyfw.jit.state import Part
from tinyfw.renderer.base import NotSupportedError
from tinyfw.tensor import Tensor


class Recorder(realize.Listener):
    """Listens while a function is captured: keeps each launch, and each tensor assigned with
    the buffer it held before (its first assign); refuses reads of data. `with Recorder(name)
    as recorder:` listens during the block and marks a capture under way, undoing
    both at its end, even when the block raises. Both are the calling thread's alone
    (realize.thread_listeners, engine/capture.py): another thread's kernels and reads are not the
    captured function's."""

    def __init__(self, name: str):
        self.name = name
        self.launches: list[Launch] = []
        self.assigned: list[tuple[Any, Buffer]] = []  # (a Tensor, or a Part of one; its buffer)
        self.since = Buffer.made  # buffers of a greater serial are made during the capture
        self.written: set[Buffer] = set()  # the outputs of the launches kept

    def __enter__(self) -> Recorder:
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
                if not any(isinstance(t, Part) and t.tensor is tensor and t.index == i
                           for t, _ in self.assigned):
                    self.assigning(Part(tensor, i))
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


def refuse_nesting(name: str) -> None:
    """JitError if this thread is capturing a function already: TinyJit(name) is called inside
    it (other threads' captures do not count)."""
    capturing = capture_in_this_thread()
    if capturing is not None:
        raise JitError(f"TinyJit({name}) was called while TinyJit({capturing.name}) "
                       "captured its function: nested JITs are not supported. Jit only the "
                       "outer function (the inner one's kernels are captured with it), or "
                       "call the inner function undecorated.")


# --- what must not change during a capture: taken before it, checked after it ---
def leftover_grads() -> set[Buffer]:
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


def rng_state() -> tuple[int, Any]:
    """Which generator Tensor samples with, and where it is in its sequence."""
    rng = Tensor._host_rng()
    return id(rng), rng.bit_generator.state


def check_capture(name: str, cache: list[Launch], inputs: dict[str, InputSpec],
                  outputs: list[Tensor], old_grads: set[Buffer], rng: tuple[int, Any]) -> None:
    """What a capture of TinyJit(name), which recorded cache for the inputs and returned
    outputs, must not have done (old_grads and rng: leftover_grads() and rng_state() taken
    before it); see tinyfw/jit/jit.py's docstring."""
    if not cache:
        raise JitError(f"TinyJit({name}): the captured call launched no kernel, so "
                       "there is nothing to replay. A jitted function must compute with "
                       "tensors and return (or realize) the result; one that only returns "
                       "values computed before needs no JIT.")
    if rng_state() != rng:
        raise JitError(f"TinyJit({name}): the function drew random numbers on the host "
                       "(randint, randperm or multinomial) while it was captured. tinyfw "
                       "samples those as the graph is built, so every replay would reuse "
                       "these same numbers. Draw them outside the function and pass them in "
                       "as a tensor argument (rand, randn, uniform, normal and dropout are "
                       "computed on the device: a replay draws new ones).")
    if any(b in old_grads for launch in cache for b in launch.inputs):
        raise JitError(f"TinyJit({name}): backward added to a .grad left from an "
                       "earlier call; a replay would add to that old gradient every time. "
                       "Set .grad = None on the parameters (zero_grad) in the function, "
                       "before backward.")
    by_buffer = {id(spec.buffer): arg for arg, spec in inputs.items()}
    if len(by_buffer) < len(inputs):
        raise JitError(f"TinyJit({name}): two tensor arguments share one buffer; the "
                       "cache could not tell them apart on a replay. Pass distinct tensors "
                       "(a copy: t.clone().realize()).")
    for t in outputs:
        if (arg := by_buffer.get(id(tensor_buffer(t)))) is not None:
            raise JitError(f"TinyJit({name}): the function returned its input {arg}; "
                           "a replay would return the captured call's tensor, not the new "
                           f"one. Return a copy ({arg}.clone()) or leave it out.")
