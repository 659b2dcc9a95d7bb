# Exercises of chapter 07, generated from tinyfw/renderer/cuda_c.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/07_cuda
# generated text id: 13c4514cca94d4ac (lets tools.generate tell your edits apart)
"""CUDA C: C++ with a kernel qualifier and a grid of blocks of threads. What differs from C on
the CPU is written here; the walk over the program is CStyleLanguage.render (chapter 05)."""
from __future__ import annotations

import math
import struct
from typing import ClassVar

import numpy as np

from tinyfw.codegen.lower import Program
from tinyfw.dtype import DType, dtypes
from tinyfw.renderer.cstyle import OP_TEMPLATES, CStyleLanguage, Template, render_const
from tinyfw.uop.ops import Ops

BLOCK = 128  # threads per block

CUDA_TYPES: dict[DType, str] = {
    dtypes.bool: "bool", dtypes.int8: "signed char", dtypes.uint8: "unsigned char",
    dtypes.int16: "short", dtypes.int32: "int", dtypes.int64: "long long",
    dtypes.uint16: "unsigned short", dtypes.uint32: "unsigned int",
    dtypes.uint64: "unsigned long long",
    dtypes.float16: "float", dtypes.float32: "float", dtypes.float64: "double"}

# NVRTC ships no headers: half <-> float conversions are one PTX instruction each. (The CPU
# emulator's header, cuda_emu.h, defines the same two functions in plain C++.) tf_bitcast reads
# a value's bits as another type of its size; a float16 computes as a float, 4 bytes, so a size
# that differs is a float16 on one side, converted to or from its 16 bits. (emulate.py folds
# constants: the operand is always a variable of its own type, never a literal.)
CUDA_PRELUDE = """#ifdef __CUDACC_RTC__
__device__ float tf_h2f(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ unsigned short tf_f2h(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
#endif
"""
# put in front of a kernel that calls it (after the prelude)
BITCAST_HELPER = """template <class T, class F> __device__ T tf_bitcast(F x) {
  if constexpr (sizeof(T) == sizeof(F)) { union { F f; T t; } u; u.f = x; return u.t; }
  else if constexpr (sizeof(F) == 4) { return (T)tf_f2h(x); }  // a float16 (a float) to bits
  else { return tf_h2f((unsigned short)x); }                     // 16 bits to a float16
}
"""


def _math(name: str) -> Template:
    """CUDA's math functions: sinf for float, sin for double."""
    return lambda dt, a: f"{name}({a[0]})" if dt == dtypes.float64 else f"{name}f({a[0]})"


class CUDALanguage(CStyleLanguage):
    """CUDA C, compiled by NVRTC. float16 values compute as float and stay 16 bits in memory
    (as unsigned short, converted on load and store); infinities and NaN are written as bit
    patterns, since NVRTC has no math.h for INFINITY and NAN."""

    name = "CUDA"
    types: ClassVar[dict[DType, str]] = CUDA_TYPES
    storage: ClassVar[dict[DType, str]] = {**CUDA_TYPES, dtypes.float16: "unsigned short"}
    ops: ClassVar[dict[Ops, Template]] = {
        **OP_TEMPLATES,
        Ops.EXP2: _math("exp2"), Ops.LOG2: _math("log2"), Ops.SIN: _math("sin"),
        Ops.SQRT: _math("sqrt"), Ops.TRUNC: _math("trunc"),
        Ops.RECIPROCAL: lambda dt, a: f"(({CUDA_TYPES[dt]})1/{a[0]})",
        Ops.CAST: lambda dt, a: f"({a[0]}!=0)" if dt.is_bool else f"(({CUDA_TYPES[dt]}){a[0]})",
        Ops.BITCAST: lambda dt, a: f"tf_bitcast<{CUDA_TYPES[dt]}>({a[0]})"}
    prelude = CUDA_PRELUDE
    has_threads = True
    has_workgroups = True

    def render(self, prog: Program) -> str:
        """The shared walk (CStyleLanguage.render), with BITCAST_HELPER after the prelude where
        the kernel bitcasts."""
        source = super().render(prog)
        if "tf_bitcast<" not in source:
            return source
        return self.prelude + BITCAST_HELPER + source.removeprefix(self.prelude)

    def const(self, value: float | int | bool, dtype: DType) -> str:
        """C's literals, with infinities and NaN as float bit patterns."""
        if dtype.is_float and (math.isinf(value) or math.isnan(value)):
            bits = struct.unpack("<I", struct.pack("<f", value))[0]
            return f"__int_as_float({bits:#010x})"
        if dtype == dtypes.float16:  # a float holding the value rounded to float16
            return render_const(float(np.float16(value)), dtypes.float32)
        return render_const(value, dtype)

    def op(self, op: Ops, dtype: DType, args: list[str]) -> str:
        """A float16 result is computed in float, then rounded to float16, as numpy rounds."""
        expr = super().op(op, dtype, args)
        return f"tf_h2f(tf_f2h({expr}))" if dtype == dtypes.float16 else expr

    def kernel_header(self, name: str, params: list[tuple[int, str, bool]]) -> str:
        """`extern "C" __global__ void name(T* __restrict__ data0, const T* ...)`."""
        # TODO 07.cuda_language: write this part. The chapter explains it:
        #   chapters/07_cuda/README.md#the-cuda-dialect
        raise NotImplementedError("not done yet: 07.cuda_language")

    def workgroup_index(self, which: str, workgroup: tuple[int, int]) -> str:
        """A work-group is a block: blockIdx.x, and the thread in it threadIdx.x."""
        return f"({self.int_type})" + ("blockIdx.x" if which == "group" else "threadIdx.x")

    def local_array(self, name: str, type_: str, size: int) -> str:
        return f"__shared__ {type_} {name}[{size}];"

    def barrier(self) -> str:
        return "__syncthreads();"

    def thread_index(self) -> str:
        """The thread's position in the whole grid: its block's offset plus its own. The
        built-ins are unsigned 32-bit: a 64-bit index converts before multiplying."""
        # TODO 07.cuda_language: write this part. The chapter explains it:
        #   chapters/07_cuda/README.md#the-cuda-dialect
        raise NotImplementedError("not done yet: 07.cuda_language")

    def load(self, buf: str, index: str, dtype: DType) -> str:
        # TODO 07.cuda_language: write this part. The chapter explains it:
        #   chapters/07_cuda/README.md#the-cuda-dialect
        raise NotImplementedError("not done yet: 07.cuda_language")

    def store(self, buf: str, index: str, value: str, dtype: DType) -> str:
        # TODO 07.cuda_language: write this part. The chapter explains it:
        #   chapters/07_cuda/README.md#the-cuda-dialect
        raise NotImplementedError("not done yet: 07.cuda_language")


CUDA = CUDALanguage()


def cuda_type(dtype: DType) -> str:
    """The element type of a CUDA kernel's buffer of dtype."""
    return CUDA.buffer_type(dtype)
