"""WEBGPU gives NaN, the infinities and signed zeros as the CPU device does. WGSL lets a compiler
assume no value is NaN or infinite, and lavapipe's does: Mesa's optimizer folds x*0 to 0, x-x to
0, exp2(log2 x) to x (naga asks for no float controls), so the WGSL renderer hides float
operands from it (wgsl.hidden). Every ALU op and the Tensor functions built on them run
here on every special value (unary) or pair of them (binary), one kernel per op, on WEBGPU and on
CPU, and the results must agree: NaN where CPU has NaN, the same infinities, the same sign of
zero, and finite values within a few units in the last place (lavapipe's exp2, log2 and sin are
not correctly rounded). REFUSED lists what WEBGPU refuses, with its message.
`python -m tests.devices.test_webgpu_special` prints the table of what differs."""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from itertools import pairwise

import numpy as np
import pytest

from tinyfw import Tensor, dtypes
from tinyfw.probe import probe
from tinyfw.renderer.base import NotSupportedError
from tinyfw.uop.ops import Ops

INF, NAN = math.inf, math.nan
# The special values, some ordinary ones (2.5, -3 for pow's odd and fractional exponents), the
# smallest denormal, a negative denormal, a large integer (lavapipe's sin of it was 4e-5 off) and
# a float32 near the largest, whose square overflows.
SPECIALS = np.array([NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 2.5, -3.0, 1e-45, -1e-40, 16514911.0,
                     3e38], dtype=np.float32)
PAIRS = (np.repeat(SPECIALS, len(SPECIALS)), np.tile(SPECIALS, len(SPECIALS)))
# Rows for reductions: [x, 1, -2], and [x, -0.0] (a sum starts from 0.0: 0.0 + -0.0 is 0.0).
ROWS = np.stack([SPECIALS, np.full_like(SPECIALS, 1.0), np.full_like(SPECIALS, -2.0)], axis=1)
ZERO_ROWS = np.stack([SPECIALS, np.full_like(SPECIALS, -0.0)], axis=1)
# Integer pairs for the integer ops (division by zero is 0 in tinyfw, as C's rule is not).
INTS = np.array([0, 1, -1, 7, -7, 2**31 - 1], dtype=np.int32)
INT_PAIRS = (np.repeat(INTS, len(INTS)), np.tile(INTS, len(INTS)))

Unary = Callable[[Tensor], Tensor]
Binary = Callable[[Tensor, Tensor], Tensor]


def unary_op(op: Ops) -> Unary:
    """The ALU op itself on a tensor, with no Tensor method around it."""
    return lambda x: x._unary(op)


def binary_op(op: Ops) -> Binary:
    """The ALU op itself on two tensors (promoted to one dtype)."""
    return lambda a, b: a._binary(op, b)


def where_op(a: Tensor, b: Tensor) -> Tensor:
    """WHERE(a < b, a, b) itself."""
    return a._result((a < b).uop.alu(Ops.WHERE, a.uop, b.uop), b)


