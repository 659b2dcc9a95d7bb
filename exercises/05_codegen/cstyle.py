# Exercises of chapter 05, generated from tinyfw/renderer/cstyle.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/05_codegen
# generated text id: 674c0670e33314fa (lets tools.generate tell your edits apart)
"""Rendering a linear program as C, and the walk every C-like language shares: a language is a
class whose methods and tables say how it writes types, kernels, values, loads and stores."""
from __future__ import annotations

import copy
import functools
import math
import os
from collections.abc import Callable
from typing import Any, ClassVar

from tinyfw.codegen.lower import LOps, Program, Step
from tinyfw.codegen.fuse import MulAdd, Replace
from tinyfw.codegen.lower_opts import Broadcast, Lane, Pick
from tinyfw.renderer.base import NotSupportedError, Renderer
from tinyfw.dtype import DType, VectorDType, dtypes
from tinyfw.uop.ops import Ops

Template = Callable[[DType, list[str]], str]

C_TYPES: dict[DType, str] = {
    dtypes.bool: "bool", dtypes.int8: "signed char", dtypes.uint8: "unsigned char",
    dtypes.int16: "short", dtypes.int32: "int", dtypes.int64: "long long",
    dtypes.uint16: "unsigned short", dtypes.uint32: "unsigned int",
    dtypes.uint64: "unsigned long long",
    dtypes.float16: "_Float16", dtypes.float32: "float", dtypes.float64: "double",
}  # (no bfloat16: tinyfw/codegen/emulate.py computes it as float)


def _math(name: str) -> Template:
    """A libm call in the precision of dtype (float16 computes in float)."""
    def render(dtype: DType, a: list[str]) -> str:
        if dtype == dtypes.float64:
            return f"{name}({a[0]})"
        call = f"{name}f((float){a[0]})"
        return f"(_Float16){call}" if dtype == dtypes.float16 else call
    return render


# The unsigned type of the same width, per signed integer type that can trap in / and %.
C_UNSIGNED: dict[DType, str] = {dtypes.int32: "unsigned int", dtypes.int64: "unsigned long long"}


def safe_divisor(b: str) -> bool:
    """Whether b is an integer literal other than 0 and -1 (as render_const writes it: 16,
    (-3), 8U, 4LL), for which / and % need no guard (and clang warns of one on a constant)."""
    digits = b.strip("()").rstrip("UL")
    return digits.lstrip("-").isdigit() and int(digits) not in (0, -1)


def c_idiv(types: dict[DType, str], unsigned: dict[DType, str]) -> Template:
    """a / b of integers, rounding toward zero, that never traps: b == 0 gives 0 (tinyfw's rule),
    and b == -1 gives -a wrapped to the type (MIN / -1 is MIN, as torch gives), where C's
    MIN / -1 overflows, which x86 reports as SIGFPE like a division by zero. -a is taken in
    the unsigned type of the same width, where it wraps rather than being undefined; int8 and
    int16 promote to int in C, so their / cannot trap. types and unsigned: the language's type
    names, and its unsigned ones for the types that can trap."""
    def render(dt: DType, a: list[str]) -> str:
        if safe_divisor(a[1]):
            return f"({a[0]}/{a[1]})"
        if dt not in unsigned:
            return f"({a[1]}==0?0:{a[0]}/{a[1]})"
        negated = f"({types[dt]})(0-({unsigned[dt]}){a[0]})"
        return f"({a[1]}==0?0:{a[1]}==-1?{negated}:{a[0]}/{a[1]})"
    return render


def c_mod(dt: DType, a: list[str]) -> str:
    """a % b of integers, with the sign of a, that never traps: 0 where b is 0 (tinyfw's rule)
    or -1 (every remainder of a division by -1 is 0; C's MIN % -1 traps as MIN / -1 does)."""
    if safe_divisor(a[1]):
        return f"({a[0]}%{a[1]})"
    if dt in C_UNSIGNED:
        return f"(({a[1]}==0||{a[1]}==-1)?0:{a[0]}%{a[1]})"
    return f"({a[1]}==0?0:{a[0]}%{a[1]})"


