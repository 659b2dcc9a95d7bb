# Exercises of chapter 08, generated from tinyfw/renderer/wgsl.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/08_webgpu
# generated text id: 11fbd668763c6a3f (lets tools.generate tell your edits apart)
"""WGSL, WebGPU's shading language: typed declarations, no pointers, buffers as bindings. What
differs from C is written here; the walk over the program is CStyleLanguage.render (chapter 05)."""
from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from tinyfw.codegen.lower import LOps, Program, Step
from tinyfw.dtype import DType, dtypes
from tinyfw.helpers import prod
from tinyfw.renderer.base import launch_size
from tinyfw.renderer.base import NotSupportedError
from tinyfw.renderer.cstyle import OP_TEMPLATES, CStyleLanguage, Template
from tinyfw.uop.ops import Ops

WORKGROUP = 64       # invocations per workgroup
MAX_GROUPS = 65535   # WebGPU's limit on workgroups along one dimension

# WGSL has 32-bit scalars only (f16 is an optional feature): no float64, int64 or uint64, and
# no 8- or 16-bit integers. Narrow integers and bools compute and are stored as i32. (bfloat16
# reaches the renderer as float32 and uint16: tinyfw/codegen/emulate.py.)
WGSL_TYPES: dict[DType, str] = {
    dtypes.bool: "bool", dtypes.int8: "i32", dtypes.uint8: "i32", dtypes.int16: "i32",
    dtypes.uint16: "i32", dtypes.int32: "i32", dtypes.uint32: "u32", dtypes.float32: "f32"}
WIDENED = frozenset({dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16})
# the mask that wraps a widened unsigned result to its width (uint8 200 + 100 is 44)
UNSIGNED_MASKS = {dtypes.uint8: "255i", dtypes.uint16: "65535i"}


def zero(dt: DType) -> str:
    """0 of an integer dtype, as WGSL writes it (u32 and i32 literals differ)."""
    return "0u" if dt == dtypes.uint32 else "0i"


def _builtin(name: str) -> Template:
    return lambda dt, a: f"{name}({a[0]})"


def is_nan(x: str) -> str:
    """Whether the f32 x is NaN, read from its bits: its exponent bits all ones and its mantissa
    not zero, so its bits without the sign above 0x7f800000 (infinity). C's `x != x` does not
    work here: WGSL's `!=` of floats is an ordered comparison (naga writes OpFOrdNotEqual),
    false when either side is NaN, and WGSL lets a compiler assume no value is NaN anyway."""
    return f"((bitcast<u32>({x}) & 0x7fffffffu) > 0x7f800000u)"


# A step of wgsl_program's own, not an op of tinyfw's: the same f32, hidden from the compiler.
HIDE = "HIDE"


def hidden(x: str) -> str:
    """The f32 x, bit for bit, as a value the compiler cannot see into: its bits or'ed with
    tf_id.z, the z of the global invocation id, which is 0 (tinyfw dispatches one layer of
    workgroups) but only known when the shader runs.

    Why: naga writes no SPIR-V float controls (no SignedZeroInfNanPreserve execution mode, no
    NoContraction), and without them Mesa's NIR optimizer, which lavapipe runs on every shader,
    may rewrite float expressions as if no value were NaN, infinite or -0.0: x*0 becomes 0,
    x + -x becomes 0, x + 0 becomes x, exp2(log2(x)) becomes x, sqrt(x)*sqrt(x) becomes x,
    (a+b)-b becomes a. Those rewrites match on the expression an operand comes from (or on a
    constant operand); an operand that comes out of an integer `|` with an unknown matches
    none. wgsl_program hides float operands this way (hide_float_operands says which)."""
    return f"bitcast<f32>(bitcast<u32>({x}) | tf_id.z)"


