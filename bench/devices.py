"""tinyfw's devices side by side: the same four workloads on every device that works here.

Run from the repo root:  .venv/bin/python -m bench.devices  (or .venv/bin/python bench/devices.py)
Options: --rounds N (timed rounds per cell, default 7), --quick (3 short rounds: a smoke test),
--devices CPU,CL,... (default: every device tinyfw has), --warm-cache (keep the on-disk kernel
caches: first runs then load compiled kernels instead of compiling), --markdown (the table as
Markdown, for bench/README.md), --strict (exit 1 when a device's result is wrong or it fails).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# bench.run drops OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE before numpy loads (see bench/README.md)
from bench.run import DROPPED_ENV, cpu_name, fmt_time, per_run  # noqa: E402, I001

import numpy as np  # noqa: E402

# Devices that are not what their name says here, and what they are instead.
EMULATORS = {"CUDAEMU": "CUDA source compiled by g++ for this CPU: a correctness device"}


@dataclass
class Workload:
    """One row: inputs (numpy), what tinyfw computes from them, numpy's float64 answer."""
    name: str
    what: str
    inputs: list[np.ndarray]
    build: Callable[..., Any]           # tinyfw Tensors in, a lazy tinyfw Tensor out
    want: np.ndarray                    # the answer in float64
    tol: float                          # largest relative error accepted


@dataclass
class Cell:
    """One device's result on one workload."""
    median: float | None = None          # seconds per call, warm
    first: float | None = None           # seconds of the first call (compiles included)
    err: float | None = None             # largest error relative to the float64 answer
    wrong: bool = False
    error: str = ""                      # the exception, when the device failed


@dataclass
class Column:
    """One device: whether it runs here, what it is, and its cells by workload name."""
    name: str
    ok: bool
    why: str = ""
    about: str = ""
    cells: dict[str, Cell] = field(default_factory=dict)


def workloads(quick: bool) -> list[Workload]:
    """The four rows. One modest size for every device: lavapipe (WEBGPU), the CUDA emulator
    and the NUMPY interpreter must finish too. --quick halves each dimension."""
    rng = np.random.default_rng(0)
    s = 2 if quick else 1
    n, rows, mm, sm = (1 << 20) // s ** 2, 1024 // s, 256 // s, 512 // s

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    x, m, a, b, z = f32(n), f32(rows, rows), f32(mm, mm), f32(mm, mm), f32(sm, sm)
    x64, z64 = x.astype(np.float64), z.astype(np.float64)
    e = np.exp(z64 - z64.max(axis=1, keepdims=True))
    return [
        Workload("fused chain", f"((x*2+1).relu()*x).sum(), {n >> 10}K f32", [x],
                 lambda t: ((t * 2 + 1).relu() * t).sum(),
                 np.array((np.maximum(x64 * 2 + 1, 0) * x64).sum()), 1e-2),
        Workload("row sum", f"x.sum(axis=1), {rows}x{rows} f32", [m], lambda t: t.sum(1),
                 m.astype(np.float64).sum(axis=1), 1e-4),
        Workload("matmul", f"a @ b, {mm}x{mm} f32", [a, b], lambda p, q: p @ q,
                 a.astype(np.float64) @ b, 1e-4),
        Workload("softmax", f"x.softmax(axis=1), {sm}x{sm} f32", [z], lambda t: t.softmax(1),
                 e / e.sum(axis=1, keepdims=True), 1e-4),
    ]


def describe(name: str) -> str:
    """What a working device runs on here, in a few words."""
    try:
        if name == "CPU":
            from tinyfw.runtime.c_compiler import find_compiler
            return f"C compiled by {find_compiler()} (-O2 -march=native), one thread"
        if name == "NUMPY":
            return "the reference interpreter: each kernel's AST evaluated with numpy"
        if name == "CL":
            from tinyfw.runtime.ops_cl import cl_context
            dev = cl_context()[0].devices[0]
            return (f"{dev.platform.version.split(' Linux')[0].strip()} on {dev.name} "
                    f"({dev.max_compute_units} compute units)")
        if name == "WEBGPU":
            from tinyfw.runtime.ops_webgpu import wgpu_device
            info = wgpu_device().adapter.info
            kind = " - a CPU Vulkan driver" if info.get("adapter_type") == "CPU" else ""
            return f"{info.get('device')}, {info.get('description')}{kind}"
        if name == "CUDAEMU":
            return "emulator: CUDA source checked by NVRTC, then compiled by g++ for this CPU"
        if name == "CUDA":
            from tinyfw.runtime.ops_cuda import cuda_context
            cuda_context()
            return "NVIDIA GPU through the CUDA driver"
    except Exception as error:  # noqa: BLE001 - a description is never worth failing for
        return f"({type(error).__name__} describing it)"
    return ""


