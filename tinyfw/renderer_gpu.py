"""Rendering a linear program for a GPU: OpenCL C, CUDA C and WGSL. What differs from C on the
CPU is written down in one Language per target; the walk over the program's steps is shared."""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

from tinyfw.codegen import Kernel, LOps, Program, lower
from tinyfw.dtype import DType, dtypes
from tinyfw.renderer_c import OP_TEMPLATES
from tinyfw.uop import Ops

BLOCK = 128          # CUDA threads per block
WORKGROUP = 64       # WGSL invocations per workgroup
MAX_GROUPS = 65535   # WebGPU's limit on workgroups along one dimension

Template = Callable[[DType, list[str]], str]


class NotSupportedError(RuntimeError):
    """A dtype or op the target language cannot express."""


@dataclass(frozen=True)
class Language:
    """Everything a C-like target changes: names of types, how a kernel and its buffers are
    declared, how a thread finds its element, how values are declared, loaded and stored."""
    name: str
    types: dict[DType, str]                     # a value's type
    storage: dict[DType, str]                   # an element's type in memory
    kernel_header: Callable[[str, list[tuple[int, str, bool]], int], str]
    thread_id: str                              # the flat index of this thread
    decl: Callable[[str, str, str, bool], str]  # (type, name, value, mutable) -> statement
    loop: Callable[[str, int], str]
    const: Callable[[Any, DType], str]
    load: Callable[[str, str, DType], str] = lambda buf, i, dt: f"{buf}[{i}]"
    store: Callable[[str, str, str, DType], str] = lambda buf, i, v, dt: f"{buf}[{i}] = {v};"
    ternary: Callable[[str, str, str], str] = lambda c, a, b: f"({c}?{a}:{b})"
    ops: dict[Ops, Template] = field(default_factory=dict)  # overrides of C's templates
    prelude: str = ""
    int_type: str = "int"

    def op(self, op: Ops, dtype: DType, args: list[str]) -> str:
        return self.ops.get(op, OP_TEMPLATES[op])(dtype, args)

    def type_of(self, dtype: DType) -> str:
        if dtype not in self.types:
            raise NotSupportedError(f"{dtype.name} is not supported on {self.name}")
        return self.types[dtype]


def c_const(value: Any, dtype: DType, float_suffix: str, inf: str, nan: str) -> str:
    """A C-family literal."""
    if dtype.is_bool:
        return "1" if value else "0"
    if dtype.is_int:
        if dtype == dtypes.int64 and value == dtypes.min(dtype):
            return f"({int(value) + 1}L-1)"  # the literal itself would not fit
        text = f"{int(value)}" + ("L" if dtype == dtypes.int64 else "")
        return f"({text})" if value < 0 else text  # so that -x of it is not a decrement
    if math.isnan(value):
        return nan
    if math.isinf(value):
        return inf if value > 0 else f"(-{inf})"
    return repr(float(value)) + (float_suffix if dtype != dtypes.float64 else "")


# --- OpenCL C ---
_CL_TYPES = {dtypes.bool: "bool", dtypes.int8: "char", dtypes.uint8: "uchar",
             dtypes.int16: "short", dtypes.int32: "int", dtypes.int64: "long",
             dtypes.float16: "float", dtypes.float32: "float", dtypes.float64: "double"}


def _cl_header(name: str, params: list[tuple[int, str, bool]], n: int) -> str:
    args = ", ".join(f"__global {'' if out else 'const '}{t}* restrict data{i}"
                     for i, t, out in params)
    return f"__kernel void {name}({args}) {{"