def _log2(dt: DType, a: list[str]) -> str:
    """log2 that is right for positive denormals, which lavapipe's log2 takes for 2**-127: a
    denormal is its mantissa bits m times 2**-149, so its log2 is log2(f32(m)) - 149 (m, an
    integer below 2**23, converts exactly)."""
    bits = f"bitcast<u32>({a[0]})"
    denormal = f"({bits} != 0u && ({bits} & 0xff800000u) == 0u)"
    return f"select(log2({a[0]}), log2(f32({bits})) - 149.0f, {denormal})"


def _exp2(dt: DType, a: list[str]) -> str:
    """exp2 that gives denormals below 2**-126, which lavapipe's exp2 flushes to 0: the power
    of a number 64 larger, times 2**-64 (exact: a power of two)."""
    return f"select(exp2({a[0]}), exp2({a[0]} + 64.0f) * 5.421010862427522e-20f, " \
           f"{a[0]} < -126.0f)"


# tf_sin_huge: sin of an f32 whose magnitude is 2**23 or more (an integer), where lavapipe's sin
# reduces the argument inexactly (off by 4e-5 at 1.6e7, by anything past 1e8). Such an x is
# m * 2**s, m an integer of 24 bits and 0 <= s <= 104. Its angle in turns, x / 2pi, has an
# integer part that sin ignores, and its fraction needs only the bits of 1/2pi from s + 1 on
# (Payne and Hanek's reduction): 64 of them, w0 and w1, give the first 32 bits of the fraction,
# m * w0 + the high word of m * w1, mod 2**32. Read as an i32, those are turns in [-1/2, 1/2),
# and sin of that angle is the answer (within 3e-7). b holds the first 192 bits of 1/2pi; WGSL
# has no u64, so tf_mulhi builds the high word of a 32-bit product from 16-bit halves.
SIN_HELPERS = """fn tf_mulhi(u: u32, v: u32) -> u32 {
  let lo = (u & 0xffffu) * (v & 0xffffu);
  let m1 = (u >> 16u) * (v & 0xffffu);
  let m2 = (u & 0xffffu) * (v >> 16u);
  let mid = (lo >> 16u) + (m1 & 0xffffu) + (m2 & 0xffffu);
  return (u >> 16u) * (v >> 16u) + (m1 >> 16u) + (m2 >> 16u) + (mid >> 16u);
}
fn tf_sin_huge(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  let e = (bits >> 23u) & 0xffu;
  if (e < 150u || e == 255u) { return sin(x); }
  let s = e - 150u;
  let m = (bits & 0x7fffffu) | 0x800000u;
  var b = array<u32, 6>(0x28be60dbu, 0x9391054au, 0x7f09d5f4u, 0x7d4d3770u, 0x36d8a566u,
                        0x4f10e410u);
  let q = s / 32u;
  let r = s % 32u;
  let w0 = select((b[q] << r) | (b[q + 1u] >> (32u - r)), b[q], r == 0u);
  let w1 = select((b[q + 1u] << r) | (b[q + 2u] >> (32u - r)), b[q + 1u], r == 0u);
  let turns = bitcast<i32>(m * w0 + tf_mulhi(m, w1));
  let y = sin(f32(turns) * 1.4629180792671596e-09f);
  return select(y, -y, bits >= 0x80000000u);
}
"""


def _mod(dt: DType, a: list[str]) -> str:
    """C's % of integers, with tinyfw's rule for a zero divisor (0). WGSL's % of floats is
    x - y * trunc(x / y) on lavapipe, wrong for an infinite divisor, a denormal one or a large
    quotient: not C's fmod, so refused."""
    if dt.is_float:
        raise NotSupportedError(f"MOD of {dt.name} (C's fmod) is not supported on WEBGPU: WGSL's "
                                "% of floats is not exact")
    return f"select({a[0]} % {a[1]}, {zero(dt)}, {a[1]}=={zero(dt)})"


