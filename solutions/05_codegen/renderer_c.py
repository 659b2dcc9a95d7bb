# Solutions of chapter 05, generated from tinyfw/renderer_c.py by `python -m tools.generate`.
# Edit tinyfw/renderer_c.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/05_codegen --impl=solutions
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
    # >>> exercise 05.render_c #rendering-c
    names: dict[int, str] = {}
    args = []
    for i in prog.params:
        number, is_output = prog.steps[i].arg
        names[i] = f"data{number}"
        const = "" if is_output else "const "
        args.append(f"{const}{C_TYPES[prog.steps[i].dtype]}* restrict data{number}")
    lines = [f"void {prog.name}({', '.join(args)}) {{"]
    depth = 1
    for i, step in enumerate(prog.steps):
        pad = "  " * depth
        ctype = C_TYPES[step.dtype]
        if step.op is LOps.PARAM:
            continue
        if step.op is LOps.LOOP:
            var, size = step.arg
            lines.append(f"{pad}for (int {var} = 0; {var} < {size}; {var}++) {{")
            depth += 1
        elif step.op is LOps.ENDLOOP:
            depth -= 1
            lines.append("  " * depth + "}")
        elif step.op is LOps.CONST:
            names[i] = render_const(step.arg, step.dtype)
        elif step.op is LOps.VALID:
            names[i] = f"v{i}"
            lines.append(f"{pad}bool v{i} = {step.arg.render()};")
        elif step.op is LOps.LOAD:
            index, valid = step.arg
            read = f"{names[step.src[0]]}[{index.render()}]"
            if not (valid.is_const and valid.vmin == 1):
                read = f"({valid.render()}?{read}:({ctype})0)"
            names[i] = f"v{i}"
            lines.append(f"{pad}{ctype} v{i} = {read};")
        elif step.op is LOps.ALU:
            expr = OP_TEMPLATES[step.arg](step.dtype, [names[s] for s in step.src])
            names[i] = f"v{i}"
            lines.append(f"{pad}{ctype} v{i} = {expr};")
        elif step.op is LOps.ACC:
            names[i] = f"acc{i}"
            lines.append(f"{pad}{ctype} acc{i} = {render_const(step.arg, step.dtype)};")
        elif step.op is LOps.UPDATE:
            acc, value = names[step.src[0]], names[step.src[1]]
            lines.append(f"{pad}{acc} = {OP_TEMPLATES[step.arg](step.dtype, [acc, value])};")
        elif step.op is LOps.STORE:
            buf, value = names[step.src[0]], names[step.src[1]]
            lines.append(f"{pad}{buf}[{step.arg.render()}] = {value};")
    lines.append("}")
    return PRELUDE + "\n".join(lines) + "\n"
    # <<< exercise


def describe(step: Step) -> str:
    """One line for a step, for DEBUG output (index expressions as C)."""
    parts = step.arg if isinstance(step.arg, tuple) else (step.arg,)
    arg = ", ".join(p.render() if hasattr(p, "render") else repr(p) for p in parts)
    return f"{step.op.name:<8} {step.dtype.name:<8} {str(list(step.src)):<10} {arg}"
