"""tinyfw's CPU device against numpy and tinygrad 0.14.0: five workloads, side by side.

Run from the repo root:  .venv/bin/python -m bench.run  (or .venv/bin/python bench/run.py)
Options: --rounds N (timed rounds per cell, default 7), --quick (3 rounds, for a smoke test).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# OpenBLAS reads these when numpy loads it. Some of this project's machines set them for old
# OpenBLAS builds; they slow a current numpy, so the benchmark drops both (together) before numpy
# is imported. Tests and CI keep them.
DROPPED_ENV = [k for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
               if os.environ.pop(k, None) is not None]
# With CPU_MARCH=x86-64-v3 tinyfw builds its kernels for AVX2 and FMA only (on a machine with
# AVX-512, to see them as an AVX2 processor runs them); numpy's OpenBLAS is then held to its
# Haswell kernels, the same instructions, so that the ratio is the one such a processor gives.
if os.environ.get("CPU_MARCH") == "x86-64-v3":
    os.environ["OPENBLAS_CORETYPE"] = "Haswell"

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

Thunk = Callable[[], Any]


@dataclass
class Workload:
    """One row: what is computed, how much work it is, and one function per framework."""
    name: str
    what: str
    flops: float                  # floating-point operations per run (0: not meaningful)
    nbytes: float                 # bytes read and written per run (0: not meaningful)
    numpy: Thunk
    tinyfw: Thunk
    tinygrad: Thunk | None
    check: Callable[[], list[tuple[str, np.ndarray, np.ndarray]]]


def blas_info() -> str:
    """Which BLAS numpy runs, and its kernel (threadpoolctl), else numpy's build config."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        import io
        from contextlib import redirect_stdout
        buf = io.StringIO()
        with redirect_stdout(buf):
            np.show_config()
        return "numpy.show_config() (threadpoolctl not installed):\n" + buf.getvalue()
    rows = [f"{i.get('internal_api')} {i.get('version')} kernel={i.get('architecture')} "
            f"threads={i.get('num_threads')}" for i in threadpool_info()
            if i.get("user_api") == "blas"]
    return "; ".join(rows) or "no BLAS library loaded"


def cpu_name() -> str:
    """The processor's model name (Linux), else the architecture."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def per_run(fn: Thunk, rounds: int, warmup: int = 2, min_round_s: float = 0.1) -> float:
    """Median seconds per call over rounds, each round long enough to time (warm caches)."""
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    number = max(1, int(min_round_s / once))
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def copy_16mib() -> float:
    """Seconds numpy takes to copy 16 MiB (read and write), the best of 20: a kernel that
    reads 16 MiB once can hardly beat it."""
    source = np.ones(4 << 20, np.float32)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return best


def load_tinygrad() -> tuple[Any, str]:
    """tinygrad's Tensor and a line saying what runs, or (None, why not)."""
    try:
        import tinygrad
        from tinygrad import Device
        from tinygrad import Tensor as TgTensor
    except ImportError:
        return None, "tinygrad not installed (pip install -e '.[bench]'): its column is skipped"
    try:
        probe = (TgTensor([1.0, 2.0], device="CPU") * 2).sum().item()
        assert probe == 6.0
    except Exception as e:  # noqa: BLE001 - e.g. no clang, which tinygrad's CPU device runs
        return None, f"tinygrad's CPU device failed ({type(e).__name__}: {e}); column skipped"
    from importlib.metadata import version

    from tinygrad.helpers import NUM_CPU_THREADS
    renderer = type(Device["CPU"].renderer).__name__
    return TgTensor, (f"tinygrad {version('tinygrad')} ({Path(tinygrad.__file__).parent}): "
                      f"device CPU, renderer {renderer}, threads {NUM_CPU_THREADS.value}")


