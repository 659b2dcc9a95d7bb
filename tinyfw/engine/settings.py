"""The settings the compile pipeline reads from the environment, at each call (so they can
change while a program runs): NOOPT, BEAM and FMA. (DEBUG is debug.py's.)"""
from __future__ import annotations

import os


def optimizing() -> bool:
    """Whether kernels get optimizations: not with NOOPT=1 (chapters 01 to 10 grade without)."""
    return os.getenv("NOOPT", "0") in ("", "0")


def beam_width() -> int:
    """$BEAM: the width of the search (0: no search, the hand-coded optimizations). The search
    (engine/beam.py) is imported only when it runs."""
    return int(os.getenv("BEAM", "0") or 0)


def fusing() -> bool:
    """Whether optimized kernels get fused multiply-adds: not with FMA=0."""
    return os.getenv("FMA", "1") not in ("", "0")
