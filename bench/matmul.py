"""float32 matmuls on tinyfw's CPU device against numpy (OpenBLAS) and torch (CPU), at one thread
count, in one run (issue 42).

Run from the repo root:  .venv/bin/python -m bench.matmul  (or .venv/bin/python bench/matmul.py)
Options: --threads N (every framework's threads, default 2), --rounds N (timed rounds, default
7), --quick (3 short rounds: a smoke test), --shapes NAME ... (the rows to run, by their M x K x N
name, e.g. --shapes 1024x1024x1024 1x576x1536).

Each row is one product (M x K) @ (K x N) of standard normal float32 matrices, made once (numpy
arrays; torch's are views of them, tinyfw's realized on its CPU device). A call is what a user
writes: `a @ b` for numpy and torch, `(a @ b).realize()` for tinyfw, so tinyfw's building and
scheduling of the graph (tens to hundreds of microseconds) is in its time, which shows on the
small rows.

Threads: numpy's OpenBLAS is held to N by threadpoolctl (without threadpoolctl the benchmark
runs itself again in a child process with OPENBLAS_NUM_THREADS=N, which OpenBLAS reads when it
loads), torch by torch.set_num_threads, tinyfw by TINYFW_CORES, which its CPU device reads when
it is made (set here before tinyfw is imported). Each count is read back and the run stops if one
is not N. bench.run drops OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE first (see bench/README.md).

Before timing, each framework's product is compared with numpy's in float64 (the largest
difference over the largest entry), and tinyfw's kernels for the row are listed (threaded: run on
the N cores). Then two warm-up calls each, and rounds that take turns across the three columns, so
a change in the machine's load hits every column alike: each turn is one untimed call (to wake the
framework's threads) and a block of calls long enough to time, after a pause that lets the last
framework's idle threads stop spinning (OpenBLAS's spin for up to about 0.1 s). A cell is the
median GFLOP/s of the rounds (2 M K N flops a call); the ratios are tinyfw's GFLOP/s over the
other's (1.00x: as fast; 0.50x: half as fast). The issue's targets, set at 2 threads: tinyfw at
least numpy on the 1024 square, at least 80% of numpy on the other rows. Measure on an idle
machine: with other work on the cores, a threaded BLAS waits for its threads (the run says so
when the load average is above BUSY_LOAD as it starts).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# bench.run drops OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE before numpy loads (see bench/README.md)
from bench.run import DROPPED_ENV, blas_info, cpu_name  # noqa: E402, I001

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-4   # largest relative difference from float64 allowed (float32 sums of K terms)
SETTLE_S = 0.15    # pause before each turn: the previous framework's idle threads stop spinning
BUSY_LOAD = 0.5    # a 1-minute load average above this, before the run: the figures say so
Run = Callable[[], Any]


@dataclass(frozen=True)
class Shape:
    """One row: (m x k) @ (k x n), what it is, and tinyfw's target (its GFLOP/s over numpy's)."""
    m: int
    k: int
    n: int
    target: float
    what: str

    @property
    def name(self) -> str:
        return f"{self.m}x{self.k}x{self.n}"

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.k * self.n


SHAPES = [
    Shape(1024, 1024, 1024, 1.0, "square"),
    Shape(384, 384, 1536, 0.8, "MiniLM's feed-forward up, 384 tokens"),
    Shape(32, 576, 1536, 0.8, "SmolLM2's MLP up, 32-token prompt"),
    Shape(100, 576, 49152, 0.8, "SmolLM2's output head, 100 tokens"),
    Shape(1, 576, 1536, 0.8, "GEMV: SmolLM2's MLP up, one token"),
    Shape(1, 576, 49152, 0.8, "GEMV: SmolLM2's output head, one token"),
]


@dataclass
class Column:
    """One framework on one row: a timed call, and its product as a numpy array."""
    name: str
    run: Run
    result: Callable[[], np.ndarray]


def has_threadpoolctl() -> bool:
    return importlib.util.find_spec("threadpoolctl") is not None


def rerun_with_blas_env(threads: int, argv: list[str]) -> int:
    """This benchmark again in a child process whose OpenBLAS starts with `threads` threads."""
    print(f"threadpoolctl not installed: running again with OPENBLAS_NUM_THREADS={threads}"
          + (f" ({', '.join(DROPPED_ENV)} dropped here)" if DROPPED_ENV else ""), flush=True)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    return subprocess.run([sys.executable, "-m", "bench.matmul", *argv], env=env, cwd=ROOT,
                          check=False).returncode


def hold_numpy_threads(threads: int) -> str:
    """numpy's BLAS held to `threads` threads (for good), and a line saying so."""
    if not has_threadpoolctl():  # (rerun_with_blas_env set OPENBLAS_NUM_THREADS)
        return (f"numpy {np.__version__}: OpenBLAS with OPENBLAS_NUM_THREADS={threads} "
                      "(threadpoolctl not installed: not read back)")
    from threadpoolctl import threadpool_info, threadpool_limits
    threadpool_limits(limits=threads, user_api="blas")  # (kept until restore_original_limits)
    numpy_blas = [i for i in threadpool_info()
                  if i.get("user_api") == "blas" and "numpy" in i.get("filepath", "")]
    counts = {i.get("num_threads") for i in numpy_blas}
    if counts != {threads}:
        raise SystemExit(f"numpy's BLAS runs {counts or 'no'} threads, not {threads}")
    return f"numpy {np.__version__}: {blas_info()}"


