# Exercises of chapter 08, generated from tinyfw/renderer_wgsl.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/08_webgpu
"""WGSL, WebGPU's shading language: typed declarations, no pointers, buffers as bindings. What
differs from C is written here; the walk over the program is CStyleLanguage.render (chapter 05)."""
from __future__ import annotations

import math
import struct
from typing import Any, ClassVar

from tinyfw.codegen import launch_size
from tinyfw.dtype import DType, dtypes
from tinyfw.renderer_c import OP_TEMPLATES, CStyleLanguage, Template
from tinyfw.uop import Ops

WORKGROUP = 64       # invocations per workgroup
MAX_GROUPS = 65535   # WebGPU's limit on workgroups along one dimension

# WGSL has 32-bit scalars only (f16 is an optional feature): no float64 or int64, and no 8- or
# 16-bit integers. Narrow integers and bools compute and are stored as i32.
WGSL_TYPES: dict[DType, str] = {
    dtypes.bool: "bool", dtypes.int8: "i32", dtypes.uint8: "i32", dtypes.int16: "i32",
    dtypes.int32: "i32", dtypes.float32: "f32"}
WIDENED = frozenset({dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16})  # kept as i32


def _builtin(name: str) -> Template:
    return lambda dt, a: f"{name}({a[0]})"


class WGSLLanguage(CStyleLanguage):
    """WGSL. Its `?:` is select(if_false, if_true, cond); integer division by zero is
    defined (it gives the dividend), so tinyfw's rule (0) is written out with select."""

    name = "WEBGPU"
    types: ClassVar[dict[DType, str]] = WGSL_TYPES
    storage: ClassVar[dict[DType, str]] = {**WGSL_TYPES, dtypes.bool: "i32"}
    ops: ClassVar[dict[Ops, Template]] = {
        **OP_TEMPLATES,
        Ops.EXP2: _builtin("exp2"), Ops.LOG2: _builtin("log2"), Ops.SIN: _builtin("sin"),
        Ops.SQRT: _builtin("sqrt"), Ops.TRUNC: _builtin("trunc"),
        Ops.RECIPROCAL: lambda dt, a: f"(1.0f/{a[0]})",
        Ops.MAX: lambda dt, a: f"select({a[1]}, {a[0]}, ({a[0]}>{a[1]}) || ({a[0]}!={a[0]}))",
        Ops.MOD: lambda dt, a: (f"({a[0]} % {a[1]})" if dt.is_float else
                                f"select({a[0]} % {a[1]}, 0i, {a[1]}==0i)"),
        Ops.IDIV: lambda dt, a: f"select({a[0]} / {a[1]}, 0i, {a[1]}==0i)",
        Ops.XOR: lambda dt, a: f"({a[0]}!={a[1]})" if dt.is_bool else f"({a[0]}^{a[1]})",
        Ops.WHERE: lambda dt, a: f"select({a[2]}, {a[1]}, {a[0]})",
        Ops.CAST: lambda dt, a: f"{WGSL_TYPES[dt]}({a[0]})"}  # bool(x): x != 0; i32(f) truncates
    prelude = ""
    int_type = "i32"
    has_threads = True

    def ternary(self, cond: str, a: str, b: str) -> str:
        return f"select({b}, {a}, {cond})"

    def kernel_header(self, name: str, params: list[tuple[int, str, bool]]) -> str:
        """One storage binding per buffer (the output read_write, inputs read), then the entry
        point: a compute shader of WORKGROUP invocations, given its global invocation id."""
        # TODO 08.wgsl_language: write this part. The chapter explains it:
        #   chapters/08_webgpu/README.md#the-wgsl-dialect
        raise NotImplementedError("not done yet: 08.wgsl_language")

    def thread_index(self) -> str:
        """Workgroups are dispatched over two dimensions (see wgsl_groups): x, then rows of y."""
        # TODO 08.wgsl_language: write this part. The chapter explains it:
        #   chapters/08_webgpu/README.md#the-wgsl-dialect
        raise NotImplementedError("not done yet: 08.wgsl_language")

    def decl(self, type_: str, name: str, value: str, mutable: bool) -> str:
        """`let` for a value set once, `var` for one assigned again; the type after a colon."""
        # TODO 08.wgsl_language: write this part. The chapter explains it:
        #   chapters/08_webgpu/README.md#the-wgsl-dialect
        raise NotImplementedError("not done yet: 08.wgsl_language")

    def loop(self, var: str, size: int) -> str:
        # TODO 08.wgsl_language: write this part. The chapter explains it:
        #   chapters/08_webgpu/README.md#the-wgsl-dialect
        raise NotImplementedError("not done yet: 08.wgsl_language")

    def const(self, value: Any, dtype: DType) -> str:
        """Literals with WGSL's suffixes (1i, 1.5f); infinities and NaN, which WGSL cannot
        write as literals, as the bits of an f32."""
        # TODO 08.wgsl_language: write this part. The chapter explains it:
        #   chapters/08_webgpu/README.md#the-wgsl-dialect
        raise NotImplementedError("not done yet: 08.wgsl_language")

    def load(self, buf: str, index: str, dtype: DType) -> str:
        """bool buffers hold i32: a bool is read as != 0 and written with select."""
        return f"({buf}[{index}] != 0)" if dtype.is_bool else f"{buf}[{index}]"

    def store(self, buf: str, index: str, value: str, dtype: DType) -> str:
        if dtype.is_bool:
            return f"{buf}[{index}] = select(0, 1, {value});"
        return f"{buf}[{index}] = {value};"


WGSL = WGSLLanguage()


def wgsl_groups(item: Any) -> tuple[int, int]:
    """Workgroups to dispatch, spread over two dimensions past WebGPU's per-dimension limit."""
    # TODO 08.pipeline: write this part. The chapter explains it:
    #   chapters/08_webgpu/README.md#running-a-shader
    raise NotImplementedError("not done yet: 08.pipeline")
