"""OpenCL C with vector types, for chapter 11's optimized kernels: what the CL device renders
with. Without an UPCAST or UNROLL axis lowered as vectors it is chapter 06's OpenCL C."""
from __future__ import annotations

from typing import Any

from tinyfw.codegen.lower_opts import Broadcast, Lane, Pick
from tinyfw.dtype import DType, VectorDType, dtypes
from tinyfw.renderer.opencl_c import OpenCLLanguage
from tinyfw.uop.ops import Ops


class VectorOpenCL(OpenCLLanguage):
    """OpenCL C with its vector types (chapter 11): an UPCAST or UNROLL axis of 4 float32s is
    one float4, read with vload4 and written with vstore4 (any element, no alignment asked),
    computed lane by lane by OpenCL's own operators; comparing float4s gives an int4 mask
    (every bit of a true lane set), which select() reads, as a maximum does. int32 lanes (a
    float's bits on their way back, positions compared) are int4s, converted and reinterpreted
    with OpenCL's convert_ and as_ built-ins."""

    vector_lanes = 4  # float4: what PoCL (SSE to AVX-512) and GPUs all have

    def type_of(self, dtype: DType) -> str:
        """float4, or int4 for a mask and for int32 lanes (loaded positions, a float's bits)."""
        if not isinstance(dtype, VectorDType):
            return super().type_of(dtype)
        ints = dtype.scalar.is_bool or dtype.scalar == dtypes.int32
        return f"int{dtype.count}" if ints else f"float{dtype.count}"

    def const(self, value: Any, dtype: DType) -> str:
        """A literal; of a vector type, every lane the value."""
        if not isinstance(dtype, VectorDType):
            return super().const(value, dtype)
        return f"(({self.type_of(dtype)})({super().const(value, dtype.scalar)}))"

    def load(self, buf: str, index: str, dtype: DType) -> str:
        if not isinstance(dtype, VectorDType):
            return super().load(buf, index, dtype)
        return f"vload{dtype.count}(0, {buf}+({index}))"

    def store(self, buf: str, index: str, value: str, dtype: DType) -> str:
        if not isinstance(dtype, VectorDType):
            return super().store(buf, index, value, dtype)
        return f"vstore{dtype.count}({value}, 0, {buf}+({index}));"

    def op(self, op: Any, dtype: DType, args: list[str]) -> str:
        """An op; on vectors the scalar's template (OpenCL's operators work lane by lane), a
        where as select() (of a condition the same for all lanes, as ?:), a Lane as its
        component .s0 to .sf."""
        if isinstance(op, Lane):
            return f"{args[0]}.s{op.index:x}"
        if not isinstance(dtype, VectorDType):
            return super().op(op, dtype, args)
        if isinstance(op, Broadcast):  # (a bool's lanes: all ones for true, as a compare's)
            lane = f"-(int)({args[0]})" if dtype.scalar.is_bool else args[0]
            return f"(({self.type_of(dtype)})({lane}))"
        if op is Ops.WHERE:
            cond, a, b = args
            return f"select({b}, {a}, {cond})"
        if isinstance(op, Pick):  # (a condition the same for all lanes picks a whole vector)
            return f"({args[0]}?{args[1]}:{args[2]})"
        if op is Ops.CAST:  # (float32s to int32s: OpenCL casts no vector to another type)
            return f"convert_{self.type_of(dtype)}_rtz({args[0]})"
        if op is Ops.BITCAST:  # (int32s as float32s)
            return f"as_{self.type_of(dtype)}({args[0]})"
        if op is Ops.MAX:  # (a, or a nan in a, where a > b or a != a, else b)
            a, b = args
            return f"select({b}, {a}, ({a}>{b})|({a}!={a}))"
        return OpenCLLanguage.op(self, op, dtype.scalar, args)


OPENCL_VECTORS = VectorOpenCL()
