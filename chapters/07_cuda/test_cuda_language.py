"""The CUDA dialect: your kernel header, thread index, loads and stores, in kernels that tinyfw
renders with the shared walk of chapter 05, compiles with NVRTC and runs as CUDA C++ on the CPU."""

from __future__ import annotations

import pytest

from chapters.device_checks import CASES, Case, check_case, forget_programs
from chapters.learner import reference
from tinyfw import dtypes
from tinyfw.renderer.cuda_c import CUDA

pytestmark = pytest.mark.task("07.cuda_language")


def test_the_kernel_header() -> None:
    header = CUDA.kernel_header("E_4", [(0, "float", True), (1, "unsigned short", False)])
    expected = 'extern "C" __global__ void E_4(float* __restrict__ data0, ' \
               "const unsigned short* __restrict__ data1) {"
    assert header == expected, f"expected\n  {expected}\ngot\n  {header}"


def test_the_thread_index_counts_across_blocks() -> None:
    index = CUDA.thread_index()
    for part in ("blockIdx.x", "blockDim.x", "threadIdx.x"):
        assert part in index, f"expected {part} in the thread index, got {index!r}"


def test_half_is_converted_on_load_and_store() -> None:
    assert "tf_h2f" in CUDA.load("data1", "i", dtypes.float16)
    assert "tf_f2h" in CUDA.store("data0", "i", "v", dtypes.float16)
    assert CUDA.load("data1", "i", dtypes.float32) == "data1[i]"
    assert CUDA.store("data0", "i", "v", dtypes.float32) == "data0[i] = v;"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernels_compute_what_the_reference_does(case: Case) -> None:
    forget_programs("CUDAEMU")
    with reference("07.nvrtc", "07.launch"):
        check_case(case, "CUDAEMU")
