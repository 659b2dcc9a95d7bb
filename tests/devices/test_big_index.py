"""Kernels whose loops or indices pass 2**31 - 1 use 64-bit indices (long long in C and CUDA,
long in OpenCL; WEBGPU says it cannot), and every smaller kernel keeps its 32-bit ones."""
from __future__ import annotations

import time

import numpy as np
import pytest

from tinyfw import DType, Tensor, dtypes
from tinyfw.codegen.lower import Kernel, Program, lower
from tinyfw.engine.program import get_program, linear_program
from tinyfw.probe import probe
from tinyfw.renderer.base import NotSupportedError
from tinyfw.renderer.cstyle import C
from tinyfw.renderer.opencl_c import OPENCL
from tinyfw.renderer.cuda_c import CUDA
from tinyfw.renderer.wgsl import WGSL
from tinyfw.runtime.c_compiler import ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram
from tinyfw.uop.ops import Ops, UOp
from tinyfw.shape.view import ShapeTracker

BIG = 2**31 + 5


def sum_of_ones(n: int) -> Program:
    """One reduce of n ones into one float, as a single loop of n iterations (built directly,
    so that however Tensor.sum comes to split big sums, this loop stays one loop)."""
    ones = UOp(Ops.CONST, dtypes.float32,
               (UOp(Ops.VIEW, dtypes.bool, (), ShapeTracker.from_shape((1,)).expand((n,))),),
               1.0)
    total = UOp(Ops.REDUCE, dtypes.float32, (ones,), (Ops.ADD, (0,)))
    out = UOp(Ops.VIEW, dtypes.bool, (), ShapeTracker.from_shape((1,)))
    return lower(Kernel.from_ast(UOp(Ops.STORE, dtypes.float32, (out, total), 0), f"r_{n}"))


def test_small_kernels_keep_32_bit_indices() -> None:
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    prog = linear_program((x * Tensor([1.0, 2.0, 3.0])).sum(1).schedule()[0])
    assert prog.index_dtype == dtypes.int32
    assert "long" not in C.render(prog) + OPENCL.render(prog) + CUDA.render(prog)
    assert "int gid = (int)get_global_id(0);" in OPENCL.render(prog)
    assert "int gid = (int)(blockIdx.x*blockDim.x+threadIdx.x);" in CUDA.render(prog)


def test_a_loop_past_int32_uses_64_bit_indices_in_every_c_language() -> None:
    prog = sum_of_ones(BIG)
    assert prog.index_dtype == dtypes.int64
    assert f"for (long long ridx0 = 0; ridx0 < {BIG}; ridx0++)" in C.render(prog)
    cl = OPENCL.render(prog)
    assert "long gid = (long)get_global_id(0);" in cl and "for (long ridx0" in cl
    cuda = CUDA.render(prog)
    assert "long long gid = ((long long)blockIdx.x*blockDim.x+threadIdx.x);" in cuda
    assert "for (long long ridx0" in cuda
    with pytest.raises(NotSupportedError, match=f"{BIG} iterations.*not supported on WEBGPU"):
        WGSL.render(prog)


def test_an_index_past_int32_from_small_loops_uses_64_bit_indices(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """65536 x 65536 elements: each loop fits an int, but gidx0 * 65536 + gidx1 does not (the
    loops as chapter 05 lowers them: no optimizations)."""
    monkeypatch.setenv("NOOPT", "1")
    x = Tensor.ones(65536, 65536, dtype=dtypes.uint8).contiguous()  # scheduled, not run
    prog = linear_program((x.permute(1, 0) + 1).schedule()[-1])
    assert prog.index_dtype == dtypes.int64
    source = C.render(prog)
    assert "for (long long gidx0" in source and "for (long long gidx1" in source
    assert "long gidx1 = ((gid / 1) % 65536);" in OPENCL.render(prog)
    assert "long long gidx0 = ((gid / 65536) % 65536);" in CUDA.render(prog)
    with pytest.raises(NotSupportedError, match="not supported on WEBGPU"):
        WGSL.render(prog)


def test_threads_launched_past_the_last_element_count_toward_the_index() -> None:
    """A GPU launches whole blocks: the threads past the last element still compute gid, so
    one element short of 2**31 is already too many for a 32-bit thread index."""
    def index_dtype(n: int) -> DType:
        return linear_program(Tensor.ones(n, dtype=dtypes.uint8).contiguous().schedule()[-1]) \
            .index_dtype

    assert index_dtype(2**31 - 1) == dtypes.int64 and index_dtype(2**30) == dtypes.int32


def test_a_sum_of_more_than_2_31_ones_ends_on_cpu() -> None:
    """The loop of 2**31 + 5 iterations used to count in an int, overflow and never end."""
    prog = sum_of_ones(BIG)
    out = np.zeros(1, np.float32)
    start = time.perf_counter()
    CPUProgram(prog.name, ClangStyleCompiler().compile(C.render(prog)))(out)
    # float32 stops counting at 2**24, where adding 1 no longer changes the sum
    assert out[0] == 2.0**24 and time.perf_counter() - start < 20


def test_a_2_gb_uint8_tensor_is_written_and_read_on_cpu() -> None:
    """2**31 + 100 bytes: writing them with an int index overflowed into negative addresses
    (a segfault); the last three are read back by a second kernel at an index past 2**31."""
    x = Tensor.ones(2**31 + 100, dtype=dtypes.uint8, device="CPU").contiguous().realize()
    assert x[-3:].tolist() == [1, 1, 1] and x[:2].tolist() == [1, 1]


@pytest.mark.parametrize("device", ["CL", "CUDAEMU"])
def test_64_bit_index_source_compiles(device: str) -> None:
    """The 64-bit source of a kernel past 2**31 builds (running 2**32 elements on a CPU
    emulating a GPU would be too slow; the CPU runs such kernels above)."""
    ok, why = probe(device)
    if not ok:
        pytest.skip(f"{device} is not available here: {why}")
    x = Tensor.ones(65536, 65536, dtype=dtypes.uint8, device=device).contiguous()
    item = (x.permute(1, 0) + 1).schedule()[-1]
    compiled = get_program(item)  # rendered and built, not run
    assert compiled.source is not None and "long gid" in compiled.source  # long long in CUDA
    assert compiled.runner is not None


def test_tensor_sum_past_2_31_is_right_on_cpu() -> None:
    """Tensor.ones(2**31 + 5).sum(): partial sums (Tensor._reduce_chunk) count every one, and
    indices past 2**31 are 64-bit: the float32 nearest 2**31 + 5, like torch's."""
    assert Tensor.ones(2**31 + 5, device="CPU").sum().item() == float(np.float32(2**31 + 5))