def c_mul(dt: DType, a: list[str]) -> str:
    """a * b. uint16 operands promote to int in C, where 65535 * 65535 overflows (undefined):
    they multiply as unsigned int, which wraps."""
    if dt.is_bool:
        return f"({a[0]}&&{a[1]})"
    return f"((unsigned int){a[0]}*{a[1]})" if dt == dtypes.uint16 else f"({a[0]}*{a[1]})"


def c_bitcast(dt: DType, a: list[str]) -> str:
    """The bits of a (a variable of its own type: emulate.py folds constants) as dt, through a
    union, which C allows for reading one member's bytes as another's."""
    return f"((union {{ __typeof__({a[0]}) f; {C_TYPES[dt]} t; }}){{ .f = {a[0]} }}).t"


# One template per op: the dtype of the result and the operands' names give the C expression.
OP_TEMPLATES: dict[Ops, Template] = {
    Ops.NEG: lambda dt, a: f"(!{a[0]})" if dt.is_bool else f"(-{a[0]})",
    Ops.EXP2: _math("exp2"), Ops.LOG2: _math("log2"), Ops.SIN: _math("sin"),
    Ops.SQRT: _math("sqrt"), Ops.TRUNC: _math("trunc"),
    Ops.RECIPROCAL: lambda dt, a: f"(({C_TYPES[dt]})1/{a[0]})",
    Ops.ADD: lambda dt, a: f"({a[0]}||{a[1]})" if dt.is_bool else f"({a[0]}+{a[1]})",
    Ops.MUL: c_mul,
    Ops.MAX: lambda dt, a: (f"(({a[0]}>{a[1]}||{a[0]}!={a[0]})?{a[0]}:{a[1]})" if dt.is_float
                            else f"(({a[0]}>{a[1]})?{a[0]}:{a[1]})"),  # a != a: a is NaN
    Ops.MOD: lambda dt, a: (f"fmod({a[0]},{a[1]})" if dt.is_float else
                            c_mod(dt, a)),
    Ops.IDIV: c_idiv(C_TYPES, C_UNSIGNED),
    Ops.FDIV: lambda dt, a: f"({a[0]}/{a[1]})",  # IEEE division: correctly rounded
    Ops.CMPLT: lambda dt, a: f"({a[0]}<{a[1]})",
    Ops.CMPNE: lambda dt, a: f"({a[0]}!={a[1]})",
    Ops.AND: lambda dt, a: f"({a[0]}&{a[1]})",
    Ops.OR: lambda dt, a: f"({a[0]}|{a[1]})",
    Ops.XOR: lambda dt, a: f"({a[0]}^{a[1]})",
    Ops.WHERE: lambda dt, a: f"({a[0]}?{a[1]}:{a[2]})",
    Ops.CAST: lambda dt, a: f"({a[0]}!=0)" if dt.is_bool else f"(({C_TYPES[dt]}){a[0]})",
    Ops.BITCAST: c_bitcast,
}


INT_SUFFIXES = {dtypes.int64: "LL", dtypes.uint32: "U", dtypes.uint64: "ULL"}


def render_const(value: float | int | bool, dtype: DType) -> str:
    """A number as a C literal of dtype."""
    if dtype.is_bool:
        return "1" if value else "0"
    if dtype.is_int:
        if dtype == dtypes.int64 and value == dtypes.min(dtype):
            # -9223372036854775808LL would negate a constant too large for long long
            return f"({int(value) + 1}LL-1)"
        text = f"{int(value)}" + INT_SUFFIXES.get(dtype, "")
        return f"({text})" if value < 0 else text  # so that -x of it is not a decrement
    if math.isnan(value):
        text = "NAN"
    elif math.isinf(value):
        text = "INFINITY" if value > 0 else "-INFINITY"
    else:
        text = repr(float(value)) + ("f" if dtype != dtypes.float64 else "")
    return f"(({C_TYPES[dtype]}){text})"


