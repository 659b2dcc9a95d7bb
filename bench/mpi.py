"""All-reduce across processes (tinyfw/distributed.py, MPI) against numpy's copy bandwidth, and
examples/mnist.py's MLP step on 1 and 2 processes.

    .venv/bin/python -m bench.mpi   # --sizes 10,12,...,22 (log2 of float32 elements) --rounds 9

1. `mpiexec -n 2` runs this file with --worker: for each size, every rank all-reduces (sum) a
   float32 vector of that many elements, as numpy (ProcessGroup.all_reduce_array: MPI alone)
   and as a realized CPU Tensor (ProcessGroup.all_reduce: device -> numpy -> MPI -> back, the
   way gradients go). ms is the median over rounds (a barrier before each); GB/s is the vector's
   bytes over that time, against np.copyto of the same vector in the same process.
2. examples/mnist.py --model mlp --epochs 1 --steps STEPS: one process without MPI, then
   `mpiexec -n 1` and `-n 2` with --distributed; the ms/step each prints (the whole batch of 128
   per step, split over the processes; the first, compiling steps included).
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if not __package__:  # run as a file (mpiexec does): make the repo root importable
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from tinyfw import Tensor  # noqa: E402
from tinyfw.distributed import init, mpiexec  # noqa: E402


def median_s(fn: Callable[[], object], rounds: int, barrier: Callable[[], None]) -> float:
    """The median seconds of fn() over rounds (after a warm-up), barrier() before each."""
    times = []
    for _ in range(rounds + 1):  # the first: warm-up, not timed
        barrier()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def worker(sizes: list[int], rounds: int) -> None:
    pg = init()
    if pg.rank == 0:
        print(f"processes {pg.world_size}; float32 sum; median of {rounds} rounds")
        print(f"{'elements':>9} {'MB':>6} {'numpy ms':>9} {'GB/s':>6} {'Tensor ms':>10} "
              f"{'GB/s':>6} {'np.copyto GB/s':>15}")
    for log2 in sizes:
        n = 1 << log2
        x = np.random.default_rng(pg.rank).standard_normal(n).astype(np.float32)
        t = Tensor(x).realize()
        dst = np.empty_like(x)
        mb = x.nbytes / 1e6
        raw = median_s(lambda x=x: pg.all_reduce_array(x, "sum"), rounds, pg.barrier)
        ten = median_s(lambda t=t: pg.all_reduce(t, "sum"), rounds, pg.barrier)
        cp = median_s(lambda d=dst, x=x: np.copyto(d, x), rounds, lambda: None)
        if pg.rank == 0:
            print(f"{n:>9} {mb:>6.2f} {raw * 1e3:>9.3f} {mb / 1e3 / raw:>6.2f} "
                  f"{ten * 1e3:>10.3f} {mb / 1e3 / ten:>6.2f} {mb / 1e3 / cp:>15.2f}",
                  flush=True)


def mnist_ms(launcher: list[str] | None, steps: int) -> str:
    cmd = [sys.executable, str(ROOT / "examples" / "mnist.py"), "--epochs", "1", "--steps",
           str(steps)]
    cmd = cmd if launcher is None else [*launcher, *cmd, "--distributed"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=True)
    found = re.search(r"training ([\d.]+) s \((\d+) ms/step\)", out.stdout)
    assert found, out.stdout + out.stderr
    return f"{found.group(2)} ms/step (training {found.group(1)} s)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,12,14,16,18,20,22")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--worker", action="store_true", help="(run by mpiexec)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker:
        worker(sizes, args.rounds)
        return
    two = mpiexec(2)
    if two is None:
        sys.exit("bench.mpi needs MPICH's mpiexec: pip install -c constraints.txt '.[mpi]'")
    cmd = [*two, sys.executable, str(Path(__file__).resolve()), "--worker", "--sizes",
           args.sizes, "--rounds", str(args.rounds)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(cmd, env=env, check=True, timeout=600)
    print(f"\nexamples/mnist.py --model mlp --epochs 1 --steps {args.steps} (batch 128):")
    print(f"  1 process, no MPI:        {mnist_ms(None, args.steps)}")
    print(f"  mpiexec -n 1 --distributed: {mnist_ms(mpiexec(1), args.steps)}")
    print(f"  mpiexec -n 2 --distributed: {mnist_ms(two, args.steps)}")


if __name__ == "__main__":
    main()