def workloads(tg: Any) -> list[Workload]:
    """The rows, with their inputs made once (realized on each framework's CPU)."""
    from tinyfw import Tensor
    rng = np.random.default_rng(0)
    out: list[Workload] = []

    def tg_run(build: Callable[[], Any]) -> Thunk:
        from tinygrad import Device

        def run() -> None:
            build().realize()
            Device["CPU"].synchronize()
        return run

    # (a) a fused elementwise chain ending in a sum
    n = 1 << 22
    x_np = rng.standard_normal(n).astype(np.float32)
    x_tf = Tensor(x_np).realize()
    x_tg = tg(x_np, device="CPU").realize() if tg else None
    chain = lambda x: ((x * 2 + 1).relu() * x).sum()  # noqa: E731
    out.append(Workload(
        "fused chain", "((x*2+1).relu()*x).sum(), 4M f32", 5.0 * n, 4.0 * n,
        lambda: (np.maximum(x_np * 2 + 1, 0) * x_np).sum(),
        lambda: chain(x_tf).realize(),
        tg_run(lambda: chain(x_tg)) if tg else None,
        lambda: [("tinyfw", chain(x_tf).numpy(), np.float64((np.maximum(
            x_np.astype(np.float64) * 2 + 1, 0) * x_np).sum()))]))

    # (b) a reduction over rows
    m_np = rng.standard_normal((2048, 2048)).astype(np.float32)
    m_tf = Tensor(m_np).realize()
    m_tg = tg(m_np, device="CPU").realize() if tg else None
    out.append(Workload(
        "row sum", "x.sum(axis=1), 2048x2048 f32", 2048.0 * 2048, 4.0 * 2048 * 2049,
        lambda: m_np.sum(axis=1),
        lambda: m_tf.sum(1).realize(),
        tg_run(lambda: m_tg.sum(1)) if tg else None,
        lambda: [("tinyfw", m_tf.sum(1).numpy(), m_np.astype(np.float64).sum(axis=1))]))

    # (c) a matmul
    a_np = rng.standard_normal((512, 512)).astype(np.float32)
    b_np = rng.standard_normal((512, 512)).astype(np.float32)
    a_tf, b_tf = Tensor(a_np).realize(), Tensor(b_np).realize()
    a_tg = tg(a_np, device="CPU").realize() if tg else None
    b_tg = tg(b_np, device="CPU").realize() if tg else None
    out.append(Workload(
        "matmul", "a @ b, 512x512 f32", 2.0 * 512 ** 3, 4.0 * 3 * 512 * 512,
        lambda: a_np @ b_np,
        lambda: (a_tf @ b_tf).realize(),
        tg_run(lambda: a_tg @ b_tg) if tg else None,
        lambda: [("tinyfw", (a_tf @ b_tf).numpy(), a_np.astype(np.float64) @ b_np)]))

    # (c') a matmul of 1024: out of the caches, where the loop order and tiles matter
    c_np = rng.standard_normal((1024, 1024)).astype(np.float32)
    d_np = rng.standard_normal((1024, 1024)).astype(np.float32)
    c_tf, d_tf = Tensor(c_np).realize(), Tensor(d_np).realize()
    c_tg = tg(c_np, device="CPU").realize() if tg else None
    d_tg = tg(d_np, device="CPU").realize() if tg else None
    out.append(Workload(
        "matmul 1024", "a @ b, 1024x1024 f32", 2.0 * 1024 ** 3, 4.0 * 3 * 1024 * 1024,
        lambda: c_np @ d_np,
        lambda: (c_tf @ d_tf).realize(),
        tg_run(lambda: c_tg @ d_tg) if tg else None,
        lambda: [("tinyfw", (c_tf @ d_tf).numpy(), c_np.astype(np.float64) @ d_np)]))

    # (d) Python overhead: build, schedule and run a tiny graph (its kernel is cached)
    s_np = [rng.standard_normal(16).astype(np.float32) for _ in range(3)]
    s_tf = [Tensor(v).realize() for v in s_np]
    s_tg = [tg(v, device="CPU").realize() for v in s_np] if tg else None
    out.append(Workload(
        "overhead", "(a+b)*c, 16 f32, realized each time", 0.0, 0.0,
        lambda: (s_np[0] + s_np[1]) * s_np[2],
        lambda: ((s_tf[0] + s_tf[1]) * s_tf[2]).realize(),
        tg_run(lambda: (s_tg[0] + s_tg[1]) * s_tg[2]) if tg else None,
        lambda: [("tinyfw", ((s_tf[0] + s_tf[1]) * s_tf[2]).numpy(),
                  (s_np[0] + s_np[1]) * s_np[2])]))
    return out


