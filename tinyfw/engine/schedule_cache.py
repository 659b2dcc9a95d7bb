"""The schedule cache: a graph scheduled again with the same structure (other buffers, the same
ops, dtypes, shapes, devices and views) gets the kernels of the first time, bound to its own
nodes, without the scheduler's walks.

A training loop or an eager model builds the same graph over new buffers at every step; cutting
it into kernels again each time was most of a step's Python time. The structure is the graph
walked once in order, each node written as its op, dtype, argument and the positions of its
sources, a buffer as its device, dtype and size, a DETACH without its argument (a number that
only keeps an assigned value a node of its own; the positions keep nodes apart), and a node
already computed (loaded, not computed again) marked so, with its shape and device in place of
its sources: nothing below it is walked (a prompt's logits sit on every layer's graph, and on
the keys' whole history of writes: 11,700 nodes walked for an argmax of them). Two graphs of
one structure have their nodes at the same positions, so a schedule stored as positions binds
to the new graph's nodes directly.

The scheduler's own code is no part of the key: whoever swaps a function of the scheduler or
of the views it pushes (a learner's exercise, a test's monkeypatch) empties the cache with
tinyfw.engine.caches.forget_built() (chapters/learner.py does at each swap).

An eager op done again over the same tensors skips even the walk: see recent_schedule below.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, cast

from tinyfw.engine.schedule import ScheduleItem, create_schedule
from tinyfw.engine.split_reduce import split_of, split_reduce_of
from tinyfw.uop.ops import Ops, UOp

MAX_ENTRIES = 512  # graphs remembered; the oldest is forgotten past this

# One entry per structure: each item as (ast, the output's position, the inputs' positions,
# name), oldest first (popitem(last=False) drops it in one step, even while another thread
# adds an entry).
# A node is kept as its position in the walk, or, for the partial results of a split reduce
# that the scheduler made (split_reduce.py), as ("partials", the reduce's position).
Place = int | tuple[str, int]
Entry = list[tuple[UOp | None, Place, tuple[Place, ...], str]]
_entries: OrderedDict[tuple[Any, ...], Entry] = OrderedDict()
hits = misses = 0  # counted for tests and DEBUG


def cached_schedule(walk: Walk) -> list[ScheduleItem]:
    """create_schedule(walk.targets, walk.is_loaded), from the cache when a graph of the same
    structure was scheduled before."""
    global hits, misses
    key = walk.key()
    order = walk.order
    if (entry := _entries.get(key)) is not None:
        hits += 1

        def node_at(place: Place) -> UOp:
            return order[place] if isinstance(place, int) else split_partials(order[place[1]])
        return [ScheduleItem(ast, node_at(out), tuple(map(node_at, ins)), name)
                for ast, out, ins, name in entry]
    misses += 1
    items = create_schedule(walk.targets, walk.is_loaded)
    places = {node: place for item in items for node in (item.output, *item.inputs)
              if (place := _place(node, walk.position)) is not None}
    if all(item.output in places and all(n in places for n in item.inputs)
           for item in items):  # (else a node made while scheduling, of another kind: not kept)
        _entries[key] = [(item.ast, places[item.output],
                          tuple(places[n] for n in item.inputs), item.name) for item in items]
        if len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return items


def _place(node: UOp, position: dict[UOp, int]) -> Place | None:
    """Where a schedule's node is, for a graph of the same structure to find its own (None: a
    node it could not find)."""
    if node in position:
        return position[node]
    reduce = split_reduce_of(node)
    return ("partials", position[reduce]) if reduce in position else None


def split_partials(reduce: UOp) -> UOp:
    """The partials node of a reduce that a schedule of its graph's structure split."""
    split = split_of(reduce)
    assert split is not None, "a reduce split once is split again in the same structure"
    return split.partials


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
        is_loaded, seen, at = self.is_loaded, self._seen, position.__getitem__
        for target in targets:
            self.targets.append(target)
            for node in target.toposort(stop=is_loaded, seen=seen):
                position[node] = len(order)
                order.append(node)
                loaded.append(flag := is_loaded(node))
                parts.append((node.part, (node.shape, node.device) if flag
                              else tuple(map(at, node.src)), flag))

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


# --- the same op again, over the same sources ---
# An eager program realizes one op at a time over tensors computed before: `x + 1` again and
# again, each time a new node over the very same sources. When a node's sources are the nodes
# (alive: the same graph below) a node of its kind was scheduled over, and nothing below can
# have changed whether it is loaded, its schedule is that one's bound to it, found without the
# walk and its key. Nothing below can change so when every node below is a buffer or one
# reshape of one (always loaded) or has no buffer below (a constant: never loaded; see
# realize.is_loaded). Only one-kernel schedules of the node itself are kept so.
RECENT_ENTRIES = 256


class _Recent(NamedTuple):
    """A node's schedule of one kernel, and its sources then."""
    sources: tuple[weakref.ref[UOp], ...]
    ast: UOp | None
    inputs: tuple[weakref.ref[UOp], ...]  # (nodes below the sources: alive while they are)
    name: str


_recent: OrderedDict[tuple[Any, ...], _Recent] = OrderedDict()  # (oldest first)


def recent_schedule(node: UOp) -> list[ScheduleItem] | None:
    """The schedule of node if a node of its kind was scheduled over the same sources, alive
    (see _Recent); else None."""
    global hits
    entry = _recent.get(_recent_key(node))
    if entry is None:
        return None
    for source, now in zip(entry.sources, node.src):
        if source() is not now:  # (a node gone, and another at its address)
            return None
    hits += 1
    inputs = cast(list[UOp], [ref() for ref in entry.inputs])  # (below the sources: alive)
    return [ScheduleItem(entry.ast, node, tuple(inputs), entry.name)]


def _recent_key(node: UOp) -> tuple[Any, ...]:
    """node's kind and the addresses of its sources (see recent_schedule)."""
    return (node.part, *map(id, node.src))


def remember_recent(walk: Walk, items: list[ScheduleItem]) -> None:
    """Keep the schedule of a walk of one target for recent_schedule, if it is one kernel of
    the target over nodes that stay loaded or not as they are (see above)."""
    if len(walk.targets) != 1 or len(items) != 1 or items[0].output is not walk.targets[0]:
        return
    target = walk.targets[0]
    has_buffer: list[bool] = []  # (of each node in the walk's order: a buffer below it)
    for node, loaded in zip(walk.order, walk.loaded):  # (a loaded node reads one: not walked)
        below = loaded or node.op is Ops.BUFFER or \
            any(has_buffer[walk.position[s]] for s in node.src)
        has_buffer.append(below)
        direct = node.op is Ops.BUFFER or (node.op is Ops.RESHAPE and node.src[0].op is Ops.BUFFER)
        if below and not direct and node is not target:
            return
    item = items[0]
    _recent[_recent_key(target)] = _Recent(
        tuple(map(weakref.ref, target.src)), item.ast,
        tuple(map(weakref.ref, item.inputs)), item.name)
    if len(_recent) > RECENT_ENTRIES:
        _recent.popitem(last=False)


def clear() -> None:
    """Forget every schedule kept."""
    _entries.clear()
    _recent.clear()
