"""OpenCL C: C with address spaces, a kernel qualifier and work-item ids. What differs from C
on the CPU is written here; the walk over the program is CStyleLanguage.render (chapter 05)."""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from tinyfw.codegen.lower import Program
from tinyfw.dtype import DType, dtypes
from tinyfw.renderer.cstyle import (OP_TEMPLATES, CStyleLanguage, Template, c_idiv,
                                render_const)
from tinyfw.uop.ops import Ops

CL_TYPES: dict[DType, str] = {
    dtypes.bool: "bool", dtypes.int8: "char", dtypes.uint8: "uchar", dtypes.int16: "short",
    dtypes.int32: "int", dtypes.int64: "long", dtypes.uint16: "ushort", dtypes.uint32: "uint",
    dtypes.uint64: "ulong", dtypes.float16: "float", dtypes.float32: "float",
    dtypes.float64: "double"}


def _builtin(name: str) -> Template:
    """OpenCL's math built-ins are overloaded: one name for every float type."""
    return lambda dt, a: f"{name}({a[0]})"


def _nan_kept(name: str) -> Template:
    """A built-in that passes a NaN on itself: PoCL's exp2 and trunc of a NaN the compiler can
    see (a constant) fold to garbage, a different number each run."""
    return lambda dt, a: f"(isnan({a[0]}) ? {a[0]} : {name}({a[0]}))"


def _bitcast(dt: DType, a: list[str]) -> str:
    """as_T(x) reads x's bits as T, of the same size. A float16 computes as a float, so its
    bits go through the helpers of the prelude: tf_bits16 (overloaded by the operand's type:
    a float16's value, or a 16-bit int) and tf_half_from_bits. A NaN's bits are its sign, its
    payload's top bits and the quiet bit, as numpy converts (PoCL's vstore_half writes 0x7fff
    for every NaN)."""
    if dt == dtypes.float16:  # from int16 or uint16
        return f"tf_half_from_bits((ushort){a[0]})"
    if dt.itemsize == 2:
        return f"(({CL_TYPES[dt]})tf_bits16({a[0]}))"
    return f"as_{CL_TYPES[dt]}({a[0]})"


# The helpers of _bitcast, put in front of a kernel that calls them.
BITCAST_HELPERS = (
    "float tf_half_from_bits(ushort h) { return vload_half(0, (const half*)&h); }\n"
    "ushort __attribute__((overloadable)) tf_bits16(float x) { ushort h; "
    "vstore_half(x, 0, (half*)&h); if (!isnan(x)) return h; uint u = as_uint(x); "
    "h = ((u >> 16) & 0x8000) | 0x7c00 | ((u >> 13) & 0x3ff); "
    "return (h & 0x3ff) ? h : h | 0x200; }\n"
    "ushort __attribute__((overloadable)) tf_bits16(short x) { return (ushort)x; }\n"
    "ushort __attribute__((overloadable)) tf_bits16(ushort x) { return x; }\n")


class OpenCLLanguage(CStyleLanguage):
    """OpenCL C. Values of float16 compute as float (half arithmetic is an optional
    extension); in memory they stay 16 bits, read and written with vload_half/vstore_half.
    bool has no defined size in memory, so bool buffers hold uchar."""

    name = "CL"
    types: ClassVar[dict[DType, str]] = CL_TYPES
    storage: ClassVar[dict[DType, str]] = {**CL_TYPES, dtypes.bool: "uchar",
                                           dtypes.float16: "half"}
    ops: ClassVar[dict[Ops, Template]] = {
        **OP_TEMPLATES,
        Ops.EXP2: _nan_kept("exp2"), Ops.LOG2: _builtin("log2"), Ops.SIN: _builtin("sin"),
        Ops.SQRT: _builtin("sqrt"), Ops.TRUNC: _nan_kept("trunc"),
        Ops.RECIPROCAL: lambda dt, a: f"(({CL_TYPES[dt]})1/{a[0]})",
        Ops.IDIV: c_idiv(CL_TYPES, {dtypes.int32: "uint", dtypes.int64: "ulong"}),
        Ops.CAST: lambda dt, a: f"({a[0]}!=0)" if dt.is_bool else f"(({CL_TYPES[dt]}){a[0]})",
        Ops.BITCAST: _bitcast}
    prelude = ("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
               "float tf_round_half(float x) { ushort h; vstore_half(x, 0, (half*)&h); "
               "return isnan(x) ? x : vload_half(0, (const half*)&h); }\n")
    has_threads = True
    has_workgroups = True

    def render(self, prog: Program) -> str:
        """The shared walk (CStyleLanguage.render), with BITCAST_HELPERS after the prelude
        where the kernel bitcasts a 16-bit value."""
        source = super().render(prog)
        if "tf_bits16(" not in source and "tf_half_from_bits(" not in source:
            return source
        return self.prelude + BITCAST_HELPERS + source.removeprefix(self.prelude)

    def const(self, value: float | int | bool, dtype: DType) -> str:
        """C's literals, except that a 64-bit integer is a long (L) and a float16 a float
        (holding the value rounded to float16)."""
        if dtype == dtypes.int64:
            return render_const(value, dtype).replace("LL", "L")
        if dtype == dtypes.float16:
            return render_const(float(np.float16(value)), dtypes.float32)
        return render_const(value, dtype)

    def op(self, op: Ops, dtype: DType, args: list[str]) -> str:
        """A float16 result is computed in float, then rounded to float16, as numpy rounds."""
        expr = super().op(op, dtype, args)
        return f"tf_round_half({expr})" if dtype == dtypes.float16 else expr

    def kernel_header(self, name: str, params: list[tuple[int, str, bool]]) -> str:
        """`__kernel void name(__global T* restrict data0, __global const T* ...)`."""
        # >>> exercise 06.opencl_language #the-opencl-dialect
        args = ", ".join(f"__global {'' if out else 'const '}{t}* restrict data{i}"
                         for i, t, out in params)
        return f"__kernel void {name}({args}) {{"
        # <<< exercise

    def thread_index(self) -> str:
        """The work-item's id along dimension 0 (a size_t), as an index: one work-item per
        output element."""
        # >>> exercise 06.opencl_language #the-opencl-dialect
        return f"({self.int_type})get_global_id(0)"
        # <<< exercise

    def workgroup_index(self, which: str, workgroup: tuple[int, int]) -> str:
        return f"({self.int_type})get_{which}_id(0)"

    def local_array(self, name: str, type_: str, size: int) -> str:
        return f"__local {type_} {name}[{size}];"

    def barrier(self) -> str:
        return "barrier(CLK_LOCAL_MEM_FENCE);"

    def load(self, buf: str, index: str, dtype: DType) -> str:
        """half and bool are stored differently from how they compute."""
        # >>> exercise 06.opencl_language #the-opencl-dialect
        if dtype == dtypes.float16:
            return f"vload_half({index}, {buf})"
        if dtype.is_bool:
            return f"({buf}[{index}]!=0)"
        return f"{buf}[{index}]"
        # <<< exercise

    def store(self, buf: str, index: str, value: str, dtype: DType) -> str:
        # >>> exercise 06.opencl_language #the-opencl-dialect
        if dtype == dtypes.float16:
            return f"vstore_half({value}, {index}, {buf});"
        if dtype.is_bool:
            return f"{buf}[{index}] = (uchar){value};"
        return f"{buf}[{index}] = {value};"
        # <<< exercise


OPENCL = OpenCLLanguage()
