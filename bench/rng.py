"""Drawing random numbers: tinyfw's device stream (threefry) eagerly and inside TinyJit, against
numpy's and torch's generators, in one run.

Run from the repo root:  .venv/bin/python -m bench.rng  (--size N, --rounds N)
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402


def per_call_us(run: Callable[[], Any], rounds: int) -> float:
    """The best of 5 timings of `rounds` calls, in microseconds per call, after 20 warm-up
    calls (the kernels built, a TinyJit captured)."""
    for _ in range(20):
        run()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            run()
        best = min(best, (time.perf_counter() - start) / rounds)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    from tinyfw import Tensor
    from tinyfw.jit.jit import TinyJit
    n, rounds = args.size, args.rounds
    rng = np.random.default_rng(0)
    jitted = TinyJit(lambda x: (x + Tensor.rand(n)).realize())
    zeros = Tensor.zeros(n).realize()
    rows = [("numpy default_rng.random", lambda: rng.random(n, dtype=np.float32)),
            ("tinyfw Tensor.rand(n).realize() (CPU)", lambda: Tensor.rand(n).realize()),
            ("tinyfw x + Tensor.rand(n) in TinyJit", lambda: jitted(zeros))]
    try:
        import torch
        rows.insert(1, ("torch.rand", lambda: torch.rand(n)))
    except ImportError:
        pass
    print(f"{n} float32 uniform samples per call; microseconds per call, best of 5 x {rounds}")
    for name, run in rows:
        print(f"{name:42s} {per_call_us(run, rounds):10.1f} us")


if __name__ == "__main__":
    main()
