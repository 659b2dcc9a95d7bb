"""This machine's limits, for DEBUG=2's share of peak: the CPU's float32 FLOP/s on all its cores
and its memory copy bandwidth, each measured once by a small probe and kept on disk (by CPU model
and core count), so a kernel's GFLOP/s and GB/s can be read against what the machine can do.

The FLOP/s probe is a C loop of independent fused multiply-adds on the widest vectors the
compiler targets (-march=native): enough chains in flight to keep every FMA unit busy, which is
the best any kernel can do. The bandwidth probe is numpy copying 64 MiB (read and write).
"""
from __future__ import annotations

import ctypes
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tinyfw.renderer.cstyle import target_march
from tinyfw.runtime.c_compiler import ClangStyleCompiler
from tinyfw.runtime.c_library import _open_library
from tinyfw.runtime.disk_cache import cache_dir
from tinyfw.runtime.ops_cpu import cores

PROBE_C = r"""
#ifdef __AVX512F__
typedef float vec __attribute__((vector_size(64)));
#define CHAINS 12
#else
typedef float vec __attribute__((vector_size(32)));
#define CHAINS 10
#endif
int tf_lanes(void) { return sizeof(vec) / sizeof(float); }
int tf_chains(void) { return CHAINS; }
float tf_fma_probe(long n) {
  vec acc[CHAINS], m, c;
  for (int k = 0; k < (int)(sizeof(vec) / sizeof(float)); k++) { m[k] = 0.999999f; c[k] = 1e-7f; }
  for (int j = 0; j < CHAINS; j++) acc[j] = m * (float)(j + 1);
  for (long i = 0; i < n; i++) {
#pragma GCC unroll 16
    for (int j = 0; j < CHAINS; j++) acc[j] = acc[j] * m + c;
  }
  float total = 0;
  for (int j = 0; j < CHAINS; j++) total += acc[j][0];
  return total;
}
"""
PROBE_FLAGS = ["-O2", f"-march={target_march()}", "-ffp-contract=fast", "-fPIC", "-shared",
               "-x", "c"]


@dataclass(frozen=True)
class Peak:
    """What the machine can do: float32 GFLOP/s on all cores, and GB/s of memory copied."""
    gflops: float
    gbs: float


_peak: Peak | None = None


def cpu_peak() -> Peak:
    """The CPU's peak, from the disk cache or measured now (about a second, once)."""
    global _peak
    if _peak is None:
        path = cache_dir().parent / "peak.json"
        march = target_march()  # (another level than native: its own peak)
        key = f"{_cpu_model()}|{cores()}" + ("" if march == "native" else f"|{march}")
        try:
            known = json.loads(path.read_text())
        except (OSError, ValueError):
            known = {}
        if key not in known:
            known[key] = [_probe_gflops(cores()), _probe_gbs()]
            path.write_text(json.dumps(known, indent=0))
        _peak = Peak(*known[key])
    return _peak


def _cpu_model() -> str:
    """The CPU's model name, from /proc/cpuinfo ('unknown' elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _probe_gflops(cores: int) -> float:
    """GFLOP/s of the FMA probe run on every core at once (best of 3)."""
    compiler = ClangStyleCompiler(PROBE_FLAGS)
    path = compiler.compile(PROBE_C)
    lib = _open_library(compiler.library_bytes(path, PROBE_C), path.parent)
    probe = lib.tf_fma_probe
    probe.argtypes, probe.restype = [ctypes.c_long], ctypes.c_float
    steps = 2_000_000
    flops = 2 * lib.tf_lanes() * lib.tf_chains() * steps * cores
    best = float("inf")
    with ThreadPoolExecutor(max_workers=cores) as pool:
        for _ in range(3):
            start = time.perf_counter()
            list(pool.map(probe, [steps] * cores))
            best = min(best, time.perf_counter() - start)
    return flops / best / 1e9


def _probe_gbs() -> float:
    """GB/s of numpy copying 64 MiB into another 64 MiB (read and write, best of 5)."""
    source = np.ones(16 << 20, np.float32)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return 2 * source.nbytes / best / 1e9