def hold_torch_threads(threads: int) -> tuple[Any, str]:
    """torch with `threads` threads, and a line saying what runs; (None, why) without torch."""
    try:
        import torch
    except ImportError:
        return None, "torch not installed (pip install -e '.[test]'): its column is skipped"
    torch.set_num_threads(threads)
    if torch.get_num_threads() != threads:
        raise SystemExit(f"torch runs {torch.get_num_threads()} threads, not {threads}")
    config = torch.__config__.show()
    blas = next((part.split("=", 1)[1] for part in config.replace(",", " ").split()
                 if part.startswith("BLAS_INFO=")), "?")
    return torch, f"torch {torch.__version__}: BLAS {blas}, threads {torch.get_num_threads()}"


def hold_tinyfw_threads(threads: int) -> str:
    """tinyfw's CPU device made with `threads` cores (TINYFW_CORES), and a line saying so."""
    os.environ["TINYFW_CORES"] = str(threads)
    from tinyfw.device import Device
    from tinyfw.engine.settings import optimizing
    from tinyfw.runtime.ops_cpu import workers_enabled
    cores = Device["CPU"].cores
    if cores != threads:
        raise SystemExit(f"tinyfw's CPU device runs on {cores} cores, not {threads} "
                         f"(this process may run on {len(os.sched_getaffinity(0))})")
    return (f"tinyfw at {git_commit()}: device CPU (C compiled by the system cc, -march="
            f"{os.environ.get('CPU_MARCH') or 'native'}), kernel optimizations "
            f"{'on' if optimizing() else 'off (NOOPT=1)'}, {cores} core{'s' if cores > 1 else ''} "
            f"({'C workers' if workers_enabled() else 'Python threads (CPU_WORKERS=0)'})")


def git_commit() -> str:
    """The repository's commit (and + if its files differ from it), else '?'."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return head + ("+" if dirty.strip() else "")


def columns(shape: Shape, torch: Any) -> tuple[list[Column], np.ndarray]:
    """The row's columns (numpy, torch, tinyfw) on one pair of inputs, and their float64
    product."""
    from tinyfw import Tensor
    rng = np.random.default_rng(0)
    a = rng.standard_normal((shape.m, shape.k), dtype=np.float32)
    b = rng.standard_normal((shape.k, shape.n), dtype=np.float32)
    out = [Column("numpy", lambda: a @ b, lambda: a @ b)]
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        out.append(Column("torch", lambda: ta @ tb, lambda: (ta @ tb).numpy()))
    fa, fb = Tensor(a, device="CPU").realize(), Tensor(b, device="CPU").realize()
    out.append(Column("tinyfw", lambda: (fa @ fb).realize(), lambda: (fa @ fb).numpy()))
    return out, a.astype(np.float64) @ b.astype(np.float64)


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """The largest difference over the largest entry of want."""
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


@contextmanager
def tinyfw_kernels(into: list[str]) -> Iterator[None]:
    """While inside: each kernel tinyfw's CPU device runs, by name, added to `into`."""
    from tinyfw.runtime.ops_cpu import CPURuntime
    original = CPURuntime.run

    def noted(self: Any, program: Any, item: Any, out: Any, inputs: Any) -> None:
        into.append(program.name + (" (threaded)" if program.threaded else ""))
        original(self, program, item, out, inputs)
    CPURuntime.run = noted  # type: ignore[method-assign]
    try:
        yield
    finally:
        CPURuntime.run = original  # type: ignore[method-assign]


def check(shape: Shape, cols: list[Column], want: np.ndarray) -> float:
    """Each column's product against float64, printed with tinyfw's kernels; tinyfw's error."""
    errors: dict[str, float] = {}
    kernels: list[str] = []
    for col in cols:
        if col.name == "tinyfw":
            with tinyfw_kernels(kernels):
                errors[col.name] = relative_error(col.result(), want)
        else:
            errors[col.name] = relative_error(col.result(), want)
    print(f"{shape.name}: relative error against float64: "
          + ", ".join(f"{name} {err:.1e}" for name, err in errors.items())
          + f"; tinyfw's kernels: {', '.join(kernels) or 'none'}", flush=True)
    return errors["tinyfw"]


