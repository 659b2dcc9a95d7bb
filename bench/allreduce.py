"""Naive against ring all-reduce between local devices CPU:0 .. CPU:n-1 (chapter 13), against
numpy's copy bandwidth in the same run.

Each device starts with a float32 vector of `size` elements (realized, in its own buffer); one
all-reduce (tinyfw/multi.py) leaves the sum on every device. A round builds the all-reduce's
graph on fresh nodes (so nothing is found computed), schedules it and runs it: the time is what
a training step pays for it, the graph and the schedule included. The report per case:

- ms: the median time of one all-reduce;
- copies: the COPY nodes it runs, and MB moved: the bytes they move (naive: n (n - 1) whole
  vectors; ring: 2 (n - 1) chunks of 1 / n of a vector per device, about 2 vectors each);
- GB/s: MB moved / time, against numpy's np.copyto of one vector (memory to memory, the
  ceiling of a copy on one machine). A tinyfw COPY on the CPU is two memory copies (the buffer
  read out to the host, then copied in), plus the adds.

Run from the repo root:  .venv/bin/python -m bench.allreduce  (--sizes 65536,1048576,4194304
--devices 2,3,4 --rounds 5)
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from tinyfw import Tensor  # noqa: E402
from tinyfw.engine import realize  # noqa: E402
from tinyfw.multi import all_reduce  # noqa: E402
from tinyfw.uop.ops import Ops, UOp  # noqa: E402

_fresh = itertools.count(1_000_000)


def time_all_reduce(kind: str, n: int, size: int, rounds: int) -> tuple[float, int, int]:
    """(median seconds, COPY nodes, bytes moved) of one all-reduce of `size` float32 on n."""
    devices = [f"CPU:{i}" for i in range(n)]
    rng = np.random.default_rng(0)
    values = [Tensor(rng.standard_normal(size).astype(np.float32), device=d).realize()
              for d in devices]
    times, copies, moved = [], 0, 0
    for r in range(rounds + 1):  # (the first: compiles the kernels, not timed)
        start = time.perf_counter()
        tag = next(_fresh)  # fresh nodes: a DETACH of its own number above each buffer
        parts = [UOp(Ops.DETACH, v.uop.dtype, (v.uop,), tag) for v in values]
        out = all_reduce(Ops.ADD, parts, kind)
        realize.run_schedule(realize.schedule(*out))
        elapsed = time.perf_counter() - start
        if r == 0:
            nodes = {node for o in out for node in o.toposort() if node.op is Ops.COPY}
            copies, moved = len(nodes), sum(node.numel * 4 for node in nodes)
            total = sum(v.numpy() for v in values)
            got = realize.buffer_of(realize.realize(out[-1])).numpy()
            assert np.allclose(got, total, rtol=1e-5, atol=1e-5), "a wrong all-reduce"
        else:
            times.append(elapsed)
    return statistics.median(times), copies, moved


def numpy_copy_gbs(size: int, rounds: int) -> float:
    """np.copyto of `size` float32: GB/s (bytes copied / time), the median of rounds."""
    src, dst = np.ones(size, np.float32), np.empty(size, np.float32)
    times = []
    for _ in range(max(rounds, 5) * 4):
        start = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - start)
    return size * 4 / statistics.median(times) / 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="65536,1048576,4194304")
    parser.add_argument("--devices", default="2,3,4")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    counts = [int(n) for n in args.devices.split(",")]
    print(f"{'devices':>7} {'elements':>9} {'kind':>5} {'ms':>8} {'copies':>6} {'MB moved':>9} "
          f"{'GB/s':>6} {'numpy copy GB/s':>16}")
    for size in sizes:
        numpy_gbs = numpy_copy_gbs(size, args.rounds)
        for n in counts:
            for kind in ("naive", "ring"):
                seconds, copies, moved = time_all_reduce(kind, n, size, args.rounds)
                print(f"{n:>7} {size:>9} {kind:>5} {seconds * 1e3:8.2f} {copies:>6} "
                      f"{moved / 1e6:9.1f} {moved / seconds / 1e9:6.2f} {numpy_gbs:16.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
