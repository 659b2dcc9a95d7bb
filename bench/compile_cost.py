"""What a compiler run costs, alone and for several kernels at once: why tinyfw compiles a
schedule's new kernels together (tinyfw/engine/program.py, compile_together).

- gcc: the CPU device's compiler and flags (`ClangStyleCompiler`), one small kernel against ten
  in one source, milliseconds per run (median of rounds);
- NVRTC: one small CUDA kernel against ten joined into one program (`nvrtc_many`), as CUDAEMU
  compiles them (left out without NVRTC).

Run from the repo root:  .venv/bin/python -m bench.compile_cost  (--rounds N)
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tinyfw.renderer.cuda_c import CUDA_PRELUDE
from tinyfw.runtime.c_compiler import COMPILE_FLAGS, find_compiler

C_KERNEL = ("void k{i}(float* restrict data0, const float* restrict data1) {{\n"
            "  for (int j = 0; j < 1024; j++) {{ float x = data1[j] * {i}.0f;\n"
            "    data0[j] = expf(x) + sqrtf(x) + sinf(x); }}\n}}\n")
CUDA_KERNEL = ('extern "C" __global__ void E_{i}(float* data0, const float* data1) {{\n'
               "  int gid = blockIdx.x * blockDim.x + threadIdx.x; if (gid >= 3000) return;\n"
               "  data0[gid] = exp2f(data1[gid] * {i}.0f) + sqrtf(data1[gid]);\n}}\n")


def median_ms(run: Callable[[int], object], rounds: int) -> float:
    """The median time of run(round) over rounds, in milliseconds (each round's source new)."""
    times = []
    for r in range(rounds):
        start = time.perf_counter()
        run(r)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def gcc(kernels: int, salt: int) -> None:
    """One gcc run of `kernels` kernels, as the CPU device compiles them."""
    source = "#include <math.h>\n" + "".join(C_KERNEL.format(i=i + 100 * salt)
                                             for i in range(kernels))
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([find_compiler(), *COMPILE_FLAGS, "-", "-o", str(Path(tmp) / "k.so"),
                        "-lm"], input=source.encode(), check=True, capture_output=True)


def nvrtc(kernels: int, salt: int) -> None:
    """One NVRTC run of `kernels` kernels joined into one program."""
    from tinyfw.runtime.ops_cuda import nvrtc_many
    sources = [CUDA_PRELUDE + CUDA_KERNEL.format(i=i + 100 * salt) for i in range(kernels)]
    nvrtc_many(sources)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    rounds = parser.parse_args(argv).rounds
    print(f"compiler runs, median of {rounds}, ms per run")
    rows = [("gcc", gcc)]
    try:
        nvrtc(1, 999)  # (loads NVRTC once, untimed)
        rows.append(("NVRTC", nvrtc))
    except RuntimeError as error:
        print(f"NVRTC left out: {error}")
    for name, compile_ in rows:
        one = median_ms(lambda r, c=compile_: c(1, r), rounds)
        ten = median_ms(lambda r, c=compile_: c(10, r + rounds), rounds)
        print(f"{name:6} 1 kernel {one:7.1f}   10 kernels {ten:7.1f}   "
              f"each more kernel {(ten - one) / 9:5.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
