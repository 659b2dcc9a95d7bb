"""A threaded kernel's hand-off to the cores: Python's thread pool against the C workers.

One of SmolLM2's 4-bit matmuls (x (1, 576) times gate and up stacked, 3072 x 576 Q4_1, held
as gguf.split_blocks holds it: 1.3 MB of weights), 30 of them with their own weights in turn
(40 MB: each read from memory, as in a decode step), replayed by TinyJit, timed per matmul, in
five ways, each in a process of its own:

  one core            TINYFW_CORES=1: the kernel is not threaded; launched one by one
  pool                two cores, launched one by one (JIT_GRAPH=0), CPU_WORKERS=0: the other
                      core's part through Python's thread pool (chapter 11's 11.threads)
  workers             two cores, launched one by one: the part through the C workers
                      (cpu_workers.c)
  one core, graph     TINYFW_CORES=1, the 30 in one CPU graph (chapter 09)
  workers, graph      two cores, one graph: tf_graph calls tf_parts_<n>

Beside each, the weights' bytes per second against numpy's copy bandwidth in the same run.

Run from the repo root:  .venv/bin/python -m bench.workers  (--rounds N)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.llm import copy_bandwidth  # noqa: E402
from bench.run import cpu_name  # noqa: E402

import numpy as np  # noqa: E402

ROWS, COLUMNS, MATRICES = 3072, 576, 30
ALONE = {"JIT_GRAPH": "0"}
WAYS = {"one core": {"TINYFW_CORES": "1", **ALONE}, "pool": {"CPU_WORKERS": "0", **ALONE},
        "workers": ALONE, "one core, graph": {"TINYFW_CORES": "1"}, "workers, graph": {}}


def weight_bytes() -> int:
    """Bytes of one matrix as gguf.split_blocks holds it: a nibble per weight, a float32 d and
    m per block of 32."""
    return ROWS * COLUMNS // 2 + ROWS * COLUMNS // 32 * 8


def time_one(rounds: int) -> float:
    """Median seconds per matmul of a replay, the matrices taken in turn (the way is this
    process's environment)."""
    from tinyfw import Tensor
    from tinyfw.jit.jit import TinyJit
    from tinyfw.models.gguf import GGMLType, split_blocks, split_linear
    rng = np.random.default_rng(0)
    weights = []
    for _ in range(MATRICES):  # Q4_1 blocks: float16 d and m, then 16 bytes of nibbles
        blocks = rng.integers(0, 256, (ROWS, COLUMNS // 32, 20), dtype=np.uint8)
        scales = (rng.standard_normal((ROWS, COLUMNS // 32, 2)) * 0.01).astype(np.float16)
        blocks[..., :4] = scales.view(np.uint8)
        weights.append(tuple(Tensor(a).realize() for a in split_blocks(blocks, GGMLType.Q4_1)))
    x = Tensor(rng.standard_normal((1, COLUMNS)).astype(np.float32)).realize()

    step = TinyJit(lambda x: [split_linear(x, n, s, GGMLType.Q4_1).realize() for n, s in weights])
    times = []
    for _ in range(rounds + 3):  # (the first two run and capture)
        start = time.perf_counter()
        step(x)
        times.append(time.perf_counter() - start)
    return float(np.median(times[3:])) / MATRICES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps({"seconds": time_one(args.rounds)}))
        return 0
    bandwidth = copy_bandwidth()
    print(f"{time.strftime('%Y-%m-%d')}, {cpu_name()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; copy bandwidth {bandwidth / 1e9:.1f} GB/s")
    print(f"a {ROWS} x {COLUMNS} Q4_1 matmul, {weight_bytes() / 1e6:.2f} MB of weights")
    print(f"{'way':<20}{'us each':>10}{'GB/s':>8}{'of copy':>9}")
    for way, env in WAYS.items():
        result = subprocess.run([sys.executable, "-m", "bench.workers", "--one", way,
                                 "--rounds", str(args.rounds)], env={**os.environ, **env},
                                capture_output=True, text=True, check=True)
        seconds = json.loads(result.stdout.splitlines()[-1])["seconds"]
        rate = weight_bytes() / seconds
        print(f"{way:<20}{seconds * 1e6:>10.1f}{rate / 1e9:>8.2f}{rate / bandwidth:>9.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