def _max(dt: DType, a: list[str]) -> str:
    """max(a, b) that returns a NaN from either side, as numpy's maximum does (a > b is false
    when b is NaN). WGSL's built-in max() need not: lavapipe's gives the other side."""
    if dt.is_bool:
        return f"({a[0]}||{a[1]})"  # WGSL does not order bools
    if dt.is_int:
        return f"max({a[0]}, {a[1]})"
    return f"select({a[1]}, {a[0]}, {is_nan(a[0])} || ({a[0]}>{a[1]}))"


def _cmpne(dt: DType, a: list[str]) -> str:
    """a != b. Its operands are floats where they are the same value (wgsl_program makes every
    other x != x false), and that is the NaN test."""
    return is_nan(a[0]) if a[0] == a[1] else f"({a[0]}!={a[1]})"


# lavapipe's sin is accurate only for small |x| (5.8 ulp at 3 pi, hundreds of ulps near the
# zeros around 500, absolute errors of 1e-4 at 3e7): tf_sin reduces x by pi/2 first, as
# x - k (C1 + ... + C6) with C1..C5 of 8 bits each, so that each k * Ci is exact for |k| < 2**16
# (|x| < 1e5), and takes sin or cos of the remainder, |r| <= pi/4. From 2**23 on, tf_sin_huge's
# exact reduction (above); between 1e5 and 2**23 (and for nan, inf and +-0, whose sign the
# reduction would lose) the built-in sin.
TF_SIN = SIN_HELPERS + """fn tf_sin(x: f32) -> f32 {
  if (!(abs(x) < 100000.0f) || x == 0.0f) { return tf_sin_huge(x); }
  let k = round(x * 0.63661977236758134f);
  var r = (x - k * 1.5703125f) - k * 0.0004825592041015625f;
  r = ((r - k * 1.2665987014770508e-06f) - k * 9.89530235528946e-10f) - k * 2.5579538487363607e-12f;
  r = r - k * 5.390302953474238e-15f;
  let q = i32(k) & 3;
  let v = select(sin(r), cos(r), (q & 1) == 1);
  return select(v, -v, q >= 2);
}
"""