# One tensor function of the special values each: UNARY on each value, the ALU ops themselves,
# then Tensor functions, and expressions a compiler could rewrite (x * 0, x - x, exp2(log2 x)).
UNARY: dict[str, Unary] = {
    **{op.name: unary_op(op)
       for op in (Ops.NEG, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC)},
    "neg": lambda x: -x,
    "exp2": lambda x: x.exp2(),
    "log2": lambda x: x.log2(),
    "sin": lambda x: x.sin(),
    "sqrt": lambda x: x.sqrt(),
    "reciprocal": lambda x: x.reciprocal(),
    "trunc": lambda x: x.trunc(),
    "exp": lambda x: x.exp(),
    "exp2(x-146)": lambda x: (x - 146).exp2(),  # denormal results
    "log": lambda x: x.log(),
    "cos": lambda x: x.cos(),
    "relu": lambda x: x.relu(),
    "sigmoid": lambda x: x.sigmoid(),
    "tanh": lambda x: x.tanh(),
    "abs": lambda x: x.abs(),
    "sign": lambda x: x.sign(),
    "floor": lambda x: x.floor(),
    "ceil": lambda x: x.ceil(),
    "round": lambda x: x.round(),
    "square": lambda x: x * x,
    "x-x": lambda x: x - x,
    "x/x": lambda x: x / x,
    "x*0": lambda x: x * 0,
    "x*-0.0": lambda x: x * -0.0,
    "0*x": lambda x: 0 * x,
    "x+0": lambda x: x + 0,
    "x+-0.0": lambda x: x + -0.0,
    "x*1": lambda x: x * 1,
    "x-0": lambda x: x - 0,
    "0-x": lambda x: 0 - x,
    "x/1": lambda x: x / 1,
    "0/x": lambda x: 0 / x,
    "x/0": lambda x: x / 0,
    "x/inf": lambda x: x / INF,
    "x*inf": lambda x: x * INF,
    "x+inf": lambda x: x + INF,
    "x+nan": lambda x: x + NAN,
    "x**0.5": lambda x: x ** 0.5,
    "x**2": lambda x: x ** 2,
    "x**-1": lambda x: x ** -1,
    "2**x": lambda x: 2 ** x,
    "exp2(log2 x)": lambda x: x.log2().exp2(),
    "log2(exp2 x)": lambda x: x.exp2().log2(),
    "sqrt(x)*sqrt(x)": lambda x: x.sqrt() * x.sqrt(),
    "1/(1/x)": lambda x: x.reciprocal().reciprocal(),
    "--x": lambda x: x.neg().neg(),
    "x==x": lambda x: x == x,  # noqa: PLR0124
    "x!=x": lambda x: x != x,  # noqa: PLR0124
    "x<x": lambda x: x < x,  # noqa: PLR0124
    "x<=x": lambda x: x <= x,  # noqa: PLR0124
    "x>=x": lambda x: x >= x,  # noqa: PLR0124
    "not x<x": lambda x: (x < x).logical_not(),  # noqa: PLR0124
    "not x<0": lambda x: (x < 0).logical_not(),
    "x<inf": lambda x: x < INF,
    "x>-inf": lambda x: x > -INF,
    "x==inf": lambda x: x == INF,
    "x==0": lambda x: x == 0,
    "x!=0": lambda x: x != 0,
    "x>0": lambda x: x > 0,
    "x<0": lambda x: x < 0,
    "max(x,x)": lambda x: x.maximum(x),
    "max(x,0)": lambda x: x.maximum(0),
    "min(x,0)": lambda x: x.minimum(0),
    "max(x,-inf)": lambda x: x.maximum(-INF),
    "max(x,nan)": lambda x: x.maximum(NAN),
    "clip(x,-1,1)": lambda x: x.clip(-1, 1),
    "isnan": lambda x: x.isnan(),
    "isinf": lambda x: x.isinf(),
    "where(isnan,0,x)": lambda x: x.isnan().where(0.0, x),
    "where(x>0,x,-x)": lambda x: (x > 0).where(x, -x),
    "int32": lambda x: x.cast(dtypes.int32),
    "int16": lambda x: x.cast(dtypes.int16),
    "int8": lambda x: x.cast(dtypes.int8),
    "uint8": lambda x: x.cast(dtypes.uint8),
    "bool": lambda x: x.cast(dtypes.bool),
    "bool(x*0)": lambda x: (x * 0).cast(dtypes.bool),
    "int32(x*0)": lambda x: (x * 0).cast(dtypes.int32),
}

# Ops on every pair (a, b) of special values: each ALU op itself, then the Tensor functions.
BINARY: dict[str, Binary] = {
    **{f"{op.name}(a,b)": binary_op(op)
       for op in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.MOD, Ops.FDIV, Ops.CMPLT, Ops.CMPNE)},
    "WHERE(a<b,a,b)": where_op,
    "a+b": lambda a, b: a + b,
    "a-b": lambda a, b: a - b,
    "a*b": lambda a, b: a * b,
    "a/b": lambda a, b: a / b,
    "max(a,b)": lambda a, b: a.maximum(b),
    "min(a,b)": lambda a, b: a.minimum(b),
    "a<b": lambda a, b: a < b,
    "a>b": lambda a, b: a > b,
    "a<=b": lambda a, b: a <= b,
    "a>=b": lambda a, b: a >= b,
    "a==b": lambda a, b: a == b,
    "a!=b": lambda a, b: a != b,
    "not a<b": lambda a, b: (a < b).logical_not(),
    "where(a<b,a,b)": lambda a, b: (a < b).where(a, b),
    "where(a!=a,b,a)": lambda a, b: (a != a).where(b, a),  # noqa: PLR0124
    "a**b": lambda a, b: a ** b,
    "a%b": lambda a, b: a % b,
    "a//b": lambda a, b: a // b,
    "a*b+a": lambda a, b: a * b + a,
    "(a+b)-b": lambda a, b: (a + b) - b,
    "(a*b)/b": lambda a, b: (a * b) / b,
    "a-(a+b)": lambda a, b: a - (a + b),
    "a*b-b*a": lambda a, b: a * b - b * a,
}

