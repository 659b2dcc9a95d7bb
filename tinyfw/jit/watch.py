"""Python state the captured kernels hold, checked before each replay.

A replay does not run the function, so Python values it read at the capture stay baked into the
kernels. Three kinds are checked, each with a JitError that says what to do: Tensor.training
switched since the capture; a value watched during it (watch(owner, attribute): an optimizer's
float learning rate); a tensor replaced in a place the function reaches (`model.w = Tensor(...)`,
found by places.py) rather than assigned. Other Python state is not checked (JIT_VERIFY=1 finds
it: tinyfw/jit/replay.py).
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from tinyfw.helpers import shape_str
from tinyfw.jit.errors import JitError
from tinyfw.jit.inputs import same
from tinyfw.jit.places import Place, replaced
from tinyfw.tensor import Tensor

# (the object, by a weak reference; its attribute; the value it had during the capture)
Watched = tuple["weakref.ref[Any]", str, Any]

_this_thread = threading.local()  # .watched: what watch() adds to, during a capture


@contextlib.contextmanager
def watching() -> Iterator[list[Watched]]:
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


def check_python_state(name: str, training: bool, places: list[Place],
                       watched: list[Watched]) -> None:
    """JitError where Python state TinyJit(name)'s kernels hold has changed since the capture:
    the training flag (training then), a place that held one of its tensors, or a value watched
    during the capture (an optimizer's float learning rate). A replay would compute with the
    old one."""
    if Tensor.training != training:
        raise JitError(f"TinyJit({name}): captured with Tensor.training="
                       f"{training}, called with {Tensor.training}: a replay runs the "
                       "captured kernels, computed for the other mode (dropout, BatchNorm's "
                       "statistics). Use one TinyJit per mode (a train step and an eval "
                       "step), or call .reset() after switching to capture again.")
    if (place := replaced(places)) is not None:
        now = place.holds_now()
        what = f"a tensor of shape {shape_str(now.shape)}" if isinstance(now, Tensor) else \
            f"{type(now).__name__}"
        raise JitError(f"TinyJit({name}): {place.name} was replaced by {what} since the "
                       f"capture (`{place.name} = ...`); replays read the buffer of the "
                       f"tensor it held then. Give it new values in place with "
                       f"{place.name}.assign(...), or call .reset() to capture again.")
    for owner_ref, attribute, value in watched:
        owner = owner_ref()
        if owner is not None and not same(now := getattr(owner, attribute), value):
            raise JitError(
                f"TinyJit({name}): {type(owner).__name__}.{attribute} was {value!r} "
                f"when the function was captured and is {now!r} now; the replayed kernels "
                f"hold {value!r}. Make it a Tensor (as lr=Tensor(0.01)) and .assign() new "
                "values to it, or call .reset() to capture again.")
