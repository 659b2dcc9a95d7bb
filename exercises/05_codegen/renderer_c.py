# Exercises of chapter 05, generated from tinyfw/renderer_c.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/05_codegen
"""Rendering a linear program as C: mostly a table of templates, one per op."""
from __future__ import annotations

import math
from typing import Callable

from tinyfw.codegen import LOps, Program, Step
from tinyfw.dtype import DType, dtypes
from tinyfw.uop import Ops

C_TYPES: dict[DType, str] = {
    dtypes.bool: "bool", dtypes.int8: "signed char", dtypes.uint8: "unsigned char",
    dtypes.int16: "short", dtypes.int32: "int", dtypes.int64: "long long",
    dtypes.float16: "_Float16", dtypes.float32: "float", dtypes.float64: "double",
}


def _math(name: str) -> Callable[[DType, list[str]], str]:
    """A libm call in the precision of dtype (float16 computes in float)."""
    def render(dtype: DType, a: list[str]) -> str:
        if dtype == dtypes.float64:
            return f"{name}({a[0]})"
        call = f"{name}f((float){a[0]})"
        return f"(_Float16){call}" if dtype == dtypes.float16 else call
    return render


# One template per op: the dtype of the result and the operands' names give the C expression.
OP_TEMPLATES: dict[Ops, Callable[[DType, list[str]], str]] = {
    Ops.NEG: lambda dt, a: f"(!{a[0]})" if dt.is_bool else f"(-{a[0]})",
    Ops.EXP2: _math("exp2"), Ops.LOG2: _math("log2"), Ops.SIN: _math("sin"),
    Ops.SQRT: _math("sqrt"), Ops.TRUNC: _math("trunc"),
    Ops.RECIPROCAL: lambda dt, a: f"(({C_TYPES[dt]})1/{a[0]})",
    Ops.ADD: lambda dt, a: f"({a[0]}||{a[1]})" if dt.is_bool else f"({a[0]}+{a[1]})",
    Ops.MUL: lambda dt, a: f"({a[0]}&&{a[1]})" if dt.is_bool else f"({a[0]}*{a[1]})",
    Ops.MAX: lambda dt, a: f"(({a[0]}>{a[1]}||{a[0]}!={a[0]})?{a[0]}:{a[1]})",
    Ops.MOD: lambda dt, a: (f"fmod({a[0]},{a[1]})" if dt.is_float else
                            f"({a[1]}==0?0:{a[0]}%{a[1]})"),
    Ops.IDIV: lambda dt, a: f"({a[1]}==0?0:{a[0]}/{a[1]})",
    Ops.CMPLT: lambda dt, a: f"({a[0]}<{a[1]})",
    Ops.CMPNE: lambda dt, a: f"({a[0]}!={a[1]})",
    Ops.AND: lambda dt, a: f"({a[0]}&{a[1]})",
    Ops.OR: lambda dt, a: f"({a[0]}|{a[1]})",
    Ops.XOR: lambda dt, a: f"({a[0]}^{a[1]})",
    Ops.WHERE: lambda dt, a: f"({a[0]}?{a[1]}:{a[2]})",
    Ops.CAST: lambda dt, a: f"({a[0]}!=0)" if dt.is_bool else f"(({C_TYPES[dt]}){a[0]})",
}

PRELUDE = "#include <math.h>\n#include <stdbool.h>\n"


def render_const(value: float | int | bool, dtype: DType) -> str:
    """A number as a C literal of dtype."""
    if dtype.is_bool:
        return "1" if value else "0"
    if dtype.is_int:
        if dtype == dtypes.int64 and value == dtypes.min(dtype):
            # -9223372036854775808LL would negate a constant too large for long long
            return f"({int(value) + 1}LL-1)"
        text = f"{int(value)}" + ("LL" if dtype == dtypes.int64 else "")
        return f"({text})" if value < 0 else text  # so that -x of it is not a decrement
    if math.isnan(value):
        text = "NAN"
    elif math.isinf(value):
        text = "INFINITY" if value > 0 else "-INFINITY"
    else:
        text = repr(float(value)) + ("f" if dtype != dtypes.float64 else "")
    return f"(({C_TYPES[dtype]}){text})"


def render(prog: Program) -> str:
    """The program as a C function `void name(T* data0, const T* data1, ...)`."""
    # TODO 05.render_c: write this part. The chapter explains it:
    #   chapters/05_codegen/README.md#rendering-c
    raise NotImplementedError("not done yet: 05.render_c")


def describe(step: Step) -> str:
    """One line for a step, for DEBUG output (index expressions as C)."""
    parts = step.arg if isinstance(step.arg, tuple) else (step.arg,)
    arg = ", ".join(p.render() if hasattr(p, "render") else repr(p) for p in parts)
    return f"{step.op.name:<8} {step.dtype.name:<8} {str(list(step.src)):<10} {arg}"