def synchronizer(name: str) -> Callable[[], None]:
    """A function that returns once the device has finished all work submitted so far: the
    runtime's synchronize() where tinyfw has one. CPU, NUMPY and CUDAEMU run synchronously;
    CL and CUDA wait after each launch; WEBGPU's queue.submit returns at once, so its cells
    include a wait on the queue."""
    from tinyfw.device import Device
    runtime = Device[name]
    if hasattr(runtime, "synchronize"):
        return runtime.synchronize
    if name != "WEBGPU":
        return lambda: None
    import wgpu  # a tinyfw without Runtime.synchronize: read 4 bytes back through the queue

    from tinyfw.runtime.ops_webgpu import wgpu_device
    device = wgpu_device()
    marker = device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)

    def wait() -> None:
        device.queue.read_buffer(marker, 0, 4)  # mapping it waits for all earlier submissions
    return wait


def run_cell(w: Workload, device: str, sync: Callable[[], None], rounds: int,
             min_round_s: float) -> Cell:
    """First call (timed on its own), check against numpy, then the warm median."""
    from tinyfw import Tensor
    cell = Cell()
    try:
        args = [Tensor(v, device=device).realize() for v in w.inputs]
        sync()

        def call() -> Any:
            out = w.build(*args).realize()
            sync()
            return out

        start = time.perf_counter()
        out = call()
        cell.first = time.perf_counter() - start
        got = out.numpy().astype(np.float64)
        scale = max(float(np.max(np.abs(w.want))), 1e-30)
        cell.err = float(np.max(np.abs(got - w.want))) / scale if got.shape == w.want.shape \
            else float("inf")
        cell.wrong = not cell.err < w.tol
        cell.median = per_run(call, rounds, warmup=1, min_round_s=min_round_s)
    except Exception as error:  # noqa: BLE001 - one device failing must not stop the others
        cell.error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    return cell


def fmt_ms(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t * 1e3:.0f} ms" if t >= 0.1 else fmt_time(t)


