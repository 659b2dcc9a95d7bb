"""Where a TinyJit's captured tensors live in the user's objects, to see them replaced.

A replay reads the buffers the capture saw. `model.w.assign(new)` puts new values in w's buffer
(the JIT follows that); `model.w = Tensor(new)` makes the attribute another tensor with another
buffer, which no replay reads: the model would silently compute with the old weights. So at the
capture the JIT finds the places that hold its tensors: the attributes, list items and dict
values reachable from what the function can see (its closure, the globals it names, its
non-tensor arguments such as `self`) that hold a tensor whose buffer the replays read. Before
each replay it looks at every place again, and a place that holds another object now raises a
JitError naming it (`model.w`).
"""
from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tinyfw.device import Buffer
from tinyfw import multi
from tinyfw.engine import realize
from tinyfw.tensor import Tensor

MAX_DEPTH = 6        # attributes of attributes ... followed this deep from a root
MAX_ITEMS = 10_000   # list items and dict values looked at in one container


@dataclass(frozen=True)
class Place:
    """container[key] (a list item or dict value) or container.key (an attribute) held tensor
    at the capture; name says where, for the error."""
    container: Any
    key: Any
    attribute: bool
    tensor: Tensor
    name: str

    def holds_now(self) -> Any:
        """What the place holds now (a missing attribute or key: None)."""
        try:
            if self.attribute:
                return getattr(self.container, self.key, None)
            return self.container[self.key]
        except (IndexError, KeyError, TypeError):
            return None


def find_places(fn: Callable[..., Any], arguments: dict[str, Any],
                buffers: set[Buffer]) -> list[Place]:
    """Every place reachable from fn's closure, the globals it names and `arguments` that
    holds a tensor whose buffer is in buffers."""
    places: list[Place] = []
    seen: set[int] = set()
    for name, root in _roots(fn, arguments):
        for place in _walk(root, name, 0, seen):
            # (a tensor over many devices, tinyfw/multi.py: any of its parts' buffers)
            nodes = multi.parts_of(place.tensor.uop)
            if any(realize.is_realized(n) and realize.buffer_of(n) in buffers for n in nodes):
                places.append(place)
    return places


def replaced(places: list[Place]) -> Place | None:
    """The first place that holds another object than at the capture, if any."""
    return next((p for p in places if p.holds_now() is not p.tensor), None)


def _roots(fn: Callable[..., Any], arguments: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(name, object) of what fn can reach without its tensor arguments."""
    yield from arguments.items()
    target = inspect.unwrap(fn)
    if isinstance(target, types.MethodType):
        yield "self", target.__self__
        target = target.__func__
    if not isinstance(target, types.FunctionType):
        return
    try:
        found = inspect.getclosurevars(target)
    except (TypeError, ValueError):
        return
    yield from found.nonlocals.items()
    yield from found.globals.items()


def _walk(obj: Any, name: str, depth: int, seen: set[int]) -> Iterator[Place]:
    """The places below obj (named name) that hold a tensor."""
    if depth > MAX_DEPTH or id(obj) in seen or isinstance(obj, Tensor):
        return
    if isinstance(obj, (type, types.ModuleType, types.FunctionType, types.MethodType, str,
                        bytes, int, float, bool)) or obj is None:
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        items: Any = ((k, v, False, f"{name}[{k!r}]") for k, v in list(obj.items())[:MAX_ITEMS])
    elif isinstance(obj, (list, tuple)):
        items = ((i, v, False, f"{name}[{i}]") for i, v in enumerate(obj[:MAX_ITEMS]))
    elif hasattr(obj, "__dict__"):
        items = ((k, v, True, f"{name}.{k}") for k, v in list(vars(obj).items()))
    else:
        return
    for key, value, attribute, path in items:
        if isinstance(value, Tensor):
            if not isinstance(obj, tuple):  # (a tuple's items cannot be replaced)
                yield Place(obj, key, attribute, value, path)
        else:
            yield from _walk(value, path, depth + 1, seen)