def timed_block(run: Run, calls: int) -> float:
    """Seconds per call over `calls` calls, after one untimed call that wakes the threads."""
    run()
    start = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - start) / calls


def time_columns(cols: list[Column], rounds: int, block_s: float) -> dict[str, float]:
    """Median seconds per call of each column, the rounds taking turns across the columns."""
    calls = {}
    for col in cols:
        for _ in range(2):  # warm-up (tinyfw's kernel was compiled by check)
            col.run()
        calls[col.name] = max(1, round(block_s / timed_block(col.run, 1)))
    times: dict[str, list[float]] = {col.name: [] for col in cols}
    for _ in range(rounds):
        for col in cols:
            time.sleep(SETTLE_S)
            times[col.name].append(timed_block(col.run, calls[col.name]))
    return {name: statistics.median(t) for name, t in times.items()}


def row_cells(shape: Shape, seconds: dict[str, float], error: float) -> list[str]:
    """The table's cells for one row."""
    rate = {name: shape.flops / s / 1e9 for name, s in seconds.items()}
    numpy_ratio = rate["tinyfw"] / rate["numpy"]
    torch_ratio = f"{rate['tinyfw'] / rate['torch']:.2f}x" if "torch" in rate else "-"
    meets = "WRONG" if error > TOLERANCE else ("yes" if numpy_ratio >= shape.target else "no")
    return [shape.name, f"{rate['numpy']:.1f}",
            f"{rate['torch']:.1f}" if "torch" in rate else "-", f"{rate['tinyfw']:.1f}",
            f"{seconds['tinyfw'] * 1e3:.3f}", f"{numpy_ratio:.2f}x", torch_ratio,
            f">= {shape.target:.2f}x", meets, shape.what]


def print_table(rows: list[list[str]]) -> None:
    head = ["M x K x N", "numpy", "torch", "tinyfw", "tinyfw ms", "tinyfw/numpy",
            "tinyfw/torch", "target", "meets", "what"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        cells = [c.ljust(w) if i in (0, len(head) - 1) else c.rjust(w)
                 for i, (c, w) in enumerate(zip(r, widths))]
        print("  ".join(cells).rstrip())


def print_header(threads: int, rounds: int, lines: list[str]) -> None:
    print(f"date: {datetime.date.today()}  cpu: {cpu_name()}, {os.cpu_count()} cores, python "
          f"{platform.python_version()}, load average "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    for line in lines:
        print(line)
    print("OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE: "
          + (f"dropped {DROPPED_ENV}" if DROPPED_ENV else "not set")
          + (f"; OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} for CPU_MARCH"
             if os.environ.get("OPENBLAS_CORETYPE") else ""))
    print(f"threads: {threads} for each framework; GFLOP/s, medians of {rounds} rounds\n")
    if os.getloadavg()[0] > BUSY_LOAD:
        print(f"the machine is busy (load average above {BUSY_LOAD}): a threaded BLAS then waits "
              "for its threads on cores that other work holds,\nsometimes milliseconds a call; "
              "these figures are not the machine's\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="every framework's threads")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per row")
    parser.add_argument("--quick", action="store_true", help="3 short rounds: a smoke test")
    parser.add_argument("--shapes", nargs="+", choices=[s.name for s in SHAPES],
                        metavar="MxKxN", help="the rows to run (default: all)")
    args = parser.parse_args(argv)
    if not has_threadpoolctl() and os.environ.get("OPENBLAS_NUM_THREADS") != str(args.threads):
        return rerun_with_blas_env(args.threads, argv)
    rounds, block_s = (3, 0.05) if args.quick else (args.rounds, 0.2)

    numpy_line = hold_numpy_threads(args.threads)
    torch, torch_line = hold_torch_threads(args.threads)
    print_header(args.threads, rounds, [numpy_line, torch_line, hold_tinyfw_threads(args.threads)])
    if args.threads != 2:
        print("(the issue's targets are set at 2 threads)\n")

    rows, wrong = [], False
    for shape in [s for s in SHAPES if not args.shapes or s.name in args.shapes]:
        cols, want = columns(shape, torch)
        error = check(shape, cols, want)
        wrong |= error > TOLERANCE
        rows.append(row_cells(shape, time_columns(cols, rounds, block_s), error))
    print()
    print_table(rows)
    print("\nGFLOP/s: 2 M K N flops over the median seconds per call; ratios: tinyfw's GFLOP/s "
          "over the other's;\nmeets: tinyfw/numpy reaches the target (WRONG: tinyfw's product is "
          f"off by more than {TOLERANCE:.0e})")
    print("load average at the end: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