class WGSLLanguage(CStyleLanguage):
    """WGSL. Its `?:` is select(if_false, if_true, cond); integer division by zero is
    defined (it gives the dividend), so tinyfw's rule (0) is written out with select."""

    name = "WEBGPU"
    types: ClassVar[dict[DType, str]] = WGSL_TYPES
    storage: ClassVar[dict[DType, str]] = {**WGSL_TYPES, dtypes.bool: "i32"}
    ops: ClassVar[dict[Ops, Template]] = {
        **OP_TEMPLATES,
        Ops.EXP2: _exp2, Ops.LOG2: _log2, Ops.SIN: _builtin("tf_sin"),
        Ops.SQRT: _builtin("sqrt"), Ops.TRUNC: _builtin("trunc"),
        Ops.RECIPROCAL: lambda dt, a: f"(1.0f/{a[0]})",
        Ops.MAX: _max, Ops.CMPNE: _cmpne,
        Ops.MOD: _mod,
        Ops.IDIV: lambda dt, a: f"select({a[0]} / {a[1]}, {zero(dt)}, {a[1]}=={zero(dt)})",
        Ops.NEG: lambda dt, a: (f"(!{a[0]})" if dt.is_bool else f"(0u-{a[0]})"
                                if dt == dtypes.uint32 else f"(-{a[0]})"),
        Ops.MUL: lambda dt, a: f"({a[0]}&&{a[1]})" if dt.is_bool else f"({a[0]}*{a[1]})",
        # 32 bits read as another 32-bit type; a widened type's bits are its i32's, wrapped by op
        Ops.BITCAST: lambda dt, a: (f"i32({a[0]})" if dt in WIDENED else
                                    f"bitcast<{WGSL_TYPES[dt]}>({a[0]})"),
        Ops.XOR: lambda dt, a: f"({a[0]}!={a[1]})" if dt.is_bool else f"({a[0]}^{a[1]})",
        Ops.WHERE: lambda dt, a: f"select({a[2]}, {a[1]}, {a[0]})",
        Ops.CAST: lambda dt, a: f"{WGSL_TYPES[dt]}({a[0]})"}  # bool(x): x != 0; i32(f) truncates
    prelude = ""
    int_type = "i32"
    has_threads = True
    has_workgroups = True
    has_float64 = False
    has_fmod = False  # (WGSL's % of floats is x - y * trunc(x / y): _mod)
    has_int64_index = False  # (WGSL has 32-bit ints only)
    in_place = False  # (a buffer bound read_write may not also be bound read)
    max_reduce = 65535  # lavapipe ends a shader after 65535 loop iterations in all, silently
    # (max_buffers: the WEBGPU device's limit, set on its copy of WGSL: ops_webgpu.py)
    fold: Fold | None = None  # constants' values (wgsl_program); the WEBGPU device sets it

    def render(self, prog: Program) -> str:
        """The shared walk (CStyleLanguage.render) over the program as wgsl_program rewrites it,
        after tf_sin where the kernel takes a sine; NotSupportedError for a kernel whose
        indices need 64 bits, which WGSL does not have."""
        if prog.index_dtype != dtypes.int32 and not self.has_int64_index:
            iterations = prod(s.arg[1] for s in prog.steps if s.op is LOps.LOOP)
            raise NotSupportedError(
                f"kernel {prog.name} ({iterations} iterations) needs indices past 2**31 - 1: "
                f"64-bit indices are not supported on {self.name} (WGSL has no 64-bit ints)")
        source = super().render(wgsl_program(prog, self.fold))
        if prog.workgroup is not None:
            source = with_workgroup(source, prog.workgroup)
        return TF_SIN + source if "tf_sin(" in source else source

    # chapter 11's work-groups: the group and the thread in it from the global invocation id,
    # in a dispatch of exactly the program's groups (workgroup_dispatch)
    def workgroup_index(self, which: str, workgroup: tuple[int, int]) -> str:
        threads, across = workgroup[1], workgroup_dispatch(workgroup[0])[0]
        if which == "local":
            return f"i32(tf_id.x % {threads}u)"
        return f"i32(tf_id.x / {threads}u + tf_id.y * {across}u)"

    def local_array(self, name: str, type_: str, size: int) -> str:
        return f"var<workgroup> {name}: array<{type_}, {size}>;"  # (moved to the module's scope)

    def barrier(self) -> str:
        return "workgroupBarrier();"

    def op(self, op: Ops | str, dtype: DType, args: list[str]) -> str:
        """Narrow integers compute in i32, so a result is wrapped to its own width (uint8 200 +
        100 is 44, as in numpy): masked to 8 bits, or shifted up and back to keep the sign.
        HIDE (a step of wgsl_program) is the float operand, hidden from the compiler."""
        if op == HIDE:
            return hidden(args[0])
        assert isinstance(op, Ops)
        if op is Ops.ADD and dtype == dtypes.float32 and args[0].startswith("acc"):
            # A sum's UPDATE, `acc = acc + v`: the accumulator (the walk names it acc<i>) cannot
            # be a HIDE step, being the variable assigned, so it is hidden here. Else, where NIR
            # unrolls the loop, 0.0 + v becomes v, and a sum of -0.0 stays -0.0 (C's is 0.0).
            # (A max starting at -inf folds to v, which is right.)
            args = [hidden(args[0])] + args[1:]
        expr = super().op(op, dtype, args)
        if dtype in UNSIGNED_MASKS:
            return f"({expr} & {UNSIGNED_MASKS[dtype]})"
        if dtype in (dtypes.int8, dtypes.int16):
            shift = 32 - 8 * dtype.itemsize
            return f"(({expr} << {shift}u) >> {shift}u)"
        return expr

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


# The value of an ALU op (or CAST) of constants, of the given dtype, or None where it cannot
# tell: a device's own rules (the WEBGPU device gives NUMPY's: runtime/ops_webgpu.py).
Fold = Callable[[Ops, DType, list[tuple[Any, DType]]], Any]