OPENCL = Language(
    name="CL", types=_CL_TYPES,
    storage={**_CL_TYPES, dtypes.bool: "uchar", dtypes.float16: "half"},
    kernel_header=_cl_header, thread_id="(int)get_global_id(0)",
    decl=lambda t, n, v, mutable: f"{t} {n} = {v};",
    loop=lambda v, size: f"for (int {v} = 0; {v} < {size}; {v}++) {{",
    const=lambda v, dt: c_const(v, dt, "f", "INFINITY", "NAN"),
    load=lambda buf, i, dt: (f"vload_half({i}, {buf})" if dt == dtypes.float16 else
                             f"({buf}[{i}]!=0)" if dt.is_bool else f"{buf}[{i}]"),
    store=lambda buf, i, v, dt: (f"vstore_half({v}, {i}, {buf});" if dt == dtypes.float16 else
                                 f"{buf}[{i}] = (uchar){v};" if dt.is_bool else
                                 f"{buf}[{i}] = {v};"),
    ops={Ops.EXP2: lambda dt, a: f"exp2({a[0]})", Ops.LOG2: lambda dt, a: f"log2({a[0]})",
         Ops.SIN: lambda dt, a: f"sin({a[0]})", Ops.SQRT: lambda dt, a: f"sqrt({a[0]})",
         Ops.TRUNC: lambda dt, a: f"trunc({a[0]})",
         Ops.RECIPROCAL: lambda dt, a: f"(({_CL_TYPES[dt]})1/{a[0]})",
         Ops.CAST: lambda dt, a: f"({a[0]}!=0)" if dt.is_bool else f"(({_CL_TYPES[dt]}){a[0]})"},
    prelude="#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
)


# --- CUDA C ---
_CUDA_TYPES = {dtypes.bool: "bool", dtypes.int8: "signed char", dtypes.uint8: "unsigned char",
               dtypes.int16: "short", dtypes.int32: "int", dtypes.int64: "long long",
               dtypes.float16: "float", dtypes.float32: "float", dtypes.float64: "double"}
_CUDA_PRELUDE = """#ifdef __CUDACC_RTC__
__device__ float tf_h2f(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ unsigned short tf_f2h(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
#endif
"""


def cuda_type(dtype: DType) -> str:
    """The element type a CUDA kernel's buffer of dtype has."""
    return CUDA.storage[dtype]


def _cuda_header(name: str, params: list[tuple[int, str, bool]], n: int) -> str:
    args = ", ".join(f"{'' if out else 'const '}{t}* __restrict__ data{i}"
                     for i, t, out in params)
    return f'extern "C" __global__ void {name}({args}) {{'


def _cuda_math(name: str) -> Template:
    return lambda dt, a: f"{name}({a[0]})" if dt == dtypes.float64 else f"{name}f({a[0]})"


CUDA = Language(
    name="CUDA", types=_CUDA_TYPES,
    storage={**_CUDA_TYPES, dtypes.float16: "unsigned short"},
    kernel_header=_cuda_header, thread_id="(int)(blockIdx.x*blockDim.x+threadIdx.x)",
    decl=lambda t, n, v, mutable: f"{t} {n} = {v};",
    loop=lambda v, size: f"for (int {v} = 0; {v} < {size}; {v}++) {{",
    const=lambda v, dt: c_const(v, dt, "f", "__int_as_float(0x7f800000)",
                                "__int_as_float(0x7fc00000)"),
    load=lambda buf, i, dt: f"tf_h2f({buf}[{i}])" if dt == dtypes.float16 else f"{buf}[{i}]",
    store=lambda buf, i, v, dt: (f"{buf}[{i}] = tf_f2h({v});" if dt == dtypes.float16 else
                                 f"{buf}[{i}] = {v};"),
    ops={Ops.EXP2: _cuda_math("exp2"), Ops.LOG2: _cuda_math("log2"), Ops.SIN: _cuda_math("sin"),
         Ops.SQRT: _cuda_math("sqrt"), Ops.TRUNC: _cuda_math("trunc"),
         Ops.RECIPROCAL: lambda dt, a: f"(({_CUDA_TYPES[dt]})1/{a[0]})",
         Ops.CAST: lambda dt, a: f"({a[0]}!=0)" if dt.is_bool else
         f"(({_CUDA_TYPES[dt]}){a[0]})"},
    prelude=_CUDA_PRELUDE,
)