def table(cols: list[Column], works: list[Workload]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: per working device its median (and ratio to CPU) and its first run."""
    head = ["work"]
    for c in cols:
        mark = "*" if c.name in EMULATORS else ""
        head += [f"{c.name}{mark}", f"{c.name}{mark} 1st"] if c.ok else [c.name]
    cpu = next((c for c in cols if c.name == "CPU" and c.ok), None)
    rows = []
    for w in works:
        row = [f"{w.name}, {w.what.split(', ')[-1]}"]
        for c in cols:
            if not c.ok:
                row.append("not available")
                continue
            cell = c.cells[w.name]
            if cell.error:
                row += ["error", fmt_ms(cell.first)]
                continue
            base = cpu.cells[w.name].median if cpu and cpu is not c else None
            ratio = f" ({cell.median / base:.1f}x)" if base and cell.median else ""
            flag = " WRONG" if cell.wrong else ""
            row += [f"{fmt_ms(cell.median)}{ratio}{flag}", fmt_ms(cell.first)]
        rows.append(row)
    return head, rows


def print_table(head: list[str], rows: list[list[str]], markdown: bool) -> None:
    if markdown:
        head = [h.replace("*", "\\*") for h in head]
        print("| " + " | ".join(head) + " |")
        print("| " + " | ".join("---" for _ in head) + " |")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows]:
        print("  ".join(v.ljust(wd) for v, wd in zip(row, widths)).rstrip())


def fresh_caches() -> Path:
    """Point tinyfw's, PoCL's and Mesa's kernel caches at an empty temporary directory, so each
    first run includes compiling (set before any of them is loaded). Returns the directory."""
    tmp = Path(tempfile.mkdtemp(prefix="tinyfw-bench-"))
    for var, sub in (("TINYFW_CACHE", "tinyfw"), ("POCL_CACHE_DIR", "pocl"),
                     ("MESA_SHADER_CACHE_DIR", "mesa")):
        os.environ[var] = str(tmp / sub)
    return tmp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per cell")
    parser.add_argument("--quick", action="store_true",
                        help="3 short rounds and half-size inputs: a smoke test")
    parser.add_argument("--devices", default="", help="comma-separated, e.g. CPU,CL (default: all)")
    parser.add_argument("--warm-cache", action="store_true",
                        help="keep the on-disk kernel caches (first runs load, not compile)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--strict", action="store_true",
                        help="exit with status 1 when a device's result is wrong or it fails")
    args = parser.parse_args(argv)
    rounds, min_round_s = (3, 0.02) if args.quick else (args.rounds, 0.1)

    tmp = None if args.warm_cache else fresh_caches()
    try:
        from tinyfw.device import Device
        from tinyfw.probe import probe
        names = list(Device.names)
        if args.devices:
            try:
                names = list(dict.fromkeys(Device.canonicalize(d) for d in
                                           args.devices.split(",") if d.strip()))
            except RuntimeError as error:
                parser.error(str(error))
        return report(names, rounds, min_round_s, args, probe)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def report(names: list[str], rounds: int, min_round_s: float, args: argparse.Namespace,
           probe: Callable[[str], tuple[bool, str]]) -> int:
    began = time.perf_counter()
    print(f"date: {datetime.date.today()}  cpu: {cpu_name()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}")
    if DROPPED_ENV:
        print(f"unset for this run: {', '.join(DROPPED_ENV)}")
    print("kernel caches: " + ("kept (--warm-cache): first runs may load compiled kernels"
                               if args.warm_cache else "empty: first runs compile every kernel"))
    cols = []
    for name in names:
        ok, why = probe(name)
        cols.append(Column(name, ok, why, describe(name) if ok else ""))
        print(f"  {name:<8} " + (c.about if (c := cols[-1]).ok else f"not available: {why}"))

    works = workloads(args.quick)
    for w in works:
        print(f"  {w.name}: {w.what}")
    print(f"medians of {rounds} rounds after a warm-up call; each call builds, schedules and "
          "runs the graph and waits for the device\n", flush=True)
    for c in cols:
        if not c.ok:
            continue
        sync = synchronizer(c.name)
        for w in works:
            c.cells[w.name] = run_cell(w, c.name, sync, rounds, min_round_s)

    head, rows = table(cols, works)
    print_table(head, rows, args.markdown)
    print("\n(1.5x): the device's median over CPU's (2.0x = twice as long). 1st: the first call, "
          "compiling its kernels included.")
    for c in cols:
        if c.name in EMULATORS and c.ok:
            print(f"*{c.name}: {EMULATORS[c.name]}; its times say nothing about a GPU.")
        if c.name == "WEBGPU" and c.ok and "CPU" in c.about:
            print("WEBGPU runs on a CPU Vulkan driver here (Mesa's lavapipe), not a GPU; its "
                  "cells include a wait on the queue. lavapipe ends a shader after 65535 loop "
                  "iterations, so tinyfw splits a longer reduce in two there.")
    bad = 0
    for c in cols:
        if not c.ok:
            print(f"{c.name}: not available: {c.why}")
            continue
        for w in works:
            cell = c.cells[w.name]
            if cell.error:
                bad += 1
                print(f"{c.name} {w.name}: failed: {cell.error}")
            elif cell.wrong:
                bad += 1
                print(f"{c.name} {w.name}: WRONG: off by {cell.err:.1e} relative to numpy "
                      f"(accepted: {w.tol:.0e})")
    errs = [f"{c.name} {max(x.err for x in c.cells.values() if x.err is not None):.1e}"
            for c in cols if c.ok and any(x.err is not None for x in c.cells.values())]
    print("largest error relative to float64 numpy, per device: " + ", ".join(errs))
    print(f"total {time.perf_counter() - began:.0f} s")
    return 1 if bad and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
