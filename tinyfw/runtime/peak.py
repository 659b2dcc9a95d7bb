"""This machine's limits, for DEBUG=2's share of peak: the CPU's float32 FLOP/s on all its cores
and its memory copy bandwidth, from DRAM and from the L3 cache, each measured once by a small
probe and kept on disk (by CPU model and core count), so a kernel's GFLOP/s and GB/s can be read
against what the machine can do.

The FLOP/s probe is a C loop of independent fused multiply-adds on the widest vectors the
compiler targets (-march=native): enough chains in flight to keep every FMA unit busy, which is
the best any kernel can do. The bandwidth probes are numpy copying (read and write, one thread):
64 MiB into 64 MiB for DRAM, a quarter of the L3 into another quarter for the L3 (its size read
from Linux's /sys; none found: no L3 level, every kernel is read against DRAM).
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
    """What the machine can do: float32 GFLOP/s on all cores, GB/s of memory copied from DRAM,
    and the L3's size in bytes (0: unknown) and GB/s copied within it."""
    gflops: float
    gbs: float
    l3_bytes: int = 0
    l3_gbs: float = 0.0

    def bandwidth(self, nbytes: int) -> tuple[float, str]:
        """The GB/s of the memory level that bytes touched by a kernel fit in, and its name."""
        if 0 < nbytes <= self.l3_bytes:
            return self.l3_gbs, "L3"
        return self.gbs, "DRAM"


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
        # (the L3 under a key of its own: an older tinyfw reads the first entry as it was)
        l3_key = f"{_cpu_model()}|{cores()}|L3"
        if _measure_missing(known, key, l3_key):
            path.write_text(json.dumps(known, indent=0))
        _peak = Peak(*known[key], *known[l3_key])
    return _peak


def _measure_missing(known: dict[str, list[float]], key: str, l3_key: str) -> bool:
    """Measure into known what it lacks: under key the FLOP/s and DRAM's GB/s, under l3_key the
    L3's size and GB/s. Whether anything was."""
    missing = key not in known or l3_key not in known
    if key not in known:
        known[key] = [_probe_gflops(cores()), _probe_gbs(128 << 20, 5)]
    if l3_key not in known:
        size = l3_bytes()
        known[l3_key] = [size, _probe_gbs(size // 2, 50) if size else 0.0]
    return missing


def l3_bytes() -> int:
    """The size of the L3 cache cpu0 shares, from Linux's /sys (0 where there is none)."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() == "3":
                return _size_bytes((index / "size").read_text().strip())
        except (OSError, ValueError):
            continue
    return 0


def _size_bytes(text: str) -> int:
    """'32768K' (or 'M', 'G', or plain bytes) as bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


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


def _probe_gbs(nbytes: int, repeats: int) -> float:
    """GB/s of numpy copying nbytes / 2 into another nbytes / 2 (read and write, the bytes
    touched: nbytes; best of repeats)."""
    source = np.ones(max(nbytes // 8, 1), np.float32)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return 2 * source.nbytes / best / 1e9