# --- WGSL ---
_WGSL_TYPES = {dtypes.bool: "bool", dtypes.int8: "i32", dtypes.uint8: "i32",
               dtypes.int16: "i32", dtypes.int32: "i32", dtypes.float32: "f32"}
WIDENED = frozenset({dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16})  # kept as i32


def _wgsl_const(value: Any, dtype: DType) -> str:
    if dtype.is_bool:
        return "true" if value else "false"
    if dtype.is_int:
        return f"({int(value)}i)" if value != -2**31 else "i32(-2147483648)"
    if math.isnan(value) or math.isinf(value):
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        return f"bitcast<f32>({bits}u)"
    return f"{float(value)!r}f"


def _wgsl_header(name: str, params: list[tuple[int, str, bool]], n: int) -> str:
    binds = "\n".join(f"@group(0) @binding({i}) var<storage, {'read_write' if out else 'read'}> "
                      f"data{i}: array<{t}>;" for i, t, out in params)
    return (f"{binds}\n@compute @workgroup_size({WORKGROUP})\n"
            f"fn {name}(@builtin(global_invocation_id) tf_id: vec3<u32>) {{")


def _wgsl_cast(dt: DType, a: list[str]) -> str:
    return f"{_WGSL_TYPES[dt]}({a[0]})"  # bool(x) is x != 0; i32(f) truncates


WGSL = Language(
    name="WEBGPU", types=_WGSL_TYPES, storage={**_WGSL_TYPES, dtypes.bool: "i32"},
    kernel_header=_wgsl_header,
    thread_id=f"i32(tf_id.x + tf_id.y * {MAX_GROUPS * WORKGROUP}u)",
    decl=lambda t, n, v, mutable: f"{'var' if mutable else 'let'} {n}: {t} = {v};",
    loop=lambda v, size: f"for (var {v}: i32 = 0; {v} < {size}; {v}++) {{",
    const=_wgsl_const,
    load=lambda buf, i, dt: f"({buf}[{i}] != 0)" if dt.is_bool else f"{buf}[{i}]",
    store=lambda buf, i, v, dt: (f"{buf}[{i}] = select(0, 1, {v});" if dt.is_bool else
                                 f"{buf}[{i}] = {v};"),
    ternary=lambda c, a, b: f"select({b}, {a}, {c})",
    ops={Ops.NEG: lambda dt, a: f"(!{a[0]})" if dt.is_bool else f"(-{a[0]})",
         Ops.EXP2: lambda dt, a: f"exp2({a[0]})", Ops.LOG2: lambda dt, a: f"log2({a[0]})",
         Ops.SIN: lambda dt, a: f"sin({a[0]})", Ops.SQRT: lambda dt, a: f"sqrt({a[0]})",
         Ops.TRUNC: lambda dt, a: f"trunc({a[0]})",
         Ops.RECIPROCAL: lambda dt, a: f"(1.0f/{a[0]})",
         Ops.MAX: lambda dt, a: f"select({a[1]}, {a[0]}, ({a[0]}>{a[1]}) || ({a[0]}!={a[0]}))",
         Ops.MOD: lambda dt, a: (f"({a[0]} % {a[1]})" if dt.is_float else
                                 f"select({a[0]} % {a[1]}, 0i, {a[1]}==0i)"),
         Ops.IDIV: lambda dt, a: f"select({a[0]} / {a[1]}, 0i, {a[1]}==0i)",
         Ops.XOR: lambda dt, a: f"({a[0]}!={a[1]})" if dt.is_bool else f"({a[0]}^{a[1]})",
         Ops.WHERE: lambda dt, a: f"select({a[2]}, {a[1]}, {a[0]})",
         Ops.CAST: _wgsl_cast},
    int_type="i32",
)


