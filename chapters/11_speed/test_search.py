"""Searching: your beam_search keeps the width fastest sequences of optimizations, extends each
by every action, times the new ones together, and stops when nothing is faster or time is up.
The timings and the clock are made up here, so the grade never depends on the machine."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from chapters.grading import expect_equal
from chapters.optimizing import kernel_of
from tinyfw import Tensor
from tinyfw.codegen.opt import Opt, OptOps, apply_opts
from tinyfw.codegen.search import actions, beam_search

pytestmark = pytest.mark.task("11.search")

U, R, T = OptOps.UPCAST, OptOps.UNROLL, OptOps.THREAD
KERNEL = kernel_of(Tensor(np.ones((12, 20), np.float32)) @ Tensor(np.ones((20, 8), np.float32)))


class Timer:
    """Made-up timings: 10 s, minus 2 s per UPCAST and 1 s per UNROLL, minus a little for the
    last opt's amount and axis (so no two candidates tie), for at most `depth` opts; any
    longer sequence takes 10 s. Records what it was asked to time, round by round."""

    def __init__(self, depth: int = 2):
        self.depth = depth
        self.rounds: list[list[tuple[Opt, ...]]] = []

    def __call__(self, candidates: Sequence[tuple[Opt, ...]]) -> list[float]:
        self.rounds.append(list(candidates))
        return [self.time(c) for c in candidates]

    def time(self, opts: tuple[Opt, ...]) -> float:
        if len(opts) > self.depth:
            return 10.0
        gain = sum(2.0 if o.op is U else 1.0 if o.op is R else 0.0 for o in opts)
        last = opts[-1].amount / 1000 + opts[-1].axis / 100000 if opts else 0.0
        return 10.0 - gain - last


def test_the_first_round_times_the_kernel_as_it_is() -> None:
    """The search starts from no optimization at all: its first call times () alone."""
    timer = Timer()
    beam_search(KERNEL, timer, width=2)
    expect_equal(len(timer.rounds[0]), 1, what="candidates in the first call")
    assert timer.rounds[0] == [()], f"the first call timed {timer.rounds[0]}"


def test_each_round_extends_the_beam_by_every_action() -> None:
    """Round 2 times () extended by each of its actions; round 3 each of the 2 fastest of
    round 2 extended by each of its own actions (no sequence twice)."""
    timer = Timer()
    beam_search(KERNEL, timer, width=2)
    first = [(opt,) for opt in actions(KERNEL)]
    assert sorted(map(repr, timer.rounds[1])) == sorted(map(repr, first)), \
        f"round 2 timed {timer.rounds[1]}, expected every single action of the kernel"
    best_two = sorted(first, key=timer.time)[:2]
    expected = {b + (opt,) for b in best_two for opt in actions(apply_opts(KERNEL, b))}
    expect_equal(len(timer.rounds[2]), len(expected), what="candidates timed in round 3")
    assert set(timer.rounds[2]) == expected, "round 3 should extend the 2 fastest of round 2"


def test_it_returns_the_fastest_and_stops_when_nothing_is_faster() -> None:
    """With gains for up to 2 opts, the winner is 2 UPCASTs (the fastest), found in round 3;
    round 4 finds nothing faster, and the search stops there."""
    timer = Timer(depth=2)
    best = beam_search(KERNEL, timer, width=2)
    expect_equal(len(best), 2, what="opts in the winner")
    assert all(o.op is U for o in best), f"the winner should be 2 UPCASTs, got {best}"
    assert timer.time(best) == min(timer.time(c) for r in timer.rounds for c in r)
    expect_equal(len(timer.rounds), 4, what="calls of timings")


def test_a_wider_beam_times_more() -> None:
    """Width 1 keeps only the fastest: its third round times fewer candidates than width 3's."""
    narrow, wide = Timer(), Timer()
    beam_search(KERNEL, narrow, width=1)
    beam_search(KERNEL, wide, width=3)
    assert len(narrow.rounds[2]) < len(wide.rounds[2]), \
        f"width 1 timed {len(narrow.rounds[2])} in round 3, width 3 {len(wide.rounds[2])}"


def test_it_stops_when_the_budget_is_spent() -> None:
    """A clock that says 100 s have passed after the first timing: nothing more is timed, and
    the kernel is kept as it is."""
    timer = Timer()
    ticks = iter([0.0, 100.0, 200.0, 300.0])
    best = beam_search(KERNEL, timer, width=2, budget_s=30.0, clock=lambda: next(ticks))
    expect_equal(len(timer.rounds), 1, what="calls of timings")
    assert best == (), f"no search happened, so no opts: got {best}"


def test_threads_are_tried_with_several_cores() -> None:
    """With 2 cores the actions include a THREAD, and a timer that rewards it picks it."""
    assert any(o.op is T for o in actions(KERNEL, cores=2))

    def likes_threads(candidates: Sequence[tuple[Opt, ...]]) -> list[float]:
        return [1.0 if any(o.op is T for o in c) and len(c) == 1 else 5.0 for c in candidates]
    best = beam_search(KERNEL, likes_threads, width=2, cores=2)
    assert len(best) == 1 and best[0].op is T, f"got {best}"