def wgsl_program(prog: Program, fold: Fold | None = None) -> Program:
    """The program rewritten into steps that WGSL accepts and that keep NaN honest:

    - WGSL evaluates an expression of constants when it creates the shader, and rejects one that
      is infinite or NaN (`1.0f/0.0f`, `log2(0.0f)`): an ALU step whose operands are all
      constants becomes a CONST, computed by fold (the device's rules; its literal is then the
      bits). A validity known in advance becomes `true` or `false` (WGSL's bool is not 0 or
      1), a load that is never valid its 0, and a `where` of a known condition the chosen side.
      A reduce over an empty axis leaves its accumulator a constant: its start.
    - WGSL does not order bools: a < b of bools is where(a, false, b).
    - `!=` of floats is false when either side is NaN (an ordered comparison, unlike C's):
      a != b of floats also tests both sides for NaN, and x != x of ints and bools is false, so
      that the template's x != x is always the NaN test on the bits (`is_nan`). (`<` is
      ordered too, which is right: a comparison with NaN is false.)

    Each kind of step is rewritten by its function in REWRITES (a kind not there is copied as
    it is). Steps of a dtype WGSL lacks are left as they are: rendering them says so."""
    rewrite = Rewrite(Program(prog.name, global_size=prog.global_size, workgroup=prog.workgroup),
                      fold)
    empty = 0  # how deep inside a loop that runs no iteration (a reduce of an empty axis)
    for i, step in enumerate(prog.steps):
        if empty or (step.op is LOps.LOOP and step.arg[1] == 0):
            empty += (step.op is LOps.LOOP) - (step.op is LOps.ENDLOOP)
            if step.op is LOps.UPDATE:  # never runs: the accumulator keeps its first value
                rewrite.keep_start(rewrite.new[step.src[0]])
            continue
        src = tuple(rewrite.new[s] for s in step.src)
        rewrite.new[i] = REWRITES.get(step.op, copied)(rewrite, step, src)
    out = rewrite.out
    out.params = [rewrite.new[p] for p in prog.params]
    return hide_float_operands(out)


class Rewrite:
    """A program being rewritten for WGSL (wgsl_program): the steps written so far (out), the
    step of out that gives the value of each step of the original (new), and the device's rules
    for folding constants."""

    def __init__(self, out: Program, fold: Fold | None) -> None:
        self.out, self.fold = out, fold
        self.new: dict[int, int] = {}

    def const(self, value: Any, dtype: DType) -> int:
        """A CONST step of value."""
        return self.out.add(LOps.CONST, dtype, (), value)

    def is_const(self, i: int) -> bool:
        """Whether step i of out is a CONST."""
        return self.out.steps[i].op is LOps.CONST

    def keep_start(self, acc: int) -> None:
        """The accumulator at step acc of out made a CONST of its start (its loop never runs)."""
        step = self.out.steps[acc]
        self.out.steps[acc] = Step(LOps.CONST, step.dtype, (), step.arg)

    def alu(self, op: Ops, dtype: DType, src: tuple[int, ...]) -> int:
        """An ALU step of operands already in out, folded when they are all constants."""
        out, fold = self.out, self.fold
        srcs = [out.steps[s] for s in src]
        if fold is not None and all(s.op is LOps.CONST for s in srcs) \
                and all(d in WGSL_TYPES for d in [dtype] + [s.dtype for s in srcs]) \
                and (value := fold(op, dtype, [(s.arg, s.dtype) for s in srcs])) is not None:
            return self.const(value, dtype)
        if op is Ops.WHERE and self.is_const(src[0]):
            return src[1] if out.steps[src[0]].arg else src[2]
        return out.add(LOps.ALU, dtype, src, op)

    def compare(self, op: Ops, a: int, b: int) -> int:
        """a < b or a != b as WGSL computes them the way C does (see wgsl_program)."""
        operand = self.out.steps[a].dtype
        if op is Ops.CMPLT and operand.is_bool:
            return self.alu(Ops.WHERE, dtypes.bool, (a, self.const(False, dtypes.bool), b))
        if op is Ops.CMPNE and a == b and not operand.is_float:
            return self.const(False, dtypes.bool)
        nan_test = op is Ops.CMPNE and a != b and operand.is_float
        if nan_test and any(self.is_const(x) and math.isnan(self.out.steps[x].arg)
                            for x in (a, b)):
            return self.const(True, dtypes.bool)
        result = self.alu(op, dtypes.bool, (a, b))
        for x in (a, b) if nan_test else ():
            if not self.is_const(x):
                result = self.alu(Ops.OR, dtypes.bool,
                                  (result, self.alu(op, dtypes.bool, (x, x))))
        return result

    def to_int(self, dtype: DType, x: int) -> int:
        """A float cast to an integer. One out of int32's range (NaN, the infinities, 2**31 and
        more) has no value in C; WGSL clamps it, x86 (so the CPU, NUMPY and CL devices, and
        torch, on x86) gives -2**31 (wrapped to a narrow dtype: 0), and so does this."""
        alu, const = self.alu, self.const
        in_range = alu(Ops.AND, dtypes.bool, (
            alu(Ops.CMPLT, dtypes.bool, (x, const(2.0**31, dtypes.float32))),
            alu(Ops.CMPLT, dtypes.bool, (const(-2147483904.0, dtypes.float32), x))))  # >= -2**31
        outside = np.array([-2**31], np.int32).astype(dtype.np)[0].item()
        return alu(Ops.WHERE, dtype, (in_range, alu(Ops.CAST, dtype, (x,)), const(outside, dtype)))


