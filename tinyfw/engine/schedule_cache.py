"""The schedule cache: a graph scheduled again with the same structure (other buffers, the same
ops, dtypes, shapes, devices and views) gets the kernels of the first time, bound to its own
nodes, without the scheduler's walks.

A training loop or an eager model builds the same graph over new buffers at every step; cutting
it into kernels again each time was most of a step's Python time. The structure is the graph
walked once in order, each node written as its op, dtype, argument and the positions of its
sources, a buffer as its device, dtype and size, a DETACH without its argument (a number that
only keeps an assigned value a node of its own; the positions keep nodes apart), and a node
already computed (loaded, not computed again) marked so. Two graphs of one structure have
their nodes at the same positions, so a schedule stored as positions binds to the new graph's
nodes directly.

The scheduler's own code is part of the key: a function of the scheduler or of the views it
pushes, swapped (a learner's exercise, a test's monkeypatch), schedules again.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, ValuesView
from itertools import chain
from types import FunctionType, ModuleType
from typing import Any, NamedTuple

from tinyfw.engine.program import code_identity
from tinyfw.engine.schedule import ScheduleItem, create_schedule
from tinyfw.uop.ops import UOp

MAX_ENTRIES = 512  # graphs remembered; the oldest is forgotten past this
SCHEDULER_MODULES = ("tinyfw.engine.schedule", "tinyfw.shape.view")  # (their exercises)

# One entry per structure: each item as (ast, the output's position, the inputs' positions,
# name). Python's dicts keep insertion order, which makes the oldest entry the first.
Entry = list[tuple[UOp | None, int, tuple[int, ...], str]]
_entries: dict[tuple[Any, ...], Entry] = {}
hits = misses = 0  # counted for tests and DEBUG


def cached_schedule(walk: Walk) -> list[ScheduleItem]:
    """create_schedule(walk.targets, walk.is_loaded), from the cache when a graph of the same
    structure was scheduled before with the same scheduler code."""
    global hits, misses
    key = (walk.key(), scheduler_code())
    order = walk.order
    if (entry := _entries.get(key)) is not None:
        hits += 1
        return [ScheduleItem(ast, order[out], tuple(order[i] for i in ins), name)
                for ast, out, ins, name in entry]
    misses += 1
    items = create_schedule(walk.targets, walk.is_loaded)
    position = walk.position
    if all(item.output in position and all(n in position for n in item.inputs)
           for item in items):  # (else a node made while scheduling: not kept)
        _entries[key] = [(item.ast, position[item.output],
                          tuple(position[n] for n in item.inputs), item.name) for item in items]
        if len(_entries) > MAX_ENTRIES:
            del _entries[next(iter(_entries))]
    return items


class Walk:
    """The graph below some targets, walked once (see the module's docstring): its nodes in
    order, the position of each, and each one's part of the key. Targets added later continue
    the same walk (a deferred check's nodes, found among the nodes walked: realize.schedule),
    so every node is listed once in all."""

    def __init__(self, is_loaded: Callable[[UOp], bool]) -> None:
        self.is_loaded = is_loaded
        self.targets: list[UOp] = []
        self.order: list[UOp] = []
        self.position: dict[UOp, int] = {}
        self.loaded: list[bool] = []  # (is_loaded of each node, in order)
        self._parts: list[tuple[Any, ...]] = []
        self._seen: set[UOp] = set()  # (shared: a node under several targets is walked once)

    def add(self, targets: Iterable[UOp]) -> None:
        """Walk the graph below targets (what is not walked yet), and make them targets."""
        order, position, parts, loaded = self.order, self.position, self._parts, self.loaded
        is_loaded, seen = self.is_loaded, self._seen
        for target in targets:
            self.targets.append(target)
            for node in target.toposort(seen=seen):
                position[node] = len(order)
                order.append(node)
                loaded.append(flag := is_loaded(node))
                parts.append((node.part, tuple([position[s] for s in node.src]), flag))

    def key(self) -> tuple[Any, ...]:
        """The structure: every node's part, and the targets' positions."""
        return (tuple(self._parts), tuple(self.position[t] for t in self.targets))

    def computed(self) -> set[UOp]:
        """The nodes a schedule of the targets computes or loads: the targets, and the sources
        of each one computed (what is below a loaded node is not computed again)."""
        live = set(self.targets)
        for node, loaded in zip(reversed(self.order), reversed(self.loaded)):
            if not loaded and node in live:
                live.update(node.src)
        return live


def scheduler_code() -> tuple[Any, ...]:
    """The functions and classes (with their methods) of the scheduler's modules, as they are
    now. (Worked out again only when a namespace it reads, a module's or one of its classes',
    holds other objects than last time: see _Read.)"""
    global _last
    modules = tuple(sys.modules[name] for name in SCHEDULER_MODULES if name in sys.modules)
    last = _last  # (one read of it: another thread may replace it meanwhile)
    if modules != last.modules or not last.unchanged():
        _last = last = _read(modules)
    return last.code


class _Read(NamedTuple):
    """scheduler_code's answer, and what it was read from: the modules, the namespaces looked in
    (each module's, and those of the classes it defines and of their bases, but builtins', which
    cannot change) and the objects they held then. Any object set, added or removed in one of
    them (a learner's function, a method patched onto a class) shows as another object, or
    another count, there."""
    modules: tuple[ModuleType, ...]
    namespaces: tuple[ValuesView[Any], ...]  # (live views of the namespaces' values)
    held: tuple[Any, ...]
    code: tuple[Any, ...]

    def unchanged(self) -> bool:
        """True when the namespaces hold the objects they held when read. (Compared with ==,
        which tries identity first: a function or a class is equal only to itself, and what
        else a module holds is no part of the answer. A comparison that fails, as an array's
        can, counts as a change.)"""
        try:
            return tuple(chain.from_iterable(self.namespaces)) == self.held
        except Exception:
            return False


def _read(modules: tuple[ModuleType, ...]) -> _Read:
    """scheduler_code's answer for modules as they are now, with what it was read from."""
    namespaces: list[Mapping[str, Any]] = [vars(module) for module in modules]
    for module in modules:
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == module.__name__:
                namespaces += [vars(klass) for klass in value.__mro__
                               if klass.__module__ != "builtins"]
    views = tuple(namespace.values() for namespace in namespaces)
    held = tuple(chain.from_iterable(views))  # (before the code: a change meanwhile is seen)
    code = tuple(_code_of(module) for module in modules)
    return _Read(modules, views, held, code)


_last = _Read((), (), (), ())


def _code_of(module: ModuleType) -> tuple[Any, ...]:
    """A module's functions, and each class it defines as code_identity sees it."""
    out: list[Any] = []
    for value in list(vars(module).values()):
        if isinstance(value, FunctionType):
            out.append(value)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            out.append(code_identity(value))
    return tuple(out)


def clear() -> None:
    """Forget every schedule kept."""
    _entries.clear()
