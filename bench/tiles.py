"""The CPU matmul's tile and its buffers' alignment: the square float32 matmul timed with the
tile the heuristics choose, with other tiles given by hand, and with numpy's own allocation
(its large arrays start 16 bytes past a cache line) instead of tinyfw's 64-byte aligned one.

Each case runs in a fresh process with its own kernel cache (a process keeps the first program
it builds for a kernel, whatever the opts). GFLOP/s of the median of rounds, after warmup.

Run from the repo root:  .venv/bin/python -m bench.tiles  [--n 1024 512] [--rounds 7]
[--tiles NAME ...]; with CPU_MARCH=x86-64-v3, an AVX-512 machine builds the kernels for AVX2.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.run import cpu_name  # noqa: E402  (drops OpenBLAS's variables first)

import numpy as np  # noqa: E402

# name -> (rows, columns, reduce unroll, panel length) of a hand-given tile: its columns are
# SIMD vectors of the processor's float32 lanes (CPU_MARCH's, if set) side by side; a panel
# length 0: no panels. None: the heuristics.
TILES: dict[str, tuple[int, int, int, int] | None] = {
    "heuristics": None, "4 x 32": (4, 32, 1, 0), "8 x 32": (8, 32, 1, 0),
    "16 x 16": (16, 16, 1, 0), "8 x 32, unroll 4": (8, 32, 4, 0),
    "16 x 16, unroll 4": (16, 16, 4, 0), "8 x 16, panels of 128": (8, 16, 1, 128),
    "16 x 16, panels of 64": (16, 16, 1, 64), "16 x 16, panels of 128": (16, 16, 1, 128),
    "16 x 16, panels of 256": (16, 16, 1, 256),
    "16 x 16, unroll 4, panels of 128": (16, 16, 4, 128),
    # for 8 lanes (AVX2: 16 registers of 8)
    "8 x 8, panels of 128": (8, 8, 1, 128), "4 x 16, panels of 128": (4, 16, 1, 128),
    "4 x 32, panels of 128": (4, 32, 1, 128), "8 x 16, panels of 64": (8, 16, 1, 64),
    "8 x 16, panels of 256": (8, 16, 1, 256), "8 x 32, panels of 128": (8, 32, 1, 128),
    "4 x 16": (4, 16, 1, 0), "8 x 16": (8, 16, 1, 0), "4 x 16, panels of 64": (4, 16, 1, 64),
    "4 x 16, panels of 256": (4, 16, 1, 256)}


def child(tile: str, n: int, rounds: int, numpy_alloc: bool) -> float:
    """In this process: the matmul's warm GFLOP/s with the tile (and allocator) asked for."""
    import tinyfw.engine.program as program
    from tinyfw import Tensor
    from tinyfw.codegen.opt import Opt, OptOps
    from tinyfw.runtime import ops_numpy
    if numpy_alloc:
        ops_numpy.NumpyAllocator.alloc = lambda self, size, dtype: np.zeros(size, dtype.np)
    shape = TILES[tile]
    if shape is not None:
        from tinyfw.renderer.cstyle import ThreadedC
        rows, columns, unroll, panel = shape
        lanes = min(ThreadedC.vector_lanes, columns)
        vectors = columns // lanes
        opts = [Opt(OptOps.UPCAST, 2, lanes), Opt(OptOps.UPCAST, 0, rows)]
        opts += [Opt(OptOps.UPCAST, 3, vectors)] if vectors > 1 else []
        opts += [Opt(OptOps.PANEL, 2, panel)] if panel else []  # (the reduce: axis 3 then)
        opts += [Opt(OptOps.UNROLL, 3 if panel else 2, unroll)] if unroll > 1 else []
        opts += [Opt(OptOps.THREAD, 0, n // rows)]
        program.hand_coded_optimizations = lambda *args, **kwargs: tuple(opts)
    rng = np.random.default_rng(0)
    a, b = (Tensor(rng.random((n, n), dtype=np.float32)).realize() for _ in range(2))
    for _ in range(2):
        (a @ b).realize()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        (a @ b).realize()
        times.append(time.perf_counter() - start)
    return 2 * n ** 3 / sorted(times)[len(times) // 2] / 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1024, 512])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tiles", nargs="+", choices=list(TILES), default=list(TILES),
                        metavar="TILE", help="the tiles to time (default: all), e.g. heuristics")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)  # tile, n, numpy_alloc
    args = parser.parse_args(argv)
    if args.child:
        tile, n, numpy_alloc = args.child
        print(child(tile, int(n), args.rounds, numpy_alloc == "1"))
        return 0
    print(f"cpu: {cpu_name()}, {os.cpu_count()} cores, load average "
          + " ".join(f"{v:.2f}" for v in os.getloadavg())
          + f", CPU_MARCH={os.environ.get('CPU_MARCH', 'native')}")
    cases = [(tile, "0") for tile in args.tiles]
    cases += [("heuristics", "1")] if "heuristics" in args.tiles else []
    for n in args.n:
        for tile, numpy_alloc in cases:
            with tempfile.TemporaryDirectory() as cache:
                root = str(Path(__file__).parents[1])
                env = dict(os.environ, TINYFW_CACHE=cache, PYTHONPATH=root)
                out = subprocess.run([sys.executable, "-m", "bench.tiles", "--rounds",
                                      str(args.rounds), "--child", tile, str(n), numpy_alloc],
                                     env=env, capture_output=True, text=True, check=False)
            label = tile + (", numpy's allocation" if numpy_alloc == "1" else "")
            result = f"{float(out.stdout):6.1f} GFLOP/s" if out.returncode == 0 else \
                "failed: " + out.stderr.strip().splitlines()[-1]
            print(f"{n} x {n}  {label:38s} {result}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
