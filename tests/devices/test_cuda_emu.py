"""The CUDA emulator runs CUDA source honestly: every thread of the grid, real threads and a
barrier when a kernel synchronizes, shared memory per block, and NVRTC compiles the same text."""
from __future__ import annotations

import numpy as np
import pytest

from tinyfw.runtime.ops_cuda import EmulatedCUDAProgram, EmulatorCompiler, nvrtc_compile

BLOCK_SUM = """extern "C" __global__ void block_sum(float* out, const float* x) {
  __shared__ float partial[64];
  int t = threadIdx.x;
  partial[t] = x[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (int stride = 32; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}
"""

REVERSE = """extern "C" __global__ void reverse(float* out, const float* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[gridDim.x * blockDim.x - 1 - i] = x[i] + (float)threadIdx.x * 0.0f;
}
"""


def emulate(source: str, name: str, out: np.ndarray, x: np.ndarray, grid: int,
            block: int) -> np.ndarray:
    program = EmulatedCUDAProgram(name, EmulatorCompiler().compile(source))
    program([out, x], grid, block)
    return out


def test_a_block_reduction_with_barriers() -> None:
    """A tree sum in shared memory is only right if every thread waits at each barrier."""
    assert b".entry block_sum(" in nvrtc_compile(BLOCK_SUM)
    x = np.random.default_rng(1).standard_normal(64 * 5).astype(np.float32)
    out = emulate(BLOCK_SUM, "block_sum", np.zeros(5, np.float32), x, grid=5, block=64)
    np.testing.assert_allclose(out, x.reshape(5, 64).sum(1), rtol=1e-5)


def test_every_thread_of_the_grid_runs() -> None:
    assert b".entry reverse(" in nvrtc_compile(REVERSE)
    x = np.arange(3 * 128, dtype=np.float32)
    out = emulate(REVERSE, "reverse", np.full(3 * 128, -1, np.float32), x, grid=3, block=128)
    np.testing.assert_array_equal(out, x[::-1])


def test_a_schedules_kernels_go_through_nvrtc_as_one_program(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels as the renderer writes them (prelude first) are joined into one NVRTC program,
    the same name twice included; a kernel that does not compile makes each go alone, and the
    error shows its own source."""
    from tinyfw.renderer.cuda_c import CUDA_PRELUDE
    from tinyfw.runtime import ops_cuda
    runs: list[str] = []

    def counting(source: str, arch: str = "compute_80") -> bytes:
        runs.append(source)
        return nvrtc_compile(source, arch)

    monkeypatch.setattr(ops_cuda, "nvrtc_compile", counting)
    kernel = 'extern "C" __global__ void E_4(float* data0) {{ data0[threadIdx.x] = {}; }}\n'
    good = [CUDA_PRELUDE + kernel.format("1.0f"), CUDA_PRELUDE + kernel.format("2.0f")]
    ptx = ops_cuda.nvrtc_many(good)
    assert len(runs) == 1 and ptx[0] == ptx[1] and b"k1_E_4" in ptx[0]
    runs.clear()
    bad = CUDA_PRELUDE + kernel.format("undeclared_name")
    with pytest.raises(RuntimeError, match="undeclared_name") as error:
        ops_cuda.nvrtc_many([good[0], bad])
    assert "1.0f" not in str(error.value) and len(runs) == 3, "joined, then each alone"
