"""Compiling with NVRTC: your nvrtc_compile turns CUDA C into PTX, with no GPU, and reports
NVRTC's log when the source is wrong."""

from __future__ import annotations

import pytest

from chapters.device_checks import CASES, Case
from chapters.learner import reference
from tinyfw import Tensor
from tinyfw.engine.program import linear_program
from tinyfw.renderer.cuda_c import CUDA
from tinyfw.runtime.ops_cuda import nvrtc_compile

pytestmark = pytest.mark.task("07.nvrtc")

AXPY = """extern "C" __global__ void axpy(float* out, const float* x, const float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * x[i] + y[i];
}
"""


def ptx_text(ptx: bytes) -> str:
    assert isinstance(ptx, bytes), f"nvrtc_compile should return bytes, got {type(ptx).__name__}"
    return ptx.rstrip(b"\0").decode()


def test_cuda_c_becomes_ptx() -> None:
    text = ptx_text(nvrtc_compile(AXPY))
    assert ".visible .entry axpy(" in text, \
        "the PTX should define the kernel by its plain name (extern \"C\"):\n" + text[:600]
    assert ".target sm_80" in text, "the default architecture is compute_80:\n" + text[:600]


def test_the_architecture_is_an_option() -> None:
    text = ptx_text(nvrtc_compile(AXPY, "compute_75"))
    assert ".target sm_75" in text, "nvrtc_compile(source, 'compute_75') targets sm_75"


def test_an_sm_architecture_gives_machine_code() -> None:
    """For a GPU's own architecture, NVRTC returns a CUBIN: an ELF file the driver loads as is."""
    cubin = nvrtc_compile(AXPY, "sm_80")
    assert isinstance(cubin, bytes) and cubin.startswith(b"\x7fELF"), \
        f"nvrtc_compile(source, 'sm_80') should return a CUBIN (ELF), got {cubin[:16]!r}"


def test_multiply_adds_are_not_fused() -> None:
    """x*y + 1 stays a multiply and an add (--fmad=false), rounded twice as on the CPU."""
    text = ptx_text(nvrtc_compile(AXPY.replace("2.0f * x[i] + y[i]", "x[i] * y[i] + 1.0f")))
    assert "fma." not in text and "mul.rn.f32" in text, \
        "compile with --fmad=false: the PTX should multiply and add, not fma:\n" + text[-700:]


def test_a_compile_error_shows_the_log_and_the_source() -> None:
    broken = AXPY.replace("2.0f * x[i]", "2.0f * undefined_name")
    try:
        nvrtc_compile(broken)
    except NotImplementedError:
        raise  # a stub: not done yet
    except RuntimeError as error:
        text = str(error)
    else:
        pytest.fail("compiling CUDA C that has an error should raise a RuntimeError")
    assert "undefined_name" in text and "axpy" in text, \
        f"the error should quote NVRTC's log and the source, got:\n{text}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_kernel_tinyfw_renders_compiles(case: Case) -> None:
    with reference("07.cuda_language"):
        items = case.fn(*[Tensor(a, device="CUDAEMU") for a in case.arrays]).schedule()
        sources = [CUDA.render(linear_program(item)) for item in items]
    for item, source in zip(items, sources):
        text = ptx_text(nvrtc_compile(source))
        assert f".entry {item.name}(" in text, f"no kernel {item.name} in the PTX of\n{source}"
