"""Graph execution: what a device graph buys a TinyJit replay, per device, in one run.

Two measurements, each with JIT_GRAPH=0 (the captured kernels launched one by one from Python)
and JIT_GRAPH=1 (the default: each run of kernels on one device launched as one graph,
tinyfw/runtime/graph*.py):

- launch overhead: a jitted function of many tiny kernels (a chain of reduces on 16 floats,
  next to no work each), the replay's time divided by its number of launches: microseconds per
  kernel, on every device that works here;
- the MLP training step of bench/train_step.py (784-128-10, batch 128, Adam, the loss read) in
  TinyJit on the CPU, beside torch's step in the same run.

Run from the repo root:  .venv/bin/python -m bench.graph  (--rounds N, --devices CPU,CL,...)
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.run import cpu_name, per_run  # noqa: E402, I001

import numpy as np  # noqa: E402

DEVICES = ("CPU", "CL", "WEBGPU", "CUDAEMU", "CUDA")
CHAIN = 24  # reduces in the chain: about 2 kernels each


def chain_jit(device: str, graph: bool) -> tuple[Callable[[], Any], int]:
    """A replay of the tiny-kernel chain (made with graphs on or off) and its launches."""
    from tinyfw import Tensor
    from tinyfw.device import Device
    from tinyfw.jit.jit import TinyJit
    os.environ["JIT_GRAPH"] = "1" if graph else "0"

    def chain(x: Tensor) -> Tensor:
        for _ in range(CHAIN):
            x = x - x.max() * 0.5
        return x

    jit = TinyJit(chain)
    x = Tensor(np.arange(16, dtype=np.float32), device=device).realize()
    jit(x), jit(x)  # run, capture: the graph is built now

    def replay() -> None:
        jit(x)
        Device[device].synchronize()
    return replay, len(jit.jit_cache)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--devices", default=",".join(DEVICES))
    args = parser.parse_args(argv)
    from tinyfw.probe import probe
    print(f"cpu: {cpu_name()}, {os.cpu_count()} cores, load average "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))

    print(f"\nlaunch overhead: a replay of {CHAIN} reduces on 16 floats, us per launch "
          f"(median of {args.rounds})")
    print(f"{'device':8s} {'launches':>8s} {'one by one':>11s} {'graph':>8s} {'ratio':>6s}")
    for device in args.devices.split(","):
        ok, why = probe(device)
        if not ok:
            print(f"{device:8s} not here: {why}")
            continue
        per = {}
        for graph in (False, True):
            replay, launches = chain_jit(device, graph)
            per[graph] = per_run(replay, args.rounds, warmup=5, min_round_s=0.05) / \
                launches * 1e6
        print(f"{device:8s} {launches:8d} {per[False]:10.1f}  {per[True]:7.1f}  "
              f"{per[False] / per[True]:5.1f}x")

    from bench.train_step import make_data, torch_step, tinyfw_step
    weights, xs, ys = make_data()
    steps: dict[str, Callable[[int], float]] = {}
    for graph in (False, True):
        os.environ["JIT_GRAPH"] = "1" if graph else "0"
        step = tinyfw_step(weights, xs, ys, jit=True)
        for i in range(3):
            step(i)  # run, capture (with or without graphs), one replay
        steps[f"tinyfw TinyJit, JIT_GRAPH={int(graph)}"] = step
    try:
        import torch
        torch.set_num_threads(1)
        steps["torch (1 thread)"] = torch_step(weights, xs, ys)
    except ImportError:
        print("(torch is not installed: no torch row)")
    counter = dict.fromkeys(steps, 3)
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.rounds):  # the rounds take turns: the machine's load hits all alike
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(20):
                step(counter[name])
                counter[name] += 1
            times[name].append((time.perf_counter() - start) / 20)
    print(f"\nMLP 784-128-10 Adam step, batch 128, loss read (CPU; median of {args.rounds} x 20)")
    base = statistics.median(times["torch (1 thread)"]) if "torch (1 thread)" in times else None
    for name, t in times.items():
        ms = statistics.median(t) * 1e3
        ratio = f"  {ms / (base * 1e3):.2f}x torch" if base else ""
        print(f"{name:32s} {ms:8.2f} ms{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