def copied(rewrite: Rewrite, step: Step, src: tuple[int, ...]) -> int:
    """The step as it is, its operands those of out."""
    return rewrite.out.add(step.op, step.dtype, src, step.arg)


def rewritten_valid(rewrite: Rewrite, step: Step, src: tuple[int, ...]) -> int:
    """A VALID: `true` or `false` where it is known in advance (WGSL's bool is not 0 or 1)."""
    if step.arg.is_const:
        return rewrite.const(bool(step.arg.vmin), dtypes.bool)
    return copied(rewrite, step, src)


def rewritten_load(rewrite: Rewrite, step: Step, src: tuple[int, ...]) -> int:
    """A LOAD: its 0 where it is never valid."""
    valid = step.arg[1]
    if valid.is_const and valid.vmin == 0:
        return rewrite.const(0, step.dtype)
    return copied(rewrite, step, src)


def rewritten_alu(rewrite: Rewrite, step: Step, src: tuple[int, ...]) -> int:
    """An ALU: a comparison as C's (Rewrite.compare), a float32 cast to an integer as x86's
    (Rewrite.to_int), any other op folded where its operands are constants (Rewrite.alu)."""
    if step.arg in (Ops.CMPLT, Ops.CMPNE):
        return rewrite.compare(step.arg, *src)
    if step.arg is Ops.CAST and step.dtype.is_int and \
            rewrite.out.steps[src[0]].dtype == dtypes.float32 and not rewrite.is_const(src[0]):
        return rewrite.to_int(step.dtype, src[0])
    return rewrite.alu(step.arg, step.dtype, src)


# How wgsl_program rewrites each kind of step: a function of the rewrite, the step and its
# operands' steps in out, giving the step of out that holds its value. A kind not here is
# copied as it is; a new kind of step that WGSL needs written otherwise is one more entry.
REWRITES: dict[LOps, Callable[[Rewrite, Step, tuple[int, ...]], int]] = {
    LOps.VALID: rewritten_valid, LOps.LOAD: rewritten_load, LOps.ALU: rewritten_alu}


