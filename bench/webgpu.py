"""WEBGPU on lavapipe: the two figures of chapter 08 that its notebook does not measure.

1. What hiding float operands from the compiler costs (`hide_float_operands` in
   tinyfw/renderer/wgsl.py: one integer `|` per float operation): a 512 x 512 matmul and a chain
   of 16 elementwise ops over 4M floats, the best of several runs each (read back included), with
   the operands hidden, as tinyfw ships, and not hidden (each in a process of its own).
2. Whether a submit waits for the work queued before it: a 256 x 256 matmul launched twice in a
   row (its kernel built before), the time each launch takes to return, then the wait for both.

Run from the repo root:  source scripts/env.sh && .venv/bin/python -m bench.webgpu  (--rounds N)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.workgroups import best_ms  # noqa: E402


def chain(x: Any) -> Any:
    """16 elementwise float ops, fused into one kernel."""
    for _ in range(4):
        x = (x * 1.5 + 0.25).maximum(x - 1.0) / 1.75
    return x


def hiding_ms(rounds: int, hide: bool) -> dict[str, float]:
    """The matmul's and the chain's best times on WEBGPU, with the operands hidden or not."""
    from tinyfw import Tensor
    from tinyfw.renderer import wgsl
    if not hide:
        wgsl.hide_float_operands = lambda prog: prog
    rng = np.random.default_rng(0)
    a, b = (Tensor(rng.random((512, 512), dtype=np.float32), device="WEBGPU").realize()
            for _ in range(2))
    x = Tensor(rng.random(4 << 20, dtype=np.float32), device="WEBGPU").realize()
    return {"matmul 512 x 512": best_ms(lambda: (a @ b).numpy(), rounds),
            "16 elementwise ops over 4M": best_ms(lambda: chain(x).numpy(), rounds)}


def back_to_back_ms() -> dict[str, float]:
    """Two launches of a built 256 x 256 matmul in a row: how long each call took to return,
    and the wait for both results after them."""
    from tinyfw import Tensor
    rng = np.random.default_rng(0)
    a, b, c = (Tensor(rng.random((256, 256), dtype=np.float32), device="WEBGPU").realize()
               for _ in range(3))
    (a @ b).numpy()  # builds the kernel
    times = []
    start = time.perf_counter()
    first = (a @ b).realize()
    times.append(time.perf_counter())
    second = (a @ c).realize()
    times.append(time.perf_counter())
    first.numpy(), second.numpy()
    times.append(time.perf_counter())
    marks = [start] + times
    names = ["first launch returned", "second launch returned", "both read back"]
    return {name: (marks[i + 1] - marks[i]) * 1e3 for i, name in enumerate(names)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--part", choices=["hidden", "plain", "launches"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part == "launches":
        print(json.dumps(back_to_back_ms()))
        return
    if args.part:
        print(json.dumps(hiding_ms(args.rounds, args.part == "hidden")))
        return

    def part(name: str) -> dict[str, float]:
        command = [sys.executable, "-m", "bench.webgpu", "--rounds", str(args.rounds),
                   "--part", name]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        return dict(json.loads(done.stdout.splitlines()[-1]))

    hidden, plain = part("hidden"), part("plain")
    print(f"{'work':28} {'hidden':>10} {'not hidden':>11} {'ratio':>6}")
    for name in hidden:
        print(f"{name:28} {hidden[name]:8.2f} ms {plain[name]:8.2f} ms "
              f"{hidden[name] / plain[name]:6.2f}")
    for _ in range(3):
        launches = part("launches")
        print("256 x 256 matmul twice: " + ", ".join(f"{k} {v:.2f} ms"
                                                     for k, v in launches.items()))


if __name__ == "__main__":
    main()
