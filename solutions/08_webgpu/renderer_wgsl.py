# Solutions of chapter 08, generated from tinyfw/renderer_wgsl.py by `python -m tools.generate`.
# Edit tinyfw/renderer_wgsl.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/08_webgpu --impl=solutions
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
        # >>> exercise 08.wgsl_language #the-wgsl-dialect
        binds = [f"@group(0) @binding({i}) var<storage, {'read_write' if out else 'read'}> "
                 f"data{i}: array<{t}>;" for i, t, out in params]
        return "\n".join(binds + [
            f"@compute @workgroup_size({WORKGROUP})",
            f"fn {name}(@builtin(global_invocation_id) tf_id: vec3<u32>) {{"])
        # <<< exercise

    def thread_index(self) -> str:
        """Workgroups are dispatched over two dimensions (see wgsl_groups): x, then rows of y."""
        # >>> exercise 08.wgsl_language #the-wgsl-dialect
        return f"i32(tf_id.x + tf_id.y * {MAX_GROUPS * WORKGROUP}u)"
        # <<< exercise

    def decl(self, type_: str, name: str, value: str, mutable: bool) -> str:
        """`let` for a value set once, `var` for one assigned again; the type after a colon."""
        # >>> exercise 08.wgsl_language #the-wgsl-dialect
        return f"{'var' if mutable else 'let'} {name}: {type_} = {value};"
        # <<< exercise

    def loop(self, var: str, size: int) -> str:
        # >>> exercise 08.wgsl_language #the-wgsl-dialect
        return f"for (var {var}: i32 = 0; {var} < {size}; {var}++) {{"
        # <<< exercise

    def const(self, value: Any, dtype: DType) -> str:
        """Literals with WGSL's suffixes (1i, 1.5f); infinities and NaN, which WGSL cannot
        write as literals, as the bits of an f32."""
        # >>> exercise 08.wgsl_language #the-wgsl-dialect
        if dtype.is_bool:
            return "true" if value else "false"
        if dtype.is_int:
            return f"({int(value)}i)" if value != -2**31 else "i32(-2147483648)"
        if math.isnan(value) or math.isinf(value):
            bits = struct.unpack("<I", struct.pack("<f", value))[0]
            return f"bitcast<f32>({bits}u)"
        return f"{float(value)!r}f"
        # <<< exercise

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
    # >>> exercise 08.pipeline #running-a-shader
    groups = -(-launch_size(item) // WORKGROUP)
    return (min(groups, MAX_GROUPS), -(-groups // MAX_GROUPS))
    # <<< exercise