class Walk:
    """A program being rendered, step by step: the text that stands for each step's value (its
    name: data0, v3, acc4, or a literal), the lines written so far, how deep the next is
    indented, and, per LOOP still open, whether it was written as a loop (a language with
    threads writes none for a global axis)."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.names: dict[int, str] = {}
        self.lines: list[str] = []
        self.depth = 1
        self.open_loops: list[bool] = []

    def line(self, text: str) -> None:
        """Adds a line of source, indented to the current depth."""
        self.lines.append("  " * self.depth + text)


class CStyleLanguage(Renderer):
    """C on the CPU, and the base of every C-like language: the tables (types, op templates)
    and the small methods below are what a language changes; render() is the walk they share.
    A language with threads (a GPU's; Renderer.has_threads) gives each output element its own
    thread: the global loops disappear and their indices come from the thread's id."""

    name = "CPU"
    types: ClassVar[dict[DType, str]] = C_TYPES      # a value's type
    storage: ClassVar[dict[DType, str]] = C_TYPES    # an element's type in memory
    ops: ClassVar[dict[Ops, Template]] = OP_TEMPLATES
    prelude: ClassVar[str] = "#include <math.h>\n#include <stdbool.h>\n"
    # The type of loop variables and thread indices: int, or (see with_index) the language's
    # 64-bit int for a kernel whose indices can pass 2**31 - 1.
    index_dtype: DType = dtypes.int32
    int_type: str = "int"
    # How each kind of step is written: the name of the method that writes it (render_step looks
    # it up on the language, so a subclass's own, or one swapped in, is the one used). A new
    # kind of step is one more entry, and its method.
    step_methods: ClassVar[dict[LOps, str]] = {
        LOps.PARAM: "param_step", LOps.LOOP: "loop_step", LOps.ENDLOOP: "endloop_step",
        LOps.CONST: "const_step", LOps.VALID: "valid_step", LOps.LOAD: "load_step",
        LOps.ALU: "alu_step", LOps.ACC: "acc_step", LOps.UPDATE: "update_step",
        LOps.STORE: "store_step",
        # chapter 11's work-groups (lower_groups.py): thread ids, local memory, a barrier
        LOps.SPECIAL: "workgroup_step", LOps.LOCAL: "workgroup_step",
        LOps.BARRIER: "workgroup_step", LOps.IF: "workgroup_step", LOps.ENDIF: "endif_step"}

    def type_of(self, dtype: DType) -> str:
        """The type of a value of dtype, or NotSupportedError."""
        if dtype not in self.types:
            raise NotSupportedError(f"{dtype.name} is not supported on {self.name}")
        return self.types[dtype]

    def buffer_type(self, dtype: DType) -> str:
        """The element type of a buffer of dtype, or NotSupportedError."""
        if dtype not in self.storage:
            raise NotSupportedError(f"{dtype.name} is not supported on {self.name}")
        return self.storage[dtype]

    def kernel_header(self, name: str, params: list[tuple[int, str, bool]]) -> str:
        """The kernel's first line; params are (buffer number, element type, is output)."""
        args = ", ".join(f"{'' if out else 'const '}{t}* restrict data{i}"
                         for i, t, out in params)
        return f"void {name}({args}) {{"

    def thread_index(self) -> str:
        """The flat index of the running thread (languages with threads only)."""
        raise NotSupportedError(f"{self.name} runs no threads")

    # --- chapter 11's work-groups (GPU languages): how workgroup_step writes their steps ---
    def workgroup_index(self, which: str, workgroup: tuple[int, int]) -> str:
        """The index of this thread's work-group ("group") or of the thread in its group
        ("local"), as an int, in a launch of workgroup = (groups, threads in each)."""
        raise NotSupportedError(f"{self.name} has no work-groups")

    def local_array(self, name: str, type_: str, size: int) -> str:
        """The declaration of an array of the work-group's local memory."""
        raise NotSupportedError(f"{self.name} has no work-groups")

    def barrier(self) -> str:
        """The statement where each thread waits until every thread of its group is there (and
        what they wrote to local memory is visible)."""
        raise NotSupportedError(f"{self.name} has no work-groups")

    def decl(self, type_: str, name: str, value: str, mutable: bool) -> str:
        """A statement declaring a variable (mutable: it is assigned again later)."""
        return f"{type_} {name} = {value};"

    def with_index(self, dtype: DType) -> CStyleLanguage:
        """This language with loop variables and thread indices of dtype (int64 for a kernel
        whose indices can pass 2**31 - 1), or NotSupportedError where it has no such type."""
        language = copy.copy(self)
        language.index_dtype, language.int_type = dtype, self.type_of(dtype)
        return language

    def loop(self, var: str, size: int) -> str:
        """The first line of `for var in range(size)`."""
        return f"for ({self.int_type} {var} = 0; {var} < {size}; {var}++) {{"

    def const(self, value: Any, dtype: DType) -> str:
        """A literal of dtype."""
        return render_const(value, dtype)

    def load(self, buf: str, index: str, dtype: DType) -> str:
        """An expression reading element index of buffer buf."""
        return f"{buf}[{index}]"

    def store(self, buf: str, index: str, value: str, dtype: DType) -> str:
        """A statement writing value to element index of buffer buf."""
        return f"{buf}[{index}] = {value};"

    def ternary(self, cond: str, a: str, b: str) -> str:
        """a where cond holds, else b."""
        return f"({cond}?{a}:{b})"

    def op(self, op: Ops, dtype: DType, args: list[str]) -> str:
        """The expression of an ALU op on operands already named."""
        return self.ops[op](dtype, args)

    def render(self, prog: Program) -> str:
        """The program as one function (a kernel) of this language: parameters data0 (the
        output), data1, ...; then each step in turn, written by the method step_methods names
        for its kind (render_step); global loops on a language with threads are no loops, their
        indices come from the thread index (global_indices)."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def render_step(self, walk: Walk, i: int, step: Step) -> None:
        """Step i written by the method step_methods names for its kind (looked up on this
        language, so a subclass's own is used); NotSupportedError for a kind without one."""
        method = self.step_methods.get(step.op)
        if method is None:
            raise NotSupportedError(f"{step.op} is not rendered by {self.name}")
        getattr(self, method)(walk, i, step)

    def global_indices(self, walk: Walk) -> None:
        """A language with threads: the thread's flat index `gid`, a return for a thread past
        the last output, and each global loop's variable unraveled from gid (row-major)."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def loop_step(self, walk: Walk, i: int, step: Step) -> None:
        """A LOOP: its first line, one level deeper after it; none for a global loop on a
        language with threads (global_indices gave its variable)."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def endloop_step(self, walk: Walk, i: int, step: Step) -> None:
        """An ENDLOOP: one level less, and the loop's closing brace, if it was written."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def const_step(self, walk: Walk, i: int, step: Step) -> None:
        """A CONST: no line; its name is the literal."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def valid_step(self, walk: Walk, i: int, step: Step) -> None:
        """A VALID: a bool v<i> of its condition."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def load_step(self, walk: Walk, i: int, step: Step) -> None:
        """A LOAD: v<i>, the element read from its buffer, or 0 where its validity is false."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def alu_step(self, walk: Walk, i: int, step: Step) -> None:
        """An ALU: v<i>, the op's expression of its operands' names."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def acc_step(self, walk: Walk, i: int, step: Step) -> None:
        """An ACC: acc<i>, a variable assigned again later, of its start value."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def update_step(self, walk: Walk, i: int, step: Step) -> None:
        """An UPDATE: the accumulator assigned the op of itself and the value."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def store_step(self, walk: Walk, i: int, step: Step) -> None:
        """A STORE: the value written to its buffer at its index."""
        # TODO 05.render_c: write this part. The chapter explains it:
        #   chapters/05_codegen/README.md#rendering-c
        raise NotImplementedError("not done yet: 05.render_c")

    def param_step(self, walk: Walk, i: int, step: Step) -> None:
        """A PARAM: nothing to write (render named it data<N> and put it in the header)."""

    # --- chapter 11's work-groups (GPU languages): the steps lower_groups.py writes ---
    def workgroup_step(self, walk: Walk, i: int, step: Step) -> None:
        """The line of a SPECIAL, LOCAL, BARRIER or IF step (an IF opens a block)."""
        prog = walk.prog
        assert prog.workgroup is not None, f"{step.op} in a program without work-groups"
        if step.op is LOps.SPECIAL:
            var, which, stride, size = step.arg
            index = self.workgroup_index(which, prog.workgroup)
            index = f"({index}/{stride})" if stride > 1 else index
            total = prog.workgroup[0 if which == "group" else 1]
            index = f"({index}%{size})" if stride * size < total else index  # (not the first)
            walk.line(self.decl(self.int_type, var, index, False))
        elif step.op is LOps.LOCAL:
            walk.names[i] = step.arg[0]
            walk.line(self.local_array(step.arg[0], self.buffer_type(step.dtype), step.arg[1]))
        elif step.op is LOps.BARRIER:
            walk.line(self.barrier())
        else:  # an IF
            walk.line(f"if ({step.arg} == 0) {{")
            walk.depth += 1

    def endif_step(self, walk: Walk, i: int, step: Step) -> None:
        """An ENDIF: one level less, and the IF's closing brace."""
        walk.depth -= 1
        walk.line("}")

C = CStyleLanguage()


# The instruction sets of x86-64's levels, as gcc's -march names them and /proc/cpuinfo the sets
# (the ones that matter to kernels; each level has the ones before). CPU_MARCH=x86-64-v3 makes
# a machine with AVX-512 compile, and choose its kernels' vectors and tiles, as one with only
# AVX2 and FMA does: chapter 11's way to see how a kernel fares on a processor not at hand.
_V2 = frozenset({"sse", "sse2", "ssse3", "sse4_1", "sse4_2", "popcnt"})
_V3 = _V2 | {"avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "movbe"}
X86_LEVELS = {"x86-64-v2": _V2, "x86-64-v3": _V3,
              "x86-64-v4": _V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}}


@functools.cache
def native_flags() -> frozenset[str]:
    """The instruction sets this processor has, as Linux names them (/proc/cpuinfo; read
    once)."""
    try:
        with open("/proc/cpuinfo") as info:
            return frozenset(next((line for line in info if line.startswith("flags")),
                                  "").split())
    except OSError:
        return frozenset()


def target_march() -> str:
    """The processor the CPU device compiles for, as gcc's -march: $CPU_MARCH if set (one of
    X86_LEVELS, which this processor must run), else "native" (this processor)."""
    march = os.environ.get("CPU_MARCH", "native") or "native"
    if march == "native":
        return march
    if march not in X86_LEVELS:
        raise ValueError(f"CPU_MARCH={march!r}: expected native or one of "
                         f"{', '.join(X86_LEVELS)}")
    missing = X86_LEVELS[march] - native_flags()
    if missing:
        raise ValueError(f"CPU_MARCH={march}: this processor lacks "
                         f"{', '.join(sorted(missing))}, so it cannot run that level's code")
    return march


def cpu_flags() -> frozenset[str]:
    """The instruction sets the CPU device's kernels may use: this processor's, or those of the
    level CPU_MARCH names."""
    march = target_march()
    return native_flags() if march == "native" else X86_LEVELS[march]


def simd_lanes() -> int:
    """float32s in the widest SIMD register this processor has: 16 with AVX-512, 8 with AVX,
    else 4 (SSE; Arm's NEON likewise)."""
    flags = cpu_flags()
    return 16 if "avx512f" in flags else 8 if "avx" in flags else 4


# The fused multiply-add of each type, where the processor has one instruction for it: x86's
# FMA (scalars and vectors of 4 and 8 float32s) and AVX-512 (16). GCC's and Clang's builtins
# behind immintrin.h's _mm*_fmadd_ps (that header alone costs 0.1 s a compile).
FMA_BUILTINS = {1: "__builtin_fmaf({}, {}, {})", 4: "__builtin_ia32_vfmaddps({}, {}, {})",
                8: "__builtin_ia32_vfmaddps256({}, {}, {})",
                16: "__builtin_ia32_vfmaddps512_mask({}, {}, {}, -1, 4)"}


def fused_lanes() -> frozenset[int]:
    """The float32 widths (1: a scalar) this processor fuses a multiply and an add in."""
    flags = cpu_flags()
    lanes = {1, 4, 8} if "fma" in flags else set()
    return frozenset(lanes | {16} if "avx512f" in flags else lanes)


class ThreadedC(CStyleLanguage):
    """C on the CPU device, whose THREAD loops (chapter 11) share the work out to its cores: a
    kernel with one takes its core's number and the number of cores, and a THREAD loop runs
    every tf_cores-th iteration from tf_core on. A kernel without one is chapter 05's C."""

    cores: bool = False  # whether the kernel rendered now has THREAD loops
    loaded: frozenset[str] = frozenset()  # its vectors of bytes as loaded (loaded_bytes)
    core_threads = True  # THREAD loops over the cores
    targets_host = True  # this processor's code (or the x86-64 level CPU_MARCH names)
    # float32s in the widest SIMD register of the target (target_march()), for vectors of
    # GCC's and Clang's vector extensions (VectorDType); wider ones GCC splits poorly
    vector_lanes = simd_lanes()
    fma_lanes: ClassVar[frozenset[int]] = fused_lanes()  # float32 widths fused (chapter 11)
    vector_bytes = True  # vectors of uint8 and int8 too (bytes_in_lanes)

    def render(self, prog: Program) -> str:
        loaded = loaded_bytes(prog)
        if prog.threaded != self.cores or loaded != self.loaded:
            language = copy.copy(self)
            language.cores, language.loaded = prog.threaded, loaded
            return language.render(prog)
        source = super().render(prog)
        vectors = {s.dtype for s in prog.steps if isinstance(s.dtype, VectorDType)}
        typedefs = "".join(self.vector_typedefs(v) for v in sorted(vectors, key=str))
        return source.replace(self.prelude, self.prelude + typedefs, 1)

    def vector_typedefs(self, dtype: VectorDType) -> str:
        """The vector type of dtype and its unaligned twin, for loads and stores at any
        element (GCC's vector extensions: operators work lane by lane, and a scalar operand
        is used in every lane); for float32, also the int16 and int32 vectors of its lanes
        and its MAX and TRUNC helpers (float_vector_helpers: a few lines, inlined where used,
        dropped by the compiler where not)."""
        if dtype.scalar == dtypes.bool:  # a mask: what comparing float32 vectors gives
            return f"typedef int {dtype.name} __attribute__((vector_size({4 * dtype.count})));\n"
        scalar = self.type_of(dtype.scalar)
        ints = "" if dtype.scalar != dtypes.float32 else (  # (bytes on their way to it)
            f"typedef short tf_i16x{dtype.count} __attribute__((vector_size({dtype.count * 2})));\n"
            f"typedef int tf_i32x{dtype.count} __attribute__((vector_size({dtype.itemsize})));\n"
            + float_vector_helpers(dtype.name, f"tf_i32x{dtype.count}"))
        return (f"typedef {scalar} {dtype.name} __attribute__((vector_size({dtype.itemsize})));\n"
                f"typedef {scalar} {dtype.name}_u __attribute__((vector_size({dtype.itemsize}), "
                f"aligned({dtype.scalar.itemsize})));\n" + ints)

    def type_of(self, dtype: DType) -> str:
        return dtype.name if isinstance(dtype, VectorDType) else super().type_of(dtype)

    def const(self, value: Any, dtype: DType) -> str:
        """A literal; of a vector type, every lane the value."""
        if not isinstance(dtype, VectorDType):
            return super().const(value, dtype)
        lane = super().const(value, dtype.scalar)
        return f"(({dtype.name}){{{', '.join([lane] * dtype.count)}}})"

    def load(self, buf: str, index: str, dtype: DType) -> str:
        """An element, or (a vector type) that many consecutive elements from index on."""
        if not isinstance(dtype, VectorDType):
            return super().load(buf, index, dtype)
        return f"(*(const {dtype.name}_u*)({buf}+({index})))"

    def store(self, buf: str, index: str, value: str, dtype: DType) -> str:
        """An element written, or (a vector type) consecutive elements from index on."""
        if not isinstance(dtype, VectorDType):
            return super().store(buf, index, value, dtype)
        return f"*({dtype.name}_u*)({buf}+({index})) = {value};"

    def op(self, op: Ops, dtype: DType, args: list[str]) -> str:
        """An op; on vectors the scalar's template, applied lane by lane by the compiler; a
        Lane of a vector (chapter 11) its element; a MulAdd the processor's fused
        multiply-add, a scalar operand of a vector one broadcast (chapter 11, fuse.py)."""
        if isinstance(op, Lane):
            return f"{args[0]}[{op.index}]"
        if isinstance(op, Replace):  # (an UPDATE whose value was computed from the acc)
            return args[1]
        if isinstance(op, MulAdd):
            lanes = dtype.count if isinstance(dtype, VectorDType) else 1
            operands = [self.op(Broadcast(), dtype, [arg]) if scalar else arg  # type: ignore[arg-type]
                        for arg, scalar in zip(args, op.scalars)] + args[2:]
            return FMA_BUILTINS[lanes].format(*operands)
        if not isinstance(dtype, VectorDType):
            return super().op(op, dtype, args)
        if isinstance(op, Pick):  # (a condition the same for all lanes: C's ?: picks a vector)
            return f"({args[0]}?{args[1]}:{args[2]})"
        if op is Ops.CAST and dtype.scalar == dtypes.int32:  # (float32s to int32s)
            return f"__builtin_convertvector({args[0]}, {dtype.name})"
        if op in (Ops.MAX, Ops.TRUNC):  # (helpers of the float32 vector type, vector_typedefs)
            return f"tf_{op.name.lower()}_{dtype.name}({', '.join(args)})"
        if op is Ops.CAST:  # (bytes to float32s, lane by lane, through int32s: gcc 12 converts
            # bytes straight to float32 a lane at a time; and bytes as loaded from memory to
            # int32 too, so those go through int16s, a few vector instructions)
            ints = args[0] if args[0] not in self.loaded else \
                f"__builtin_convertvector({args[0]}, tf_i16x{dtype.count})"
            ints = f"__builtin_convertvector({ints}, tf_i32x{dtype.count})"
            return f"__builtin_convertvector({ints}, {dtype.name})"
        if op is Ops.BITCAST:  # (int8s as uint8s, int32s as float32s: the same bits)
            return f"(({dtype.name})({args[0]}))"
        if isinstance(op, Broadcast):  # (a bool's lanes: all ones for true, as a compare's)
            lane = f"-({args[0]})" if dtype.scalar == dtypes.bool else args[0]
            return f"(({dtype.name}){{{', '.join([lane] * dtype.count)}}})"
        if op is Ops.WHERE:  # (C has no ?: on vectors: the mask picks bits)
            mask = f"boolx{dtype.count}"
            cond, a, b = args
            return f"(({dtype.name})((({mask}){a}&{cond})|(({mask}){b}&~{cond})))"
        return super().op(op, dtype.scalar, args)

    def fuses(self, dtype: DType) -> bool:
        """Whether a multiply and an add of dtype become one fused multiply-add (fuse.py)."""
        scalar = dtype.scalar if isinstance(dtype, VectorDType) else dtype
        lanes = dtype.count if isinstance(dtype, VectorDType) else 1
        return scalar == dtypes.float32 and lanes in self.fma_lanes

    def kernel_header(self, name: str, params: list[tuple[int, str, bool]]) -> str:
        """C's header, with `int tf_core, int tf_cores` last when the kernel is threaded, and
        then the library's mark that it is (the symbol tf_threaded, which CPUProgram looks
        for)."""
        header = super().kernel_header(name, params)
        if not self.cores:
            return header
        return "const int tf_threaded = 1;\n" + header.removesuffix(") {") + \
            ", int tf_core, int tf_cores) {"

    def loop(self, var: str, size: int) -> str:
        """A THREAD loop (core<i>) over this core's block of the iterations: core c of n runs
        those from c * size / n up to (c + 1) * size / n, one contiguous stretch of memory per
        core (every n-th iteration instead would share each cache line between the cores)."""
        if not var.startswith("core"):
            return super().loop(var, size)
        start, end = (f"({self.int_type})((long long)({core}) * {size} / tf_cores)"
                      for core in ("tf_core", "tf_core + 1"))  # (no int overflow)
        return f"for ({self.int_type} {var} = {start}; {var} < {end}; {var}++) {{"


def float_vector_helpers(vec: str, ints: str) -> str:
    """MAX and TRUNC of a float32 vector type vec (ints: the int32 vector of its size), lane by
    lane as the scalar templates compute them, for which GCC's vector extensions have no
    operator: a maximum is a, or a NaN in a, where a > b or a != a, else b; a truncation is the
    lane converted to int32 and back where it is under 2**23 in size (the sign bit kept: -0.5
    gives -0.0), else the lane itself (already an integer, an infinity or a NaN)."""
    return (
        f"static inline {vec} tf_max_{vec}({vec} a, {vec} b) {{\n"
        f"  {ints} m = (a > b) | (a != a);\n"
        f"  return ({vec})((({ints})a & m) | (({ints})b & ~m));\n}}\n"
        f"static inline {vec} tf_trunc_{vec}({vec} x) {{\n"
        f"  {ints} small = (x < 8388608.0f) & (x > -8388608.0f);\n"
        f"  {ints} cut = ({ints})__builtin_convertvector(__builtin_convertvector(x, {ints}), "
        f"{vec});\n"
        f"  {ints} bits = ({ints})x;\n"
        f"  return ({vec})(((cut | (bits & ~0x7fffffff)) & small) | (bits & ~small));\n}}\n")


def loaded_bytes(prog: Program) -> frozenset[str]:
    """The names of the program's vectors of bytes as loaded from memory (or reinterpreted
    after the load): ThreadedC converts those to float32 through int16s."""
    names: set[str] = set()
    for i, step in enumerate(prog.steps):
        if isinstance(step.dtype, VectorDType) and step.dtype.scalar.itemsize == 1 and (
                step.op is LOps.LOAD or step.op is LOps.ALU and step.arg is Ops.BITCAST and
                f"v{step.src[0]}" in names):
            names.add(f"v{i}")
    return frozenset(names)


CPU_C = ThreadedC()


def render(prog: Program) -> str:
    """The program as a C function `void name(T* restrict data0, const T* restrict data1, ...)`."""
    return C.render(prog)


def describe(step: Step) -> str:
    """One line for a step, for DEBUG output (index expressions as C)."""
    parts = step.arg if isinstance(step.arg, tuple) else (step.arg,)
    arg = ", ".join(p.render() if hasattr(p, "render") else repr(p) for p in parts)
    return f"{step.op.name:<8} {step.dtype.name:<8} {str(list(step.src)):<10} {arg}"