def fmt_time(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t * 1e6:.1f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def fmt_rate(w: Workload, t: float | None) -> str:
    """GFLOP/s for compute-bound rows, GB/s for memory-bound ones."""
    if t is None or (not w.flops and not w.nbytes):
        return "-"
    if w.name.startswith("matmul"):
        return f"{w.flops / t / 1e9:.1f} GFLOP/s"
    return f"{w.nbytes / t / 1e9:.2f} GB/s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per cell")
    parser.add_argument("--quick", action="store_true", help="3 rounds: a smoke test")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds

    tg, tg_line = load_tinygrad()
    print(f"date: {datetime.date.today()}  cpu: {cpu_name()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}")
    print(f"numpy {np.__version__}: {blas_info()}")
    print("OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE: " +
          (f"unset here ({', '.join(DROPPED_ENV)} were set)" if DROPPED_ENV else "not set") +
          (", OPENBLAS_CORETYPE=Haswell for CPU_MARCH=x86-64-v3"
           if os.environ.get("OPENBLAS_CORETYPE") else ""))
    print(tg_line)
    from tinyfw.engine.settings import optimizing
    from tinyfw.runtime.ops_cpu import cores
    print(f"tinyfw: device CPU (C compiled by the system cc, -march="
          f"{os.environ.get('CPU_MARCH') or 'native'}), kernel optimizations "
          f"{'on' if optimizing() else 'off (NOOPT=1)'}, {cores()} cores; copying 16 MiB takes "
          f"{copy_16mib() * 1e3:.2f} ms here (numpy's copyto: the fused chain's floor); medians "
          f"of {rounds} rounds after warmup\n")

    rows, errors = [], []
    for w in workloads(tg):
        for who, got, want in w.check():  # a float32 sum of 4M values drifts: 1% is allowed
            err = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
            assert err < 1e-2, f"{w.name}: {who} is off by {err:.2e} (relative)"
            errors.append(f"{w.name} {err:.1e}")
        t_np = per_run(w.numpy, rounds)
        t_tf = per_run(w.tinyfw, rounds)
        t_tg = per_run(w.tinygrad, rounds) if w.tinygrad else None
        rows.append((w, t_np, t_tf, t_tg))

    head = ("work", "numpy", "tinyfw", "tinygrad", "tinyfw/numpy", "tinyfw/tinygrad",
            "rate: numpy | tinyfw | tinygrad")
    widths = (max(len(f"{w.name}: {w.what}") for w, *_ in rows), 9, 9, 9, 12, 15, 0)
    print("  ".join(h.ljust(wd) for h, wd in zip(head, widths)))
    for w, t_np, t_tf, t_tg in rows:
        ratio_np = f"{t_tf / t_np:.1f}x"
        ratio_tg = f"{t_tf / t_tg:.1f}x" if t_tg else "-"
        rates = " | ".join(fmt_rate(w, t) for t in (t_np, t_tf, t_tg))
        cells = (f"{w.name}: {w.what}", fmt_time(t_np), fmt_time(t_tf), fmt_time(t_tg),
                 ratio_np, ratio_tg, rates)
        print("  ".join(c.ljust(wd) for c, wd in zip(cells, widths)))
    print("\nratios: tinyfw's time over the other's (2.0x = tinyfw takes twice as long)")
    print("tinyfw's largest error relative to float64 numpy: " + ", ".join(errors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
