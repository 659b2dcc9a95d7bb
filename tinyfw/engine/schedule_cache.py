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
from collections.abc import Callable, Mapping, ValuesView
from itertools import chain
from types import FunctionType, ModuleType
from typing import Any, NamedTuple

from tinyfw.engine.program import code_identity
from tinyfw.engine.schedule import ScheduleItem, create_schedule
from tinyfw.uop.ops import Ops, UOp, arg_key

MAX_ENTRIES = 512  # graphs remembered; the oldest is forgotten past this
SCHEDULER_MODULES = ("tinyfw.engine.schedule", "tinyfw.shape.view")  # (their exercises)

# One entry per structure: each item as (ast, the output's position, the inputs' positions,
# name). Python's dicts keep insertion order, which makes the oldest entry the first.
Entry = list[tuple[UOp | None, int, tuple[int, ...], str]]
_entries: dict[tuple[Any, ...], Entry] = {}
hits = misses = 0  # counted for tests and DEBUG


def cached_schedule(targets: list[UOp], is_loaded: Callable[[UOp], bool]) -> list[ScheduleItem]:
    """create_schedule(targets, is_loaded), from the cache when a graph of the same structure
    was scheduled before with the same scheduler code."""
    global hits, misses
    key, order = structure(targets, is_loaded)
    key = (key, scheduler_code())
    if (entry := _entries.get(key)) is not None:
        hits += 1
        return [ScheduleItem(ast, order[out], tuple(order[i] for i in ins), name)
                for ast, out, ins, name in entry]
    misses += 1
    items = create_schedule(targets, is_loaded)
    position = {node: i for i, node in enumerate(order)}
    if all(item.output in position and all(n in position for n in item.inputs)
           for item in items):  # (else a node made while scheduling: not kept)
        _entries[key] = [(item.ast, position[item.output],
                          tuple(position[n] for n in item.inputs), item.name) for item in items]
        if len(_entries) > MAX_ENTRIES:
            del _entries[next(iter(_entries))]
    return items


def structure(targets: list[UOp], is_loaded: Callable[[UOp], bool]
              ) -> tuple[tuple[Any, ...], list[UOp]]:
    """The graph below targets as a key (see the module's docstring), and its nodes in the
    key's order."""
    order: list[UOp] = []
    position: dict[UOp, int] = {}
    parts: list[tuple[Any, ...]] = []
    seen: set[UOp] = set()  # (shared: a node under several targets is walked once)
    for target in targets:
        for node in target.toposort(seen=seen):
            position[node] = len(order)
            order.append(node)
            if node.op is Ops.BUFFER:
                arg = (node.arg.device, node.arg.dtype, node.arg.size)
            elif node.op is Ops.DETACH:  # its arg only tells nodes apart (an assign's number)
                arg = None
            else:
                arg = arg_key(node.arg)
            parts.append((node.op, node.dtype, arg, tuple(map(position.__getitem__, node.src)),
                          is_loaded(node)))
    return (tuple(parts), tuple(position[t] for t in targets)), order


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