# Integer ops on every pair of INTS.
INTEGER: dict[str, Binary] = {
    **{f"{op.name}(i,j)": binary_op(op)
       for op in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.MOD, Ops.IDIV, Ops.CMPLT, Ops.CMPNE, Ops.AND,
                  Ops.OR, Ops.XOR)},
    # (a zero divisor raises ZeroDivisionError, as in torch: tests/api/test_edge_inputs.py)
    "i//j": lambda a, b: a // (b != 0).where(b, 1),
    "i%j": lambda a, b: a % (b != 0).where(b, 1),
    "float(i)/j": lambda a, b: a.float() / b,
}

# Reductions along rows [x, 1, -2], one row per special value x.
ROW: dict[str, Unary] = {
    "sum": lambda x: x.sum(1),
    "max": lambda x: x.max(1),
    "min": lambda x: x.min(1),
    "mean": lambda x: x.mean(1),
    "softmax": lambda x: x.softmax(1),
    "log_softmax": lambda x: x.log_softmax(1),
    "logsumexp": lambda x: x.logsumexp(1),
    "argmax": lambda x: x.argmax(1),
    "sum(x*0)": lambda x: (x * 0).sum(1),
    "sum(x-x)": lambda x: (x - x).sum(1),
    "max(-x)": lambda x: (-x).max(1),
}
# Padded loads (a select of the load and 0.0), times the neighbour: [0*x0, x0*x1, ..., x11*0].
PADDED: dict[str, Unary] = {
    "pad(x)*pad(x)": lambda x: x.pad(((1, 0),)) * x.pad(((0, 1),)),
}
# Reductions along rows [x, -0.0].
ZERO_ROW: dict[str, Unary] = {
    "sum [x,-0]": lambda x: x.sum(1),
    "max [x,-0]": lambda x: x.max(1),
    "sum [x,-0]*0": lambda x: (x * 0).sum(1),
}

CASES: dict[str, tuple[str, Callable[..., Tensor]]] = {
    **{k: ("unary", f) for k, f in UNARY.items()},
    **{k: ("binary", f) for k, f in BINARY.items()},
    **{k: ("int", f) for k, f in INTEGER.items()},
    **{k: ("row", f) for k, f in ROW.items()},
    **{k: ("zero_row", f) for k, f in ZERO_ROW.items()},
    **{k: ("padded", f) for k, f in PADDED.items()},
}


def run_case(name: str, device: str) -> np.ndarray:
    """The case computed on device: one realize of one tensor function of the special values."""
    kind, fn = CASES[name]
    if kind in ("unary", "padded"):
        return fn(Tensor(SPECIALS, device=device)).numpy()
    if kind in ("binary", "int"):
        a, b = PAIRS if kind == "binary" else INT_PAIRS
        return fn(Tensor(a, device=device), Tensor(b, device=device)).numpy()
    return fn(Tensor(ROWS if kind == "row" else ZERO_ROWS, device=device)).numpy()


def inputs_of(name: str) -> list[str]:
    """A label for each element of the case's result: its input value, pair or row."""
    kind = CASES[name][0]
    if kind in ("binary", "int"):
        a, b = PAIRS if kind == "binary" else INT_PAIRS
        return [f"{x!r}, {y!r}" for x, y in zip(a.tolist(), b.tolist())]
    if kind == "padded":
        ends = [0.0] + SPECIALS.tolist() + [0.0]
        return [f"{x!r} * {y!r}" for x, y in pairwise(ends)]
    return [repr(v) for v in SPECIALS.tolist()]


# Cases whose result is 1 - exp2(tiny) or so: exp2 is approximate on lavapipe (WGSL allows
# 3 + 2|x| ulps), and the cancellation leaves its last-place error as a small number, not 0.
CANCELLING = frozenset({"tanh", "log2(exp2 x)"})
# WEBGPU has no float64, so its a ** b is exp2(b * log2 a) in float32, whose error grows with
# |b log2 a| (up to ~60 ulp, 4e-6 relative; site/correctness.md); CPU computes it in float64.
RTOL = {"a**b": 1e-5}
# What WEBGPU refuses (NotSupportedError), with the message's start.
REFUSED: dict[str, str] = {
    "MOD(a,b)": "MOD of float32 (C's fmod) is not supported on WEBGPU",
}


