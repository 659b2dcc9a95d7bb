"""The OpenCL dialect: your kernel header, thread index, loads and stores, in kernels that
tinyfw renders with the shared walk of chapter 05 and runs on PoCL."""

from __future__ import annotations

import pytest

from chapters.device_checks import CASES, Case, check_case, forget_programs
from chapters.learner import reference
from tinyfw import dtypes
from tinyfw.renderer.opencl_c import OPENCL

pytestmark = pytest.mark.task("06.opencl_language")


def test_the_kernel_header() -> None:
    header = OPENCL.kernel_header("E_4", [(0, "float", True), (1, "half", False)])
    expected = "__kernel void E_4(__global float* restrict data0, " \
               "__global const half* restrict data1) {"
    assert header == expected, f"expected\n  {expected}\ngot\n  {header}"


def test_the_thread_index_is_the_global_id() -> None:
    index = OPENCL.thread_index()
    assert "get_global_id(0)" in index, f"expected get_global_id(0) in it, got {index!r}"


def test_half_and_bool_are_stored_differently() -> None:
    assert "vload_half" in OPENCL.load("data1", "i", dtypes.float16)
    assert "vstore_half" in OPENCL.store("data0", "i", "v", dtypes.float16)
    assert OPENCL.load("data1", "i", dtypes.float32) == "data1[i]"
    assert OPENCL.store("data0", "i", "v", dtypes.float32) == "data0[i] = v;"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernels_compute_what_the_reference_does(case: Case) -> None:
    forget_programs("CL")
    with reference("06.cl_memory", "06.cl_launch"):
        check_case(case, "CL")
