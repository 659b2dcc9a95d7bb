"""BEAM search against tinygrad's: the 1024x1024 float32 matmul on each framework's CPU device,
with its hand-coded optimizations and with BEAM=2, each run in a fresh process with an empty
cache (so the search happens and is timed), then BEAM=2 once more on the kept cache.

Run from the repo root:  .venv/bin/python -m bench.beam  [--n 1024] [--rounds 7] [--beam 2]
Columns: the search's time (the first call, compiling and searching included) and the matmul's
warm GFLOP/s (median of rounds). tinygrad's column needs `pip install -e '.[bench]'`.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.run import cpu_name, per_run  # noqa: E402  (drops OpenBLAS's variables first)

import numpy as np  # noqa: E402


def child(framework: str, n: int, rounds: int) -> dict[str, float]:
    """In this process (BEAM and the caches set by the parent): seconds of the first matmul
    and the warm seconds per matmul."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    if framework == "tinyfw":
        from tinyfw import Tensor
        ta, tb = Tensor(a).realize(), Tensor(b).realize()

        def run() -> None:
            (ta @ tb).realize()
    else:
        from tinygrad import Device
        from tinygrad import Tensor as TgTensor
        ga, gb = TgTensor(a, device="CPU").realize(), TgTensor(b, device="CPU").realize()

        def run() -> None:
            (ga @ gb).realize()
            Device["CPU"].synchronize()
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    return {"first_s": first, "warm_s": per_run(run, rounds)}


def measure(framework: str, beam: int, cache: Path, n: int, rounds: int) -> dict[str, float]:
    """One child process's figures, with BEAM=beam and its caches in the folder cache."""
    env = dict(os.environ, BEAM=str(beam), TINYFW_CACHE=str(cache / "tinyfw"),
               CACHEDB=str(cache / "tinygrad.db"))
    done = subprocess.run([sys.executable, "-m", "bench.beam", "--child", framework,
                           "--n", str(n), "--rounds", str(rounds)], env=env,
                          capture_output=True, text=True, check=False,
                          cwd=Path(__file__).resolve().parents[1])
    if done.returncode != 0:
        raise RuntimeError(f"{framework} BEAM={beam} failed:\n{done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1024, help="the matmul's size")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per cell")
    parser.add_argument("--beam", type=int, default=2, help="the beam's width")
    parser.add_argument("--child", choices=["tinyfw", "tinygrad"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n, args.rounds)))
        return 0
    flops = 2 * args.n ** 3
    print(f"matmul {args.n}x{args.n} f32, CPU device; cpu: {cpu_name()}, {os.cpu_count()} cores")
    print(f"{'run':<34} {'first call (s)':>15} {'warm GFLOP/s':>13}")
    for framework in ("tinyfw", "tinygrad"):
        with tempfile.TemporaryDirectory(prefix="bench-beam-") as scratch:
            runs = [("hand-coded", 0), (f"BEAM={args.beam}, empty cache", args.beam),
                    (f"BEAM={args.beam}, cache kept", args.beam)]
            for name, beam in runs:
                try:
                    got = measure(framework, beam, Path(scratch), args.n, args.rounds)
                except RuntimeError as error:
                    print(f"{framework} {name}: {error}")
                    break
                print(f"{framework + ' ' + name:<34} {got['first_s']:>15.2f} "
                      f"{flops / got['warm_s'] / 1e9:>13.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