def render_language(prog: Program, lang: Language) -> str:
    """The program in lang: global loops become this thread's element, the rest as in C."""
    names: dict[int, str] = {}
    params = []
    for i in prog.params:
        number, is_output = prog.steps[i].arg
        dtype = prog.steps[i].dtype
        if dtype not in lang.storage:
            raise NotSupportedError(f"{dtype.name} is not supported on {lang.name}")
        names[i] = f"data{number}"
        params.append((number, lang.storage[dtype], is_output))
    total = 1
    for size in prog.global_size:
        total *= size
    lines = [lang.prelude + lang.kernel_header(prog.name, params, total)]
    lines.append("  " + lang.decl(lang.int_type, "gid", lang.thread_id, False))
    lines.append(f"  if (gid >= {total}) {{ return; }}")
    globals_ = [s.arg for s in prog.steps if s.op is LOps.LOOP and s.arg[0].startswith("gidx")]
    stride = total
    for var, size in globals_:
        stride //= size
        lines.append("  " + lang.decl(lang.int_type, var, f"((gid / {stride}) % {size})", False))
    depth = 1
    for i, step in enumerate(prog.steps):
        pad = "  " * depth
        if step.op in (LOps.PARAM,):
            continue
        if step.op is LOps.LOOP:
            if step.arg[0].startswith("gidx"):
                continue
            lines.append(pad + lang.loop(*step.arg))
            depth += 1
        elif step.op is LOps.ENDLOOP:
            if depth == 1:
                continue  # the end of a global loop: the thread's work is done
            depth -= 1
            lines.append("  " * depth + "}")
        elif step.op is LOps.CONST:
            names[i] = lang.const(step.arg, step.dtype)
        elif step.op is LOps.VALID:
            names[i] = f"v{i}"
            lines.append(pad + lang.decl(lang.type_of(dtypes.bool), names[i], step.arg.render(),
                                         False))
        elif step.op is LOps.LOAD:
            index, valid = step.arg
            read = lang.load(names[step.src[0]], index.render(), step.dtype)
            if not (valid.is_const and valid.vmin == 1):
                read = lang.ternary(valid.render(), read, lang.const(0, step.dtype))
            names[i] = f"v{i}"
            lines.append(pad + lang.decl(lang.type_of(step.dtype), names[i], read, False))
        elif step.op is LOps.ALU:
            expr = lang.op(step.arg, step.dtype, [names[s] for s in step.src])
            names[i] = f"v{i}"
            lines.append(pad + lang.decl(lang.type_of(step.dtype), names[i], expr, False))
        elif step.op is LOps.ACC:
            names[i] = f"acc{i}"
            lines.append(pad + lang.decl(lang.type_of(step.dtype), names[i],
                                         lang.const(step.arg, step.dtype), True))
        elif step.op is LOps.UPDATE:
            acc, value = names[step.src[0]], names[step.src[1]]
            lines.append(f"{pad}{acc} = {lang.op(step.arg, step.dtype, [acc, value])};")
        elif step.op is LOps.STORE:
            lines.append(pad + lang.store(names[step.src[0]], step.arg.render(),
                                          names[step.src[1]], step.dtype))
    lines.append("}")
    return "\n".join(lines) + "\n"


def program_of(item: Any) -> Program:
    return lower(Kernel.from_ast(item.ast, item.name))


def render_gpu(item: Any, lang: Language) -> str:
    """The source of a scheduled kernel in a GPU language."""
    return render_language(program_of(item), lang)


def launch_size(item: Any) -> int:
    """How many threads a kernel runs: one per output element (no lowering needed to know)."""
    return max(item.output.numel, 1)


def wgsl_groups(item: Any) -> tuple[int, int]:
    """Workgroups to dispatch, spread over two dimensions past WebGPU's per-dimension limit."""
    groups = -(-launch_size(item) // WORKGROUP)
    return (min(groups, MAX_GROUPS), -(-groups // MAX_GROUPS))
