"""The engine's caches, and the one function that empties them all.

The engine keeps what it made so that the same work is not done twice: the schedules of graphs
(schedule_cache.py: one per graph structure, and the last of each eager op), the kernel and the
optimizations chosen for each AST, and the programs built, under program.py's one key. Those
keys hold what the engine's code is given (an AST, the device's parts and settings as plain
values), never the code itself: a function of the scheduler, the lowering, a renderer or a
compiler swapped for another (a learner's exercise, a test's monkeypatch) leaves every key as
it was. Whoever swaps code says so by calling forget_built(); chapters/learner.py does at each
swap it makes and undoes.
"""
from __future__ import annotations

from tinyfw.engine import program, schedule_cache


def forget_built() -> None:
    """Empty every cache of the engine: schedules, kernels, chosen optimizations and programs.
    The next realize makes them again with the code and settings in place now. (A library
    compiled before is still found on disk by its source: a compiler run is not repeated.)"""
    schedule_cache.clear()
    program.forget()
