"""The CUDA emulator runs CUDA source honestly: every thread of the grid, real threads and a
barrier when a kernel synchronizes, shared memory per block, and NVRTC compiles the same text."""
from __future__ import annotations

import numpy as np

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