def hide_float_operands(prog: Program) -> Program:
    """The program with every f32 operand of an ALU op (and the value of an UPDATE) read
    through a HIDE step (see `hidden`), except plain loads, and the two sides of a `where`: an
    exact choice, and hiding them would let NIR match `where(a < b, a, b)` as min(a, b), which
    drops NaN. (The accumulator of an UPDATE is hidden by WGSLLanguage.op.) A value
    is hidden once per loop body it is used in (where the HIDE step is visible), and an
    accumulator again after each UPDATE (its value changed)."""
    out = Program(prog.name, global_size=prog.global_size, workgroup=prog.workgroup)
    new: dict[int, int] = {}
    scopes: list[dict[int, int]] = [{}]  # per open loop: value of out -> its HIDE step

    def hide(x: int) -> int:
        for scope in scopes:
            if x in scope:
                return scope[x]
        scopes[-1][x] = out.add(LOps.ALU, out.steps[x].dtype, (x,), HIDE)
        return scopes[-1][x]

    def needs_hiding(x: int) -> bool:
        """An f32 that NIR could see into: not a plain load (a value from memory is as opaque as
        a HIDE step; a masked load is a select of it and 0.0)."""
        step = out.steps[x]
        plain_load = step.op is LOps.LOAD and step.arg[1].is_const and step.arg[1].vmin == 1
        return step.dtype == dtypes.float32 and not plain_load

    def hidden_srcs(step: Step, src: tuple[int, ...]) -> tuple[int, ...]:
        if step.op is LOps.UPDATE:  # `acc = op(acc, value)`: acc must stay the variable
            return (src[0], hide(src[1]) if needs_hiding(src[1]) else src[1])
        keep = 1 if step.arg is Ops.WHERE else len(src)  # where: the condition only
        return tuple(hide(s) if k < keep and needs_hiding(s) else s for k, s in enumerate(src))

    for i, step in enumerate(prog.steps):
        src = tuple(new[s] for s in step.src)
        if step.op in (LOps.ALU, LOps.UPDATE):
            src = hidden_srcs(step, src)
        new[i] = out.add(step.op, step.dtype, src, step.arg)
        if step.op in (LOps.LOOP, LOps.IF):
            scopes.append({})
        elif step.op in (LOps.ENDLOOP, LOps.ENDIF):
            scopes.pop()
        elif step.op is LOps.UPDATE:
            for scope in scopes:
                scope.pop(src[0], None)
    out.params = [new[p] for p in prog.params]
    return out


def with_workgroup(source: str, workgroup: tuple[int, int]) -> str:
    """A shader of work-groups (chapter 11): its workgroup size its own, and its arrays of
    workgroup memory declared at the module's scope, where WGSL wants them."""
    lines = source.split("\n")
    shared = [line.strip() for line in lines if line.strip().startswith("var<workgroup>")]
    body = "\n".join(line for line in lines if not line.strip().startswith("var<workgroup>"))
    body = body.replace(f"@workgroup_size({WORKGROUP})", f"@workgroup_size({workgroup[1]})", 1)
    return "".join(line + "\n" for line in shared) + body


def workgroup_dispatch(groups: int) -> tuple[int, int]:
    """(x, y) workgroups, exactly `groups` of them (a shader with a barrier sends no thread
    home early), at most MAX_GROUPS along each; NotSupportedError where no such pair exists."""
    for rows in range(-(-groups // MAX_GROUPS), min(groups, MAX_GROUPS) + 1):
        if groups % rows == 0:
            return groups // rows, rows
    raise NotSupportedError(f"{groups} work-groups are not a grid of at most {MAX_GROUPS} x "
                            f"{MAX_GROUPS} on WEBGPU")


def wgsl_groups(item: Any) -> tuple[int, int]:
    """Workgroups to dispatch, spread over two dimensions past WebGPU's per-dimension limit."""
    # TODO 08.pipeline: write this part. The chapter explains it:
    #   chapters/08_webgpu/README.md#running-a-shader
    raise NotImplementedError("not done yet: 08.pipeline")
