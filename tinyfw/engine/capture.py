"""What the layers below TinyJit need of a capture, in one place: whether one is under way in
the calling thread, the record of a captured launch, and a way to run a step that a method
repeats under a TinyJit of its own. TinyJit (tinyfw/jit/) sits above Tensor and sets
what is here; nothing here imports it, so Tensor and its mixins never import the JIT.

The hooks of realize (realize.Listener: launched, assigning, reading) are how a capture hears
of kernels and of tensors' writes and reads; this module says whose capture it is."""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tinyfw.device import Buffer
    from tinyfw.engine.schedule import ScheduleItem


@dataclass
class Launch:
    """One captured kernel (a copy when item.ast is None) and the buffers it wrote and read."""
    item: ScheduleItem
    out: Buffer
    inputs: list[Buffer]


_this_thread = threading.local()  # .recorder: the capture under way in this thread, if any
_replayer: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None


def capture_in_this_thread() -> Any:
    """The capture under way in the calling thread (TinyJit's recorder), or None: other threads'
    captures do not count."""
    return getattr(_this_thread, "recorder", None)


def set_capture_in_this_thread(recorder: Any) -> None:
    """The capture under way in the calling thread from now on (None: none). TinyJit's."""
    _this_thread.recorder = recorder


def set_replayer(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """What replayed() wraps a step in: TinyJit, which sets it when it is imported."""
    global _replayer
    _replayer = make


def replayed(step: Callable[..., Any]) -> Callable[..., Any]:
    """step under a TinyJit of its own, for a step that a method runs many times on tensors of
    the same shapes (a round of Keccak or of Jacobi): from the third call its kernels are
    replayed, not built and scheduled again, which is most of the time of a small kernel. The
    replayed results are buffers with no graph: only for steps nothing differentiates. Inside
    another TinyJit's capture (JITs do not nest), or before TinyJit is imported, step runs as
    it is; a capture records it."""
    if capture_in_this_thread() is not None or _replayer is None:
        return step
    return _replayer(step)