def webgpu_remainder_is_inexact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The pairs whose a % b WEBGPU cannot give as CPU (C's exact fmod, torch's value) does:
    WGSL has no exact fmod, so `%` is a - floor(a / b) * b there (Tensor.mod), which loses
    the remainder once the quotient passes float32's 2**24, and lavapipe flushes subnormal
    operands to 0. (Until tinyfw's CPU computed % from fmod, both devices used that formula and
    agreed on these pairs, both wrong.)"""
    with np.errstate(all="ignore"):
        quotient = np.abs(a.astype(np.float64) / b.astype(np.float64))
    tiny = np.finfo(np.float32).tiny
    subnormal = ((b != 0) & (np.abs(b) < tiny)) | ((a != 0) & (np.abs(a) < tiny))
    return subnormal | (np.isfinite(quotient) & (quotient >= 2 ** 24))


def differences(got: np.ndarray, want: np.ndarray, atol: float = 0.0,
                rtol: float = 2e-6) -> np.ndarray:
    """Where got and want differ: NaN on one side only, other infinities, a zero of the other
    sign, or finite values more than a few ulps apart (transcendentals are approximate)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return np.ones(want.shape, bool)
    if want.dtype.kind != "f":
        return got != want
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    with np.errstate(invalid="ignore"):
        zeros = (got == 0) & (want == 0)
        close = np.isclose(got, want, rtol=rtol, atol=atol) & \
            (~zeros | (np.signbit(got) == np.signbit(want)))
    return (nan_got != nan_want) | (~nan_want & ~close)


def case_differences(name: str, got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """differences() with the case's tolerance, one flag per input (a row for reductions);
    index results compared by value (int32 on WEBGPU, int64 on CPU: index_dtype)."""
    if got.dtype.kind == want.dtype.kind == "i":
        got = got.astype(want.dtype)
    bad = differences(got, want, atol=2e-7 if name in CANCELLING else 0.0,
                      rtol=RTOL.get(name, 2e-6))
    return bad.reshape(bad.shape[0], -1).any(1)


def table(names: list[str]) -> list[str]:
    """One line per differing element: case, inputs, WEBGPU's value, CPU's value."""
    lines = []
    for name in names:
        try:
            got = run_case(name, "WEBGPU")
        except NotSupportedError as error:  # a refusal is a line of its own
            lines.append(f"{name:<18} raises {type(error).__name__}: {error}")
            continue
        want = run_case(name, "CPU")
        labels = inputs_of(name)
        for i in np.flatnonzero(case_differences(name, got, want)):
            lines.append(f"{name:<18} ({labels[i]}): WEBGPU {got[i]!r}, CPU {want[i]!r}")
    return lines


WEBGPU_OK, WEBGPU_WHY = probe("WEBGPU")
needs_webgpu = pytest.mark.skipif(not WEBGPU_OK, reason=f"WEBGPU is not available here: "
                                                        f"{WEBGPU_WHY}")


@needs_webgpu
@pytest.mark.parametrize("name", [n for n in CASES if n not in REFUSED])
def test_special_values_match_cpu(name: str) -> None:
    """The case gives CPU's values on WEBGPU, element for element."""
    got, want = run_case(name, "WEBGPU"), run_case(name, "CPU")
    bad = case_differences(name, got, want)
    if name == "a%b":  # (WEBGPU's remainder is the floor formula: exact for the other pairs)
        bad &= ~webgpu_remainder_is_inexact(*PAIRS)
    labels = inputs_of(name)
    assert not bad.any(), "\n".join(f"({labels[i]}): WEBGPU {got[i]!r}, CPU {want[i]!r}"
                                     for i in np.flatnonzero(bad))


@needs_webgpu
@pytest.mark.parametrize("name", list(REFUSED))
def test_what_webgpu_cannot_do_is_refused(name: str) -> None:
    """An op WGSL on lavapipe cannot compute as C does raises NotSupportedError, naming it."""
    with pytest.raises(NotSupportedError, match=re.escape(REFUSED[name])):
        run_case(name, "WEBGPU")


if __name__ == "__main__":
    print("\n".join(table(list(CASES))) or "no differences")
