# Exercises of chapter 11, generated from tinyfw/codegen/search.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/11_speed
# generated text id: 7a274292fc2fa28c (lets tools.generate tell your edits apart)
"""BEAM search (chapter 11): the optimizations of a kernel found by trying them.

Every optimization is a split of a loop (tinyfw/codegen/opt.py), so the search space is the
sequences of splits. A beam search keeps the `width` fastest sequences found so far; each round
tries every one of them with one more split, and it stops when a round finds nothing faster (or
its time is up). What "faster" means comes from a `timings` function given to it: the engine
times candidates on the device (tinyfw/engine/beam.py), a test gives made-up times, so the search
itself is the same plain loop either way.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from tinyfw.codegen.kernel import AxisKind, Kernel
from tinyfw.codegen.opt import Opt, OptOps, apply_opts, applies
from tinyfw.helpers import prod

UPCAST_AMOUNTS = (2, 3, 4, 8, 16)
UNROLL_AMOUNTS = (2, 4, 8, 16)
LOCAL_AMOUNTS = (4, 8, 16, 32, 64)        # threads of a work-group, on a GPU device
GROUP_AMOUNTS = (8, 16, 32, 64, 128, 256)
PANEL_AMOUNTS = (64, 128, 256)            # iterations of a reduce's panel, on the CPU
MAX_UPCAST = 256  # outputs computed together: a register tile, not a copy of the whole loop
MAX_UNROLL = 32   # partial accumulators per output

Timings = Callable[[Sequence[tuple[Opt, ...]]], list[float]]


def actions(kernel: Kernel, cores: int = 1, workgroups: bool = False) -> list[Opt]:
    """Every split that applies to the kernel as it is: UPCAST of an output loop, UNROLL of a
    reduce loop (by the amounts above, where they divide it), with several cores THREAD of a
    whole output loop, and on a device of work-groups LOCAL of an output loop and GROUP of a
    reduce loop (those and the others exclude each other: apply_opt says which apply), on
    any other PANEL of a reduce loop longer than a panel."""
    found: list[Opt] = []
    upcast = prod(a.size for a in kernel.axes if a.kind is AxisKind.UPCAST)
    unroll = prod(a.size for a in kernel.axes if a.kind is AxisKind.UNROLL)
    threaded = any(a.kind is AxisKind.THREAD for a in kernel.axes)
    for i, axis in enumerate(kernel.axes):
        if axis.kind is AxisKind.GLOBAL:
            found += [Opt(OptOps.UPCAST, i, n) for n in UPCAST_AMOUNTS
                      if upcast * n <= MAX_UPCAST]
            if cores > 1 and not threaded and axis.size >= cores:
                found.append(Opt(OptOps.THREAD, i, axis.size))
            found += [Opt(OptOps.LOCAL, i, n) for n in LOCAL_AMOUNTS if workgroups]
        elif axis.kind is AxisKind.REDUCE:
            found += [Opt(OptOps.UNROLL, i, n) for n in UNROLL_AMOUNTS
                      if unroll * n <= MAX_UNROLL]
            found += [Opt(OptOps.GROUP, i, n) for n in GROUP_AMOUNTS if workgroups]
            found += [Opt(OptOps.PANEL, i, n) for n in PANEL_AMOUNTS
                      if not workgroups and axis.size > n]
    return [opt for opt in found if applies(kernel, opt)]


def beam_search(kernel: Kernel, timings: Timings, width: int, cores: int = 1,
                budget_s: float = 30.0, clock: Callable[[], float] = time.perf_counter,
                workgroups: bool = False) -> tuple[Opt, ...]:
    """The fastest sequence of splits found: from no split at all, each round extends every
    sequence of the beam by each of its actions, times all the new ones at once (timings, in
    seconds each) and keeps the `width` fastest; it ends when a round finds none faster than the
    best so far, or when budget_s has passed. (cores and workgroups: what actions() may try.)"""
    # TODO 11.search: write this part. The chapter explains it:
    #   chapters/11_speed/README.md#searching
    raise NotImplementedError("not done yet: 11.search")
