"""The fixed costs outside the kernels: one small op realized eagerly, and `import`, in one run.

- eager: `(x + 1).realize()` on 16 float32 (tinyfw: build the graph, find its schedule in the
  schedule cache, find the compiled kernel, launch it) against torch's and numpy's `x + 1` and
  tinygrad's `(x + 1).realize()` (its CPU device), microseconds per call, median of rounds;
- import: a fresh `python -c "import X"` process for tinyfw, numpy, torch and tinygrad, the
  median wall time of several (the interpreter's own start included, as a user waits for it),
  after one untimed import that writes the bytecode: every package is timed loading its .pyc
  files, as on a user's second run. (With PYTHONDONTWRITEBYTECODE=1, set on this project's
  machines, the editable tinyfw was compiled from source at every import, 84 of its 190 ms,
  while pip had compiled the others at install: the bytecode goes to a temporary
  PYTHONPYCACHEPREFIX here, for every package alike.)

tinygrad 0.14 comes with `pip install -e '.[bench]'` and needs clang (`apt-get install clang`)
for its CPU device; without them its rows are left out.

Run from the repo root:  .venv/bin/python -m bench.eager  (--rounds N)
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.run import cpu_name, load_tinygrad, per_run  # noqa: E402, I001

import numpy as np  # noqa: E402


def import_ms(module: str, runs: int, pycache: str) -> float:
    """Median wall time of a fresh interpreter importing module, in milliseconds, its bytecode
    written to pycache by a first, untimed import."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(Path(__file__).parents[1]), PYTHONPYCACHEPREFIX=pycache)
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:]) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    print(f"cpu: {cpu_name()}, {os.cpu_count()} cores, load average "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    from tinyfw import Tensor
    x = Tensor(np.arange(16, dtype=np.float32)).realize()
    rows: dict[str, Callable[[], Any]] = {
        "tinyfw (x + 1).realize(), CPU": lambda: (x + 1).realize()}
    a = np.arange(16, dtype=np.float32)
    rows["numpy x + 1"] = lambda: a + 1
    modules = ["tinyfw", "numpy"]
    try:
        import torch
        torch.set_num_threads(1)
        tx = torch.arange(16, dtype=torch.float32)
        rows["torch x + 1"] = lambda: tx + 1
        modules.append("torch")
    except ImportError:
        print("(torch is not installed: no torch row)")
    tg, tg_line = load_tinygrad()
    print(tg_line)
    if tg is not None:
        from tinygrad import Device as TgDevice
        gx = tg(a, device="CPU").realize()

        def tinygrad_add() -> None:
            (gx + 1).realize()
            TgDevice["CPU"].synchronize()
        rows["tinygrad (x + 1).realize(), CPU"] = tinygrad_add
        modules.append("tinygrad")
    print(f"\none small op on 16 float32, us per call (median of {args.rounds} rounds)")
    times = {name: per_run(run, args.rounds, warmup=50, min_round_s=0.05) * 1e6
             for name, run in rows.items()}
    ours = times["tinyfw (x + 1).realize(), CPU"]
    for name, us in times.items():
        print(f"{name:34s} {us:9.1f} us   tinyfw / this: {ours / us:7.2f}x")
    print(f"\nimport in a fresh process, bytecode cached, ms (median of {args.rounds})")
    with tempfile.TemporaryDirectory() as pycache:
        for module in modules:
            print(f"import {module:10s} {import_ms(module, args.rounds, pycache):8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
