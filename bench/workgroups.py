"""Reductions on the GPU devices with and without the GROUP rule (chapter 11's work-groups).

Times four reductions on each GPU device here (CL on PoCL, WEBGPU on lavapipe, both run on the
CPU's cores), with the heuristics as they are and with `group_the_reduce` switched off (each in
a process of its own, one after the other), and prints the best of several runs of each, the
time to read the result back included.

Run from the repo root:  .venv/bin/python -m bench.workgroups  (--devices CL WEBGPU, --rounds N)
"""
from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

SHAPES = {"sum of 4M": ((4 << 20,), None), "row sums 64 x 65536": ((64, 65536), 1),
          "row sums 2048 x 2048": ((2048, 2048), 1), "row sums 16 x 4096": ((16, 4096), 1)}


def best_ms(run: Callable[[], Any], rounds: int) -> float:
    """The best time of `rounds` runs, in ms, after one to build the kernels."""
    run()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def reduced(x: Any, axis: int | None) -> Any:
    """x summed along axis, read back."""
    return x.sum(axis=axis).numpy()


def measure(device: str, rounds: int, group: bool) -> dict[str, float]:
    """Each reduction's best time on the device (group: with the GROUP rule)."""
    from tinyfw import Tensor
    from tinyfw.codegen import heuristic
    if not group:
        heuristic.FEW_OUTPUTS = 0  # (no reduce has so few outputs: the rule never applies)
    rng = np.random.default_rng(0)
    out = {}
    for name, (shape, axis) in SHAPES.items():
        x = Tensor(rng.random(shape, dtype=np.float32), device=device).realize()
        out[name] = best_ms(functools.partial(reduced, x, axis), rounds)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", default=["CL", "WEBGPU"])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--one", nargs=2, metavar=("DEVICE", "GROUP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # a child: one device, with or without the rule; prints its times as JSON
        print(json.dumps(measure(args.one[0], args.rounds, args.one[1] == "1")))
        return
    from tinyfw.probe import probe
    print(f"{'device':8s} {'reduction':24s} {'GROUP rule':>11s} {'without':>9s}")
    for device in args.devices:
        if not (found := probe(device))[0]:
            print(f"{device}: not here ({found[1]})")
            continue
        times = [json.loads(subprocess.run(
            [sys.executable, "-m", "bench.workgroups", "--rounds", str(args.rounds), "--one",
             device, group], capture_output=True, text=True, check=True).stdout.splitlines()[-1])
            for group in ("1", "0")]
        for name in SHAPES:
            print(f"{device:8s} {name:24s} {times[0][name]:8.2f} ms {times[1][name]:6.2f} ms")


if __name__ == "__main__":
    main()
