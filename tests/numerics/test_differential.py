"""Random small programs give the same values and gradients on CPU (compiled C), on NUMPY (the
reference interpreter) and in PyTorch (float32, with float64 to size the rounding error): of
the first ops, and, around each op issue 11 added, of every op.

Then special values (nan, infs, -0.0, huge, subnormal, int32 limits) in random programs and
through each elementwise op and reduce, in arrays of sizes that are not powers of two, on every
device; and long sums: each against torch's float64 result rounded once to float32, with
tolerances set from float64 alone (a one-accumulator float32 sum fails them)."""
from __future__ import annotations

import functools
import math
import operator
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyfw import Tensor, dtypes

FLOAT, INT, BOOL = "f", "i", "b"
EXACT_LIMIT = 2.0 ** 23    # a grid value needing fewer bits is exact in float32
INT_LIMIT = 2.0 ** 24      # ints stay below this (no overflow, exact as floats)
FLOAT_LIMIT = 1e30         # finite floats stay below this (no overflow to inf)
MAX_NUMEL, MAX_NDIM = 200, 4
TINY_DTYPES = {FLOAT: dtypes.float32, INT: dtypes.int32, BOOL: dtypes.bool}
RANK = {BOOL: 0, INT: 1, FLOAT: 2}

DIFF_SETTINGS = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                         suppress_health_check=list(HealthCheck))
GRAD_SETTINGS = settings(DIFF_SETTINGS, max_examples=60)

Draw = Callable[[st.SearchStrategy], Any]


# ---------------------------------------------------------------------------------------------
# what the generator knows of each value


@dataclass(frozen=True)
class Meta:
    """A value of a program as the generator sees it: shape, kind, a bound on its finite values
    and whether it was computed without rounding (only such values may meet a comparison, a
    cast to int or a rounding op, where a last-bit difference would flip the result)."""
    shape: tuple[int, ...]
    kind: str
    mag: float = 1.0
    frac: int = 0
    exact: bool = True

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def meta(shape: tuple[int, ...], kind: str, mag: float, frac: int = 0,
         exact: bool = True) -> Meta | None:
    """A Meta, or None when the value could overflow (the generator then skips the op)."""
    shape = tuple(shape)
    if len(shape) > MAX_NDIM or math.prod(shape) > MAX_NUMEL:
        return None
    if kind == BOOL:
        return Meta(shape, BOOL)
    if kind == INT:
        return Meta(shape, INT, float(mag)) if mag < INT_LIMIT else None
    if mag > FLOAT_LIMIT:
        return None
    exact = exact and mag * 2.0 ** frac < EXACT_LIMIT
    return Meta(shape, FLOAT, float(mag), frac if exact else 0, exact)


def promote(*kinds: str) -> str:
    return max(kinds, key=RANK.__getitem__)


@dataclass(frozen=True)
class Scalar:
    """A Python number used as an operand."""
    value: bool | int | float

    @property
    def meta(self) -> Meta:
        v = self.value
        kind = BOOL if isinstance(v, bool) else INT if isinstance(v, int) else FLOAT
        return Meta((), kind, abs(float(v)), 2 if kind == FLOAT else 0)

    def __repr__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class Step:
    op: str
    srcs: tuple[int, ...]
    arg: Any = None


@dataclass(frozen=True)
class Program:
    """Inputs (metas, filled from seed) and steps; each step's value is v{len(inputs) + i}."""
    inputs: tuple[Meta, ...]
    steps: tuple[Step, ...]
    seed: int
    metas: tuple[Meta, ...]
    grad: bool = False  # a gradient program: its inputs require grad
    special: bool = False  # a quarter of each float input is nan, inf, -inf or -0.0

    @property
    def out(self) -> Meta:
        return self.metas[-1]

    def arrays(self) -> list[np.ndarray]:
        """The input values: floats on a grid of quarters, small ints, bools."""
        rng = np.random.default_rng(self.seed)
        out = []
        for m in self.inputs:
            if m.kind == FLOAT:
                values = (rng.integers(-16, 17, m.shape) / 4).astype(np.float32)
                if self.special:
                    picks = np.array(PROGRAM_SPECIALS, dtype=np.float32)
                    chosen = picks[rng.integers(0, len(picks), m.shape)]
                    values = np.where(rng.random(m.shape) < 0.25, chosen, values)
                out.append(values.astype(np.float32))
            elif m.kind == INT:
                out.append(rng.integers(-5, 6, m.shape).astype(np.int32))
            else:
                out.append(rng.integers(0, 2, m.shape).astype(np.bool_))
        return out

    def __repr__(self) -> str:
        """The program as tinyfw code (a repro to paste)."""
        lines = ["import numpy as np", "from numpy import inf, nan", "from tinyfw import Tensor",
                 "dev = 'CPU'  # or 'NUMPY'"]
        grad = ", requires_grad=True" if self.grad else ""
        for i, a in enumerate(self.arrays()):
            lines.append(f"v{i} = Tensor(np.array({a.tolist()!r}, dtype=np.{a.dtype}), "
                         f"device=dev{grad})")
        for i, s in enumerate(self.steps):
            names = [f"v{j}" for j in s.srcs]
            lines.append(f"v{len(self.inputs) + i} = {OPS[s.op].text(names, s.arg)}")
        out = f"v{len(self.metas) - 1}"
        lines.append(f"print({out}.numpy())")
        if self.grad:
            lines.append(f"w = Tensor(np.array({weights(self).tolist()!r}, dtype=np.float32), "
                         "device=dev)")
            lines.append(f"({out} * w).sum().backward()")
            lines += [f"print(None if v{i}.grad is None else v{i}.grad.numpy())"
                      for i in range(len(self.inputs))]
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """Hypothesis prints a failing example this way: as the repro."""
        p.text("\n" + repr(self) + "\n")


# ---------------------------------------------------------------------------------------------
# the two libraries a program runs on


class TinyLib:
    """Runs program steps with tinyfw on one device."""

    def __init__(self, device: str):
        self.device = device

    def tensor(self, arr: np.ndarray, grad: bool) -> Tensor:
        return Tensor(arr, device=self.device, requires_grad=grad)

    def operand(self, x: Any) -> Any:
        return x.value if isinstance(x, Scalar) else x

    def cast(self, x: Tensor, kind: str) -> Tensor:
        return x.cast(TINY_DTYPES[kind])

    def math(self, x: Tensor, name: str) -> Tensor:
        return getattr(x, name)()

    def relu(self, x: Tensor) -> Tensor:
        return x.relu()

    def where(self, c: Tensor, a: Any, b: Any) -> Tensor:
        return c.where(a, b)

    def maximum(self, a: Tensor, b: Any) -> Tensor:
        return a.maximum(b)

    def minimum(self, a: Tensor, b: Any) -> Tensor:
        return a.minimum(b)

    def reduce(self, x: Tensor, name: str, axis: Any, keepdim: bool) -> Tensor:
        return getattr(x, name)(axis, keepdim=keepdim)

    def pad(self, x: Tensor, pairs: tuple, flat: bool, value: Any) -> Tensor:
        return x.pad(flat_padding(pairs) if flat else pairs, value=value)

    def shrink(self, x: Tensor, bounds: tuple) -> Tensor:
        return x.shrink(bounds)

    def flip(self, x: Tensor, axes: tuple[int, ...]) -> Tensor:
        return x.flip(axes)

    def getitem(self, x: Tensor, index: tuple) -> Tensor:
        return x[index]

    def cat(self, xs: list[Tensor], dim: int) -> Tensor:
        return Tensor.cat(*xs, dim=dim)

    def matmul(self, a: Tensor, b: Tensor) -> Tensor:
        return a @ b

    def clip(self, x: Tensor, lo: float, hi: float) -> Tensor:
        return x.clip(lo, hi)

    def realize(self, x: Tensor) -> Tensor:
        return x.realize()

    def round_trip(self, x: Tensor) -> Tensor:
        """x copied to the other device and back."""
        return x.to("NUMPY" if self.device == "CPU" else "CPU").to(self.device)

    def call(self, tiny: Callable[..., Any], ref: Callable[..., Any], *args: Any) -> Any:
        """An op given in tinyfw's form (tiny) and torch's (ref): tiny(*args) here."""
        return tiny(*args)

    def index(self, values: IntArray) -> Tensor:
        """A constant index tensor."""
        return Tensor(values.array(), device=self.device)


class TorchLib(TinyLib):
    """Runs program steps with PyTorch, floats in float32 or float64 (the default dtype)."""

    def __init__(self, float_dtype: torch.dtype):
        self.float_dtype = float_dtype

    def tensor(self, arr: np.ndarray, grad: bool) -> torch.Tensor:
        t = torch.tensor(arr)
        t = t.to(self.float_dtype) if t.is_floating_point() else t
        return t.requires_grad_(grad)

    def cast(self, x: torch.Tensor, kind: str) -> torch.Tensor:
        return x.to({FLOAT: self.float_dtype, INT: torch.int32, BOOL: torch.bool}[kind])

    def floating(self, x: torch.Tensor) -> torch.Tensor:
        return x if x.is_floating_point() else x.to(self.float_dtype)

    def math(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return getattr(self.floating(x), name)()

    def relu(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)  # nan stays nan, in tinyfw as in torch

    def where(self, c: torch.Tensor, a: Any, b: Any) -> torch.Tensor:
        return torch.where(c, a, b)

    def maximum(self, a: torch.Tensor, b: Any) -> torch.Tensor:
        return torch.maximum(a, b if isinstance(b, torch.Tensor) else torch.tensor(b))

    def minimum(self, a: torch.Tensor, b: Any) -> torch.Tensor:
        return torch.minimum(a, b if isinstance(b, torch.Tensor) else torch.tensor(b))

    def reduce(self, x: torch.Tensor, name: str, axis: Any, keepdim: bool) -> torch.Tensor:
        dims = tuple(range(x.ndim)) if axis is None else axis
        if name == "mean":
            return self.floating(x).mean(dims, keepdim=keepdim) if x.ndim else self.floating(x)
        fn = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}[name]
        return fn(x, dims, keepdim=keepdim) if x.ndim else fn(x)

    def pad(self, x: torch.Tensor, pairs: tuple, flat: bool, value: Any) -> torch.Tensor:
        return F.pad(x, flat_padding(pairs), value=value)

    def shrink(self, x: torch.Tensor, bounds: tuple) -> torch.Tensor:
        return x[tuple(slice(b, e) for b, e in bounds)]

    def flip(self, x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
        return torch.flip(x, axes)

    def getitem(self, x: torch.Tensor, index: tuple) -> torch.Tensor:
        """numpy-style indexing (negative steps too), one axis at a time."""
        dim = 0
        for i in index:
            if i is None:
                x, dim = x.unsqueeze(dim), dim + 1
            elif i is Ellipsis:
                continue  # only generated last, where it keeps the remaining axes
            elif isinstance(i, int):
                x = x.select(dim, i)
            else:
                picked = torch.tensor(list(range(*i.indices(x.shape[dim]))), dtype=torch.long)
                x, dim = x.index_select(dim, picked), dim + 1
        return x

    def cat(self, xs: list[torch.Tensor], dim: int) -> torch.Tensor:
        return torch.cat(xs, dim)

    def matmul(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        dt = torch.promote_types(a.dtype, b.dtype)
        return a.to(dt) @ b.to(dt)

    def realize(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def round_trip(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def call(self, tiny: Callable[..., Any], ref: Callable[..., Any], *args: Any) -> Any:
        return ref(*args)

    def index(self, values: IntArray) -> torch.Tensor:
        return torch.tensor(values.array())


def flat_padding(pairs: tuple) -> tuple[int, ...]:
    """((before, after), ...) per axis as torch's flat list, last axis first."""
    return tuple(v for b, a in reversed(pairs) for v in (b, a))


@contextmanager
def torch_default_float(dtype: torch.dtype) -> Iterator[None]:
    """Within the block, ints promote to dtype (as tinyfw's to its default float32)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def run_program(prog: Program, lib: TinyLib, grad: bool = False) -> tuple[Any, list[Any]]:
    """Every step of prog on lib: the last value and the input tensors."""
    inputs = [lib.tensor(a, grad) for a in prog.arrays()]
    values: list[Any] = list(inputs)
    for s in prog.steps:
        xs = [values[j] for j in s.srcs]
        values.append(OPS[s.op].run(lib, xs, s.arg))
    return values[-1], inputs


# ---------------------------------------------------------------------------------------------
# the ops: how to pick operands and arguments, the result's Meta, how to run, how to print


Built = tuple[tuple[int, ...], Any, Meta] | None


@dataclass(frozen=True)
class OpSpec:
    build: Callable[[Draw, list[Meta], bool], Built]
    run: Callable[[TinyLib, list[Any], Any], Any]
    text: Callable[[list[str], Any], str]
    in_grad: bool = True   # used in gradient programs
    kinds: str = "fib"  # the kinds of its first operand (the first input of programs on it)


def pick(draw: Draw, metas: list[Meta], ok: Callable[[Meta], bool]) -> int | None:
    """The index of a value that satisfies ok: half the time the latest one (so programs are
    chains more than piles of unused values), else any (shrinks to the latest)."""
    found = [i for i in reversed(range(len(metas))) if ok(metas[i])]
    if not found:
        return None
    return found[0] if draw(st.booleans()) else draw(st.sampled_from(found))


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def scalar_for(draw: Draw, kind: str, nonzero: bool = False) -> Scalar:
    """A Python number of kind (a quarter-grid float, a small int, a bool)."""
    if kind == FLOAT:
        k = draw(st.sampled_from([2, -3, 1, 6, -8, 0, 9]))
        return Scalar(k / 4 if k or not nonzero else 1.5)
    if kind == INT:
        return Scalar(draw(st.sampled_from([2, -1, 3] if nonzero else [2, -1, 0, 3])))
    return Scalar(draw(st.booleans()))


def partner(draw: Draw, metas: list[Meta], a: Meta, ok: Callable[[Meta], bool],
            kinds: tuple[str, ...]) -> tuple[int | None, Scalar | None]:
    """A second operand for a: a value that broadcasts with it, or a Python scalar."""
    def fits(m: Meta) -> bool:
        out = broadcast(a.shape, m.shape)
        return out is not None and len(out) <= MAX_NDIM and math.prod(out) <= MAX_NUMEL \
            and ok(m)
    if draw(st.integers(0, 3)) > 0:
        j = pick(draw, metas, fits)
        if j is not None:
            return j, None
    s = scalar_for(draw, draw(st.sampled_from(kinds)))
    return (None, s) if ok(s.meta) else (None, None)


def unary(kinds: str, result: Callable[[Meta], Meta | None], call: Callable[[TinyLib, Any], Any],
          text: str, in_grad: bool = True, needs_exact: bool = False) -> OpSpec:
    """An elementwise op of one operand of the given kinds."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: m.kind in kinds and (m.exact or not needs_exact))
        if i is None:
            return None
        out = result(metas[i])
        return None if out is None else ((i,), None, out)
    return OpSpec(build, lambda L, xs, arg: call(L, xs[0]), lambda n, arg: text.format(*n),
                  in_grad, kinds)


def _float_of(m: Meta, mag: float, exact: bool = False, frac: int = 0) -> Meta | None:
    return meta(m.shape, FLOAT, mag, frac, exact)


def _same(m: Meta, mag: float | None = None, frac: int | None = None) -> Meta | None:
    return meta(m.shape, m.kind, m.mag if mag is None else mag, m.frac if frac is None else frac,
                m.exact)


def _math(name: str, result: Callable[[Meta], Meta | None], needs_exact: bool,
          in_grad: bool = True) -> OpSpec:
    return unary("fib", result, lambda L, x: L.math(x, name), f"{{}}.{name}()", in_grad,
                 needs_exact)


def _bounded_exp(m: Meta) -> Meta | None:
    return _float_of(m, math.exp(m.mag)) if m.mag <= 20 else None


def _bounded_trig(m: Meta) -> Meta | None:
    return _float_of(m, 1.0) if m.mag <= 64 else None


def _safe(name: str, result: Callable[[Meta], Meta | None]) -> OpSpec:
    """name(x*x + 1): a domain-limited op kept finite, with finite gradients."""
    def call(L: TinyLib, x: Any) -> Any:
        return L.math(x * x + 1, name)
    return unary("f", result, call, f"({{0}}*{{0}}+1).{name}()")


UNARY: dict[str, OpSpec] = {
    "neg": unary("fi", _same, lambda L, x: -x, "-{}"),
    "abs": unary("fi", _same, lambda L, x: x.abs(), "{}.abs()"),
    "relu": unary("fi", _same, lambda L, x: L.relu(x), "{}.relu()"),
    "square": unary("fi", lambda m: _same(m, m.mag ** 2, m.frac * 2), lambda L, x: x.square(),
                    "{}.square()"),
    "sign": unary("fi", lambda m: _same(m, 1.0, 0), lambda L, x: x.sign(), "{}.sign()"),
    "trunc": unary("fi", lambda m: _same(m, frac=0), lambda L, x: x.trunc(), "{}.trunc()",
                   needs_exact=True),
    "floor": unary("fi", lambda m: _same(m, m.mag + 1, 0), lambda L, x: x.floor(),
                   "{}.floor()", needs_exact=True),
    "ceil": unary("fi", lambda m: _same(m, m.mag + 1, 0), lambda L, x: x.ceil(), "{}.ceil()",
                  needs_exact=True),
    "round": unary("fi", lambda m: _same(m, m.mag + 1, 0), lambda L, x: x.round(),
                   "{}.round()", needs_exact=True),
    "logical_not": unary("b", _same, lambda L, x: x.logical_not(), "{}.logical_not()"),
    "exp": _math("exp", _bounded_exp, False),
    "sin": _math("sin", _bounded_trig, False),
    "cos": _math("cos", _bounded_trig, False),
    "sigmoid": _math("sigmoid", lambda m: _float_of(m, 1.0), False),
    "tanh": _math("tanh", lambda m: _float_of(m, 1.0), False),
    "log": _math("log", lambda m: _float_of(m, max(math.log(m.mag + 1), m.frac) + 1), True,
                 False),
    "sqrt": _math("sqrt", lambda m: _float_of(m, math.sqrt(m.mag)), True, False),
    # + 0.0 turns -0.0 into 0.0: the sign of a zero differs between frameworks (-2.0 % 2.0 is
    # -0.0 in torch, 0.0 in tinyfw and Python) and 1 / x would turn it into an inf of each sign
    "reciprocal": unary("fib", lambda m: _float_of(m, 2.0 ** m.frac),
                        lambda L, x: L.math(x + 0.0, "reciprocal"), "({} + 0.0).reciprocal()",
                        False, True),
    "log_s": _safe("log", lambda m: _float_of(m, 2 * math.log(m.mag + 1) + 1)),
    "sqrt_s": _safe("sqrt", lambda m: _float_of(m, m.mag + 1)),
    "reciprocal_s": _safe("reciprocal", lambda m: _float_of(m, 1.0)),
    "clip": unary("f", lambda m: _same(m, min(m.mag, 1.25)),
                  lambda L, x: L.clip(x, -1.25, 0.5), "{}.clip(-1.25, 0.5)"),
    "contiguous": unary("fib", _same, lambda L, x: x.contiguous(), "{}.contiguous()"),
    "realize": unary("fib", _same, lambda L, x: L.realize(x), "{}.realize()"),
    "to_and_back": unary("fib", _same, lambda L, x: L.round_trip(x),
                         "{}.to('NUMPY' if dev == 'CPU' else 'CPU').to(dev)"),
}


def cast_op(kind: str) -> OpSpec:
    """x.float(), x.int() or x.bool(); float to int only from exact (finite) values."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: m.kind != kind and (m.exact or kind != INT))
        if i is None:
            return None
        m = metas[i]
        out = meta(m.shape, kind, m.mag if kind != BOOL else 1, 0, m.exact)
        return None if out is None else ((i,), None, out)
    name = {FLOAT: "float", INT: "int", BOOL: "bool"}[kind]
    return OpSpec(build, lambda L, xs, arg: L.cast(xs[0], kind), lambda n, a: f"{n[0]}.{name}()")


def binary(result: Callable[[Meta, Meta], Meta | None], call: Callable[[TinyLib, Any, Any], Any],
           text: str, ok_a: Callable[[Meta], bool], ok_b: Callable[[Meta, Meta], bool],
           in_grad: bool = True) -> OpSpec:
    """An elementwise op of a value and a second value (broadcast) or a Python scalar."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, ok_a)
        if i is None:
            return None
        a = metas[i]
        kinds = (FLOAT,) if grad else (FLOAT, INT, BOOL)
        j, s = partner(draw, metas, a, lambda m: ok_b(a, m), kinds)
        if j is None and s is None:
            return None
        b = metas[j] if j is not None else s.meta
        out = result(a, b)
        if out is None:
            return None
        shape = broadcast(a.shape, b.shape)
        out = meta(shape, out.kind, out.mag, out.frac, out.exact)
        return None if out is None else (((i, j) if j is not None else (i,)), s, out)

    def run(L: TinyLib, xs: list[Any], s: Scalar | None) -> Any:
        return call(L, xs[0], xs[1] if s is None else L.operand(s))

    def show(n: list[str], s: Scalar | None) -> str:
        return text.format(n[0], n[1] if s is None else repr(s))
    return OpSpec(build, run, show, in_grad)


def _arith(mag: Callable[[Meta, Meta], float], frac: Callable[[Meta, Meta], int]
           ) -> Callable[[Meta, Meta], Meta | None]:
    return lambda a, b: meta((), promote(a.kind, b.kind), mag(a, b), frac(a, b),
                             a.exact and b.exact)


_any = lambda m: True  # noqa: E731
_numeric = lambda m: m.kind != BOOL  # noqa: E731
_exact = lambda m: m.exact  # noqa: E731
_bits = lambda m: m.kind != FLOAT  # noqa: E731
_bool_result = lambda a, b: Meta((), BOOL)  # noqa: E731
_sum_mag = lambda a, b: a.mag + b.mag  # noqa: E731
_max_frac = lambda a, b: max(a.frac, b.frac)  # noqa: E731


def _div_result(a: Meta, b: Meta) -> Meta | None:
    return meta((), FLOAT, a.mag * 2.0 ** b.frac, 0, False)


SYMBOLS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge, "==": operator.eq,
    "!=": operator.ne, "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "//": operator.floordiv, "%": operator.mod,
}


def _compare(sym: str) -> OpSpec:
    return binary(_bool_result, lambda L, a, b: SYMBOLS[sym](a, b), f"({{}} {sym} {{}})",
                  _exact, lambda a, m: m.exact)


def _bitwise(sym: str) -> OpSpec:
    res = lambda a, b: meta((), promote(a.kind, b.kind), 2 * max(a.mag, b.mag) + 1)  # noqa: E731
    return binary(res, lambda L, a, b: SYMBOLS[sym](a, b), f"({{}} {sym} {{}})", _bits,
                  lambda a, m: _bits(m), False)


def _divmod(sym: str) -> OpSpec:
    """x // d and x % d for a nonzero int d (ints) or a power of two (exact floats)."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: m.kind in "fi" and m.exact)
        if i is None:
            return None
        a = metas[i]
        d = draw(st.sampled_from([2, 3, -2, -3] if a.kind == INT else [2.0, 0.5, -4.0]))
        mag = a.mag / min(abs(d), 1) + 1 if sym == "//" else abs(d)
        out = meta(a.shape, a.kind, mag, a.frac + (1 if d == 0.5 else 0), True)
        return None if out is None else ((i,), d, out)
    return OpSpec(build, lambda L, xs, d: SYMBOLS[sym](xs[0], d),
                  lambda n, d: f"({n[0]} {sym} {d!r})", False)


def _pow() -> OpSpec:
    """x ** p: small integer powers (exact), or 0.5 and 1.5 of exact values."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        p = draw(st.sampled_from([2, 3, 0.5, 1.5]))
        i = pick(draw, metas, lambda m: m.kind == FLOAT and (m.exact or isinstance(p, int)))
        if i is None:
            return None
        a = metas[i]
        if isinstance(p, int):
            out = meta(a.shape, FLOAT, a.mag ** p, a.frac * p, a.exact)
        else:
            out = meta(a.shape, FLOAT, a.mag ** p, 0, False)
        return None if out is None else ((i,), p, out)
    return OpSpec(build, lambda L, xs, p: xs[0] ** p, lambda n, p: f"({n[0]} ** {p!r})", False)


BINARY: dict[str, OpSpec] = {
    "add": binary(_arith(_sum_mag, _max_frac), lambda L, a, b: a + b, "({} + {})", _any,
                  lambda a, m: True),
    "sub": binary(_arith(_sum_mag, _max_frac), lambda L, a, b: a - b, "({} - {})", _numeric,
                  lambda a, m: _numeric(m)),
    "mul": binary(_arith(lambda a, b: a.mag * b.mag, lambda a, b: a.frac + b.frac),
                  lambda L, a, b: a * b, "({} * {})", _any, lambda a, m: True),
    "div": binary(_div_result, lambda L, a, b: a / (b + 0.0), "({} / ({} + 0.0))", _any,
                  lambda a, m: m.exact, False),
    "div_s": binary(lambda a, b: meta((), FLOAT, a.mag, 0, False),
                    lambda L, a, b: a / (b * b + 1), "({0} / ({1} * {1} + 1))",
                    _any, lambda a, m: m.kind == FLOAT),
    "maximum": binary(_arith(lambda a, b: max(a.mag, b.mag), _max_frac),
                      lambda L, a, b: L.maximum(a, b), "{}.maximum({})", _numeric,
                      lambda a, m: _numeric(m)),
    "minimum": binary(_arith(lambda a, b: max(a.mag, b.mag), _max_frac),
                      lambda L, a, b: L.minimum(a, b), "{}.minimum({})", _numeric,
                      lambda a, m: _numeric(m)),
    "lt": _compare("<"), "gt": _compare(">"), "le": _compare("<="), "ge": _compare(">="),
    "eq": _compare("=="), "ne": _compare("!="),
    "and": _bitwise("&"), "or": _bitwise("|"), "xor": _bitwise("^"),
    "floordiv": _divmod("//"), "mod": _divmod("%"), "pow": _pow(),
}


def _where() -> OpSpec:
    """cond.where(a, b): cond a bool value; a and b values or scalars, all broadcast."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        c = pick(draw, metas, lambda m: m.kind == BOOL)
        if c is None:
            return None
        cm = metas[c]
        kinds = (FLOAT,) if grad else (FLOAT, INT, BOOL)
        j1, s1 = partner(draw, metas, cm, lambda m: not grad or m.kind == FLOAT, kinds)
        if j1 is None and s1 is None:
            return None
        m1 = metas[j1] if j1 is not None else s1.meta
        shape = broadcast(cm.shape, m1.shape)
        j2, s2 = partner(draw, metas, Meta(shape, FLOAT), lambda m: not grad or m.kind == FLOAT,
                         kinds)
        if j2 is None and s2 is None:
            return None
        m2 = metas[j2] if j2 is not None else s2.meta
        if s1 is not None and s2 is not None and s1.meta.kind != s2.meta.kind:
            return None  # torch gives int64 or float64 for two Python numbers of two kinds
        out = meta(broadcast(shape, m2.shape), promote(m1.kind, m2.kind), max(m1.mag, m2.mag),
                   max(m1.frac, m2.frac), m1.exact and m2.exact)
        srcs = (c,) + tuple(j for j in (j1, j2) if j is not None)
        return None if out is None else (srcs, (s1, s2), out)

    def run(L: TinyLib, xs: list[Any], arg: tuple) -> Any:
        rest = iter(xs[1:])
        a, b = (L.operand(s) if s is not None else next(rest) for s in arg)
        return L.where(xs[0], a, b)

    def show(n: list[str], arg: tuple) -> str:
        rest = iter(n[1:])
        a, b = (repr(s) if s is not None else next(rest) for s in arg)
        return f"{n[0]}.where({a}, {b})"
    return OpSpec(build, run, show)


def _reduce(name: str) -> OpSpec:
    """sum, max, min or mean over None, one axis or several, keepdim or not."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        kinds = "fib" if name in ("sum", "mean") else "fi"
        i = pick(draw, metas, lambda m: m.kind in kinds)
        if i is None:
            return None
        m = metas[i]
        nd = len(m.shape)
        how = draw(st.sampled_from(["one", "several", "one", "all"])) if nd else "all"
        size = 1 if how == "one" else draw(st.integers(1, nd)) if how == "several" else 0
        axes = sorted(draw(st.lists(st.integers(0, nd - 1), min_size=size, max_size=size,
                                    unique=True))) if size else []
        axis: Any = None if not axes else axes[0] if len(axes) == 1 else tuple(axes)
        if isinstance(axis, int) and draw(st.booleans()):
            axis -= nd  # a negative axis
        keep = draw(st.booleans())
        axes_n = range(len(m.shape)) if axis is None else \
            [a % len(m.shape) for a in ((axis,) if isinstance(axis, int) else axis)]
        count = math.prod(m.shape[a] for a in axes_n)
        if name in ("max", "min") and count == 0:
            return None  # torch raises on an empty max
        shape = tuple(1 if k in axes_n else s for k, s in enumerate(m.shape)) if keep else \
            tuple(s for k, s in enumerate(m.shape) if k not in axes_n)
        if name == "sum":
            kind = INT if m.kind == BOOL else m.kind
            out = meta(shape, kind, m.mag * max(count, 1), m.frac, m.exact)
        elif name == "mean":
            out = meta(shape, FLOAT, m.mag, 0, False)
        else:
            out = meta(shape, m.kind, m.mag, m.frac, m.exact)
        return None if out is None else ((i,), (axis, keep), out)
    return OpSpec(build, lambda L, xs, a: L.reduce(xs[0], name, a[0], a[1]),
                  lambda n, a: f"{n[0]}.{name}({a[0]!r}, keepdim={a[1]})")


@functools.cache
def shapes_of(numel: int, ndim: int) -> tuple[tuple[int, ...], ...]:
    """Every shape of ndim axes holding numel elements."""
    if ndim == 0:
        return ((),) if numel == 1 else ()
    if numel == 0:
        return tuple(s for k in range(ndim) for s in [(1,) * k + (0,) + (1,) * (ndim - k - 1)])
    return tuple((d,) + rest for d in range(1, numel + 1) if numel % d == 0
                 for rest in shapes_of(numel // d, ndim - 1))


def _movement(build_arg: Callable[[Draw, Meta], tuple[Any, tuple[int, ...]] | None],
              call: Callable[[TinyLib, Any, Any], Any], text: Callable[[str, Any], str],
              kinds: str = "fib") -> OpSpec:
    """A view op: build_arg gives its argument and the new shape (or None: not possible)."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: m.kind in kinds)
        if i is None:
            return None
        m = metas[i]
        got = build_arg(draw, m)
        if got is None:
            return None
        arg, shape = got
        out = meta(shape, m.kind, m.mag, m.frac, m.exact)
        return None if out is None else ((i,), arg, out)
    return OpSpec(build, lambda L, xs, arg: call(L, xs[0], arg), lambda n, a: text(n[0], a))


def _reshape_arg(draw: Draw, m: Meta) -> tuple[Any, tuple[int, ...]] | None:
    options = [s for nd in range(4) for s in shapes_of(m.numel, nd)]
    shape = draw(st.sampled_from(options))
    arg = shape
    if shape and m.numel and draw(st.booleans()):
        k = draw(st.integers(0, len(shape) - 1))
        arg = shape[:k] + (-1,) + shape[k + 1:]
    return arg, shape


def _permute_arg(draw: Draw, m: Meta) -> tuple[Any, tuple[int, ...]] | None:
    order = tuple(draw(st.permutations(range(len(m.shape)))))
    return order, tuple(m.shape[o] for o in order)


def _expand_arg(draw: Draw, m: Meta) -> tuple[Any, tuple[int, ...]] | None:
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=1)))
    arg, shape = list(lead), list(lead)
    for s in m.shape:
        new = draw(st.integers(1, 4)) if s == 1 else s
        arg.append(-1 if new == s and draw(st.booleans()) else new)
        shape.append(new)
    return tuple(arg), tuple(shape)


def _pad_arg(draw: Draw, m: Meta) -> tuple[Any, tuple[int, ...]] | None:
    if not m.shape:
        return None
    pairs = []
    for s in m.shape:
        b = draw(st.integers(-min(s, 2), 2))
        a = draw(st.integers(-min(s - max(-b, 0), 2), 2))
        pairs.append((b, a))
    value = {FLOAT: scalar_for(draw, FLOAT), INT: scalar_for(draw, INT),
             BOOL: scalar_for(draw, BOOL)}[m.kind] if draw(st.booleans()) else Scalar(0)
    if m.kind == BOOL and not isinstance(value.value, bool):
        value = Scalar(False)
    shape = tuple(s + b + a for s, (b, a) in zip(m.shape, pairs))
    return (tuple(pairs), draw(st.booleans()), value), shape


def _pad_run(L: TinyLib, x: Any, arg: tuple) -> Any:
    pairs, flat, value = arg
    return L.pad(x, pairs, flat, value.value)


def _pad_text(n: str, arg: tuple) -> str:
    pairs, flat, value = arg
    return f"{n}.pad({flat_padding(pairs) if flat else pairs!r}, value={value!r})"


def _shrink_arg(draw: Draw, m: Meta) -> tuple[Any, tuple[int, ...]] | None:
    bounds = []
    for s in m.shape:
        b = draw(st.integers(0, s))
        bounds.append((b, draw(st.integers(b, s))))
    return tuple(bounds), tuple(e - b for b, e in bounds)


def _flip_arg(draw: Draw, m: Meta) -> tuple[Any, tuple[int, ...]] | None:
    if not m.shape:
        return None
    axes = draw(st.lists(st.integers(0, len(m.shape) - 1), min_size=1, unique=True))
    return tuple(axes), m.shape


def _index_arg(draw: Draw, m: Meta) -> tuple[Any, tuple[int, ...]] | None:
    index: list[Any] = []
    for s in m.shape[:draw(st.integers(0, len(m.shape)))]:
        how = draw(st.sampled_from(["slice", "int", "none", "all"]))
        if how == "none":
            index.append(None)
        if how == "int" and s > 0:
            index.append(draw(st.integers(-s, s - 1)))
            continue
        if how == "all":
            index.append(slice(None))
            continue
        step = draw(st.sampled_from([1, 2, 3, -1, -2]))
        start = draw(st.one_of(st.none(), st.integers(-s - 1, s)))
        stop = draw(st.one_of(st.none(), st.integers(-s - 1, s)))
        index.append(slice(start, stop, step))
    if draw(st.booleans()):
        index.append(Ellipsis)
    shape = np.zeros(m.shape)[tuple(index)].shape
    return tuple(index), shape


def _index_text(n: str, index: tuple) -> str:
    def one(i: Any) -> str:
        if isinstance(i, slice):
            return ":".join("" if v is None else str(v) for v in (i.start, i.stop, i.step))
        return "..." if i is Ellipsis else repr(i)
    if not index:
        return f"{n}[()]"
    return f"{n}[{', '.join(one(i) for i in index)}{',' if len(index) == 1 else ''}]"


def _cat() -> OpSpec:
    """Tensor.cat of a value and one or two values that match it except along dim."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: len(m.shape) > 0)
        if i is None:
            return None
        a = metas[i]
        d = draw(st.integers(0, len(a.shape) - 1))
        same = lambda m: len(m.shape) == len(a.shape) and all(  # noqa: E731
            x == y for k, (x, y) in enumerate(zip(m.shape, a.shape)) if k != d) and \
            (m.kind == FLOAT or not grad)
        others = [pick(draw, metas, same) for _ in range(draw(st.integers(1, 2)))]
        srcs = (i, *[j for j in others if j is not None])
        ms = [metas[j] for j in srcs]
        shape = a.shape[:d] + (sum(m.shape[d] for m in ms),) + a.shape[d + 1:]
        out = meta(shape, promote(*(m.kind for m in ms)), max(m.mag for m in ms),
                   max(m.frac for m in ms), all(m.exact for m in ms))
        return None if out is None else (srcs, d, out)
    return OpSpec(build, lambda L, xs, d: L.cat(xs, d),
                  lambda n, d: f"Tensor.cat({', '.join(n)}, dim={d})")


def _matmul() -> OpSpec:
    """a @ b for a value b that fits (broadcast batch axes, 1-D operands), else a @ a.T."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: len(m.shape) > 0 and m.kind in "fi")
        if i is None:
            return None
        a = metas[i]

        def fits(m: Meta) -> bool:
            try:
                np.matmul(np.zeros(a.shape), np.zeros(m.shape))
            except ValueError:
                return False
            return m.kind in "fi" and len(m.shape) > 0
        j = pick(draw, metas, fits) if draw(st.booleans()) else None
        if j is not None:
            b = metas[j]
        else:  # a @ a.transpose(-1, -2), or a dot product of a 1-D a with itself
            b = a if len(a.shape) == 1 else Meta(a.shape[:-2] + a.shape[:-3:-1], a.kind,
                                                 a.mag, a.frac, a.exact)
        shape = np.matmul(np.zeros(a.shape), np.zeros(b.shape)).shape
        k = a.shape[-1]
        out = meta(shape, promote(a.kind, b.kind), a.mag * b.mag * max(k, 1), a.frac + b.frac,
                   a.exact and b.exact)
        return None if out is None else (((i, j) if j is not None else (i,)), None, out)

    def run(L: TinyLib, xs: list[Any], arg: Any) -> Any:
        if len(xs) == 2:
            return L.matmul(xs[0], xs[1])
        x = xs[0]
        return L.matmul(x, x if x.ndim == 1 else x.transpose(-1, -2))

    def show(n: list[str], arg: Any) -> str:
        return f"({n[0]} @ {n[1] if len(n) == 2 else n[0] + '.transpose(-1, -2)'})"
    return OpSpec(build, run, show)


# ---------------------------------------------------------------------------------------------
# issue 11's ops: math, activations, statistics, scans, sorting, gathers, shape ops, einsum.
# Where tinyfw's form and torch's differ, an op gives both and L.call runs its library's.


@dataclass(frozen=True)
class IntArray:
    """A constant int32 tensor an op takes as an argument (an index)."""
    shape: tuple[int, ...]
    values: tuple[int, ...]

    def array(self) -> np.ndarray:
        return np.array(self.values, dtype=np.int32).reshape(self.shape)

    def __repr__(self) -> str:
        return (f"Tensor(np.array({list(self.values)!r}, dtype=np.int32)"
                f".reshape({self.shape!r}), device=dev)")


def int_array(draw: Draw, shape: tuple[int, ...], low: int, high: int) -> IntArray:
    """An IntArray of shape with random values in [low, high] (from a drawn seed: even the
    simplest example has values other than low)."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    return IntArray(tuple(shape), tuple(rng.integers(low, high + 1, shape).flatten().tolist()))


def fits(a: Meta, m: Meta) -> bool:
    """Whether m broadcasts with a into a shape the generator allows."""
    out = broadcast(a.shape, m.shape)
    return out is not None and len(out) <= MAX_NDIM and math.prod(out) <= MAX_NUMEL


def op1(kinds: str, result: Callable[[Meta, tuple], Meta | None], tiny: Callable[..., Any],
        ref: Callable[..., Any], text: str,
        args: Callable[[Draw, Meta], tuple | None] = lambda draw, m: (),
        ok: Callable[[Meta], bool] = lambda m: True, in_grad: bool = True,
        needs_exact: bool = False) -> OpSpec:
    """An op of one value of the given kinds (that ok accepts) and drawn arguments (args; None:
    not possible): tiny(x, *args) in tinyfw, ref(x, *args) in torch; result gives its Meta,
    text its repro ({0} the value, {1}... the arguments)."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: m.kind in kinds and (m.exact or not needs_exact)
                 and ok(m))
        if i is None:
            return None
        arg = args(draw, metas[i])
        out = None if arg is None else result(metas[i], arg)
        return None if out is None else ((i,), arg, out)
    return OpSpec(build, lambda L, xs, arg: L.call(tiny, ref, xs[0], *arg),
                  lambda n, arg: text.format(n[0], *arg), in_grad, kinds)


def same_syntax(method: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """tinyfw's and torch's form of x.method(*args), for a method both spell alike."""
    fn = lambda x, *a: getattr(x, method)(*a)  # noqa: E731
    return fn, fn


def _in_domain(name: str, pre: Callable[[Any], Any], pre_text: str,
               mag: Callable[[Meta], float | None]) -> OpSpec:
    """name of pre(x), an expression of x inside name's domain, away from its edges (finite
    values and gradients): for gradient programs."""
    def result(m: Meta) -> Meta | None:
        bound = mag(m)
        return None if bound is None else _float_of(m, bound)
    return unary("f", result, lambda L, x: L.math(pre(x), name), f"{pre_text}.{name}()")


_within_three_quarters = (lambda x: x.tanh() * 0.75, "({0}.tanh() * 0.75)")
_above_one = (lambda x: x * x + 1.25, "({0} * {0} + 1.25)")  # at least 1.25


def _square_bounded(m: Meta, f: Callable[[float], float]) -> float | None:
    return f(m.mag * m.mag + 1.25) if m.mag < 1e15 else None


MATH: dict[str, OpSpec] = {
    "atan": _math("atan", lambda m: _float_of(m, 1.6), False),
    "asinh": _math("asinh", lambda m: _float_of(m, math.log(2 * m.mag + 1) + 1), False),
    "sinh": _math("sinh", _bounded_exp, False),
    "cosh": _math("cosh", _bounded_exp, False),
    "erf": _math("erf", lambda m: _float_of(m, 1.0), False),
    # the domain-limited ops of exact values (nan outside the domain, infs at its edges, in
    # both libraries), and of values kept inside it (in gradient programs)
    "asin": _math("asin", lambda m: _float_of(m, 1.6), True, False),
    "acos": _math("acos", lambda m: _float_of(m, 3.2), True, False),
    # |atanh| of a finite value on a grid of 2**-frac: at most atanh(1 - 2**-frac)
    "atanh": _math("atanh", lambda m: _float_of(m, 0.5 * m.frac + 2), True, False),
    "acosh": _math("acosh", lambda m: _float_of(m, math.log(2 * m.mag + 2) + 1), True, False),
    "log10": _math("log10", lambda m: _float_of(m, max(math.log(m.mag + 1), m.frac) + 1), True,
                   False),
    "asin_s": _in_domain("asin", *_within_three_quarters, lambda m: 0.9),
    "acos_s": _in_domain("acos", *_within_three_quarters, lambda m: 2.5),
    "atanh_s": _in_domain("atanh", *_within_three_quarters, lambda m: 1.0),
    "acosh_s": _in_domain("acosh", *_above_one,
                          lambda m: _square_bounded(m, lambda v: math.log(2 * v) + 1)),
    "log10_s": _safe("log10", lambda m: _float_of(m, 2 * math.log(m.mag + 1) + 1)),
    "isfinite": unary("fib", lambda m: meta(m.shape, BOOL, 1), lambda L, x: L.call(
        Tensor.isfinite, torch.isfinite, x), "{}.isfinite()"),
    "bitwise_not": unary("ib", lambda m: _same(m, m.mag + 1), lambda L, x: L.call(
        Tensor.bitwise_not, torch.bitwise_not, x), "{}.bitwise_not()", False),
}


def _torch_number(x: torch.Tensor, b: Any) -> torch.Tensor:
    """b, a tensor or a Python number, as a tensor (of x's dtype for a number)."""
    return b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=x.dtype)


def _fmod() -> OpSpec:
    """a.fmod(d), exact for exact operands: ints by a nonzero int, floats by a nonzero number
    or (value programs) by a value (its zeros give nan: the result counts as inexact)."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: m.kind in "fi" and m.exact)
        if i is None:
            return None
        a = metas[i]
        j = pick(draw, metas, lambda m: m.exact and m.kind in "fi" and FLOAT in (a.kind, m.kind)
                 and fits(a, m)) if not grad and draw(st.booleans()) else None
        s = None if j is not None else \
            scalar_for(draw, a.kind if grad else draw(st.sampled_from([a.kind, FLOAT])), True)
        b = metas[j] if j is not None else s.meta
        out = meta(broadcast(a.shape, b.shape), promote(a.kind, b.kind), min(a.mag, b.mag),
                   max(a.frac, b.frac), j is None)
        return None if out is None else (((i, j) if j is not None else (i,)), s, out)

    def run(L: TinyLib, xs: list[Any], s: Scalar | None) -> Any:
        return xs[0].fmod(xs[1] if s is None else s.value)
    return OpSpec(build, run, lambda n, s: f"{n[0]}.fmod({n[1] if s is None else s!r})",
                  kinds="fi")


def _isclose() -> OpSpec:
    """a.isclose(b) of exact values (ints with a number), with tolerances that are powers of
    two: exact thresholds, so no rounding decides."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: m.kind in "fi" and m.exact)
        if i is None:
            return None
        a = metas[i]
        j = pick(draw, metas, lambda m: m.kind == FLOAT and m.exact and fits(a, m)) \
            if a.kind == FLOAT and draw(st.booleans()) else None
        s = scalar_for(draw, a.kind) if j is None else None
        tol = draw(st.sampled_from([(0.0625, 0.25), (0.0, 0.0), (0.25, 0.0)]))
        out = meta(a.shape if j is None else broadcast(a.shape, metas[j].shape), BOOL, 1)
        return None if out is None else (((i, j) if j is not None else (i,)), (s, tol), out)

    def run(L: TinyLib, xs: list[Any], arg: tuple) -> Any:
        s, (rtol, atol) = arg
        return L.call(lambda a, b: a.isclose(b, rtol, atol),
                      lambda a, b: torch.isclose(a, _torch_number(a, b), rtol, atol),
                      xs[0], xs[1] if s is None else s.value)

    def show(n: list[str], arg: tuple) -> str:
        s, (rtol, atol) = arg
        return f"{n[0]}.isclose({n[1] if s is None else s!r}, rtol={rtol}, atol={atol})"
    return OpSpec(build, run, show, kinds="fi")


def _shift(sym: str) -> OpSpec:
    """x << k or x >> k for an int value and a small Python int."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: m.kind == INT)
        if i is None:
            return None
        k, a = draw(st.sampled_from([1, 3, 0, 5])), metas[i]
        out = meta(a.shape, INT, a.mag * 2 ** k if sym == "<<" else a.mag)
        return None if out is None else ((i,), k, out)
    return OpSpec(build, lambda L, xs, k: xs[0] << k if sym == "<<" else xs[0] >> k,
                  lambda n, k: f"({n[0]} {sym} {k})", False, "i")


def _div_rounded(mode: str) -> OpSpec:
    """a.div(d, rounding_mode=mode) of an exact value: ints by a nonzero int or by b * b + 1 (an
    int value b), floats by a power of two (an exact quotient)."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: m.kind in "fi" and m.exact)
        if i is None:
            return None
        a = metas[i]
        j = pick(draw, metas, lambda m: m.kind == INT and m.mag < 2 ** 11 and fits(a, m)) \
            if a.kind == INT and draw(st.booleans()) else None
        if j is not None:
            out = meta(broadcast(a.shape, metas[j].shape), INT, a.mag + 1)
            return None if out is None else ((i, j), None, out)
        d = draw(st.sampled_from([2, 3, -2, -3] if a.kind == INT else [2.0, 0.5, -4.0, 2]))
        out = meta(a.shape, a.kind, a.mag / min(abs(d), 1) + 1)
        return None if out is None else ((i,), d, out)

    def run(L: TinyLib, xs: list[Any], d: Any) -> Any:
        return xs[0].div(xs[1] * xs[1] + 1 if d is None else d, rounding_mode=mode)

    def show(n: list[str], d: Any) -> str:
        divisor = f"{n[1]} * {n[1]} + 1" if d is None else repr(d)
        return f"{n[0]}.div({divisor}, rounding_mode={mode!r})"
    return OpSpec(build, run, show, False, "fi")


_float_value = lambda m: m.kind == FLOAT  # noqa: E731

BINARY_MATH: dict[str, OpSpec] = {
    # + 0.0 turns -0.0 into 0.0: the sign of an exact zero may differ between the libraries
    "copysign": binary(lambda a, b: meta((), FLOAT, a.mag, a.frac, a.exact),
                       lambda L, a, b: L.call(Tensor.copysign, torch.copysign, a, b + 0.0),
                       "{}.copysign({} + 0.0)", _any, lambda a, m: m.exact),
    "fmod": _fmod(),
    "logaddexp": binary(lambda a, b: meta((), FLOAT, max(a.mag, b.mag) + 1, 0, False),
                        lambda L, a, b: L.call(Tensor.logaddexp, lambda x, y: torch.logaddexp(
                            x, _torch_number(x, y)), a, b),
                        "{}.logaddexp({})", _float_value, lambda a, m: _float_value(m)),
    "isclose": _isclose(),
    "lshift": _shift("<<"), "rshift": _shift(">>"),
    "div_trunc": _div_rounded("trunc"), "div_floor": _div_rounded("floor"),
}


def _torch_gelu(x: torch.Tensor, approximate: str) -> torch.Tensor:
    """torch's gelu, but gelu(inf) is inf, tinyfw's value (torch's erf form gives nan there, a
    difference tests/api/test_api_elementwise.py documents)."""
    out = F.gelu(x, approximate=approximate)
    return out if approximate == "tanh" else torch.where(x == math.inf, x, out)


def _axis_of(draw: Draw, m: Meta) -> int:
    """An axis of m (negative half the time); 0 or -1 for a 0-d value, as torch allows."""
    nd = max(len(m.shape), 1)
    return draw(st.integers(-nd, nd - 1))


ACTIVATIONS: dict[str, OpSpec] = {
    "gelu": op1("f", lambda m, a: _float_of(m, m.mag + 1), lambda x, ap: x.gelu(ap),
                _torch_gelu, "{0}.gelu(approximate={1!r})",
                lambda draw, m: (draw(st.sampled_from(["none", "tanh"])),)),
    "celu": op1("f", lambda m, a: _float_of(m, max(m.mag, a[0])), lambda x, a: x.celu(a),
                F.celu, "{0}.celu({1!r})",
                lambda draw, m: (draw(st.sampled_from([1.0, 0.5, 2.0])),)),
    "selu": op1("f", lambda m, a: _float_of(m, 1.06 * m.mag + 1.8), Tensor.selu, F.selu,
                "{0}.selu()"),
    "softsign": op1("fi", lambda m, a: _float_of(m, 1.0), Tensor.softsign, F.softsign,
                    "{0}.softsign()"),
    "hardsigmoid": op1("f", lambda m, a: _float_of(m, 1.0), Tensor.hardsigmoid, F.hardsigmoid,
                       "{0}.hardsigmoid()"),
    "hardswish": op1("f", lambda m, a: _float_of(m, m.mag), Tensor.hardswish, F.hardswish,
                     "{0}.hardswish()"),
    "logsigmoid": op1("f", lambda m, a: _float_of(m, m.mag + 1), Tensor.logsigmoid,
                      F.logsigmoid, "{0}.logsigmoid()"),
    "softmin": op1("f", lambda m, a: _float_of(m, 1.0), Tensor.softmin,
                   lambda x, axis: F.softmin(x, axis), "{0}.softmin({1})",
                   lambda draw, m: (_axis_of(draw, m),)),
}


def draw_axes(draw: Draw, m: Meta) -> tuple[Any, bool]:
    """The axis argument of a reduce of m (None, one axis, maybe negative, or several) and
    keepdim."""
    nd = len(m.shape)
    how = draw(st.sampled_from(["one", "several", "one", "all"])) if nd else "all"
    size = 1 if how == "one" else draw(st.integers(1, nd)) if how == "several" else 0
    axes = sorted(draw(st.lists(st.integers(0, nd - 1), min_size=size, max_size=size,
                                unique=True))) if size else []
    axis: Any = None if not axes else axes[0] if len(axes) == 1 else tuple(axes)
    if isinstance(axis, int) and draw(st.booleans()):
        axis -= nd  # a negative axis
    return axis, draw(st.booleans())


def reduced(m: Meta, axis: Any, keep: bool) -> tuple[tuple[int, ...], int]:
    """The shape of a reduce of m over axis (keepdim keep) and how many values meet in each."""
    axes_n = range(len(m.shape)) if axis is None else \
        [a % len(m.shape) for a in ((axis,) if isinstance(axis, int) else axis)]
    count = math.prod(m.shape[a] for a in axes_n)
    shape = tuple(1 if k in axes_n else s for k, s in enumerate(m.shape)) if keep else \
        tuple(s for k, s in enumerate(m.shape) if k not in axes_n)
    return shape, count


def torch_dims(x: torch.Tensor, axis: Any) -> tuple[int, ...]:
    """axis (None, an int or a tuple) as torch's tuple of dims (every axis for None)."""
    return tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis


def _product_mag(m: Meta, count: int) -> float:
    """A bound of the product of count values of m (inf when it would overflow the bound)."""
    return math.inf if count * math.log2(max(m.mag, 1)) > 120 else max(m.mag, 1.0) ** count


def _torch_prod(x: torch.Tensor, axis: Any, keep: bool) -> torch.Tensor:
    """x.prod over axis as tinyfw's (torch's prod takes one dim: one at a time, last first)."""
    if axis is None or x.ndim == 0:
        out = x.prod()
        return out.reshape((1,) * x.ndim) if keep else out
    for a in sorted((a % x.ndim for a in torch_dims(x, axis)), reverse=True):
        x = x.prod(a, keepdim=keep)
    return x


def _prod_result(m: Meta, arg: tuple) -> Meta | None:
    shape, count = reduced(m, *arg)
    return meta(shape, FLOAT if m.kind == FLOAT else INT, _product_mag(m, max(count, 1)),
                m.frac * count, m.exact)


def _torch_sum_dtype(x: torch.Tensor, axis: Any, keep: bool, dtype: str) -> torch.Tensor:
    dt = torch.get_default_dtype() if dtype == "float32" else getattr(torch, dtype)
    if x.ndim == 0:
        return x.sum(dtype=dt)
    return x.sum(torch_dims(x, axis), keepdim=keep, dtype=dt)


def _sum_dtype_args(draw: Draw, m: Meta) -> tuple:
    dtype = draw(st.sampled_from(["float32", "int32", "int64"] if m.exact else ["float32"]))
    return (*draw_axes(draw, m), dtype)


def _sum_dtype_result(m: Meta, arg: tuple) -> Meta | None:
    axis, keep, dtype = arg
    shape, count = reduced(m, axis, keep)
    kind = FLOAT if dtype == "float32" else INT
    return meta(shape, kind, (m.mag + 1) * max(count, 1), m.frac if kind == FLOAT else 0,
                m.exact)


def _std_mean_args(draw: Draw, m: Meta) -> tuple:
    return (*draw_axes(draw, m), draw(st.sampled_from([1, 0])), draw(st.sampled_from([0, 1])))


def _normalize_args(draw: Draw, m: Meta) -> tuple:
    """p and dim; not the inf norm of an empty dim (a max of nothing: torch raises)."""
    dim = _axis_of(draw, m)
    return draw(st.sampled_from([2.0, 1.0, 3.0] + [math.inf] * (m.shape[dim] > 0))), dim


def _torch_std_mean(x: torch.Tensor, axis: Any, keep: bool, correction: int,
                    which: int) -> torch.Tensor:
    """torch.std_mean(...)[which], quiet about its nan for too few values (tinyfw's too). The
    mean is torch.mean's: std_mean's own (Welford's) is nan or inf for an inf among the values,
    as their order happens to be ([inf, 1.0, 0.0]: nan, [1.0, inf]: inf); tinyfw's is inf."""
    if which == 1:
        return x.mean(torch_dims(x, axis), keepdim=keep) if x.ndim else x
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "std_mean\\(\\): degrees of freedom")
        return torch.std_mean(x, axis, keepdim=keep, correction=correction)[0]


STATS: dict[str, OpSpec] = {
    "prod": op1("fib", _prod_result, lambda x, axis, keep: x.prod(axis, keepdim=keep),
                _torch_prod, "{0}.prod({1!r}, keepdim={2})", draw_axes),
    "std_mean": op1("f", lambda m, a: meta(reduced(m, a[0], a[1])[0], FLOAT, 2 * m.mag, 0,
                                           False),
                    lambda x, axis, keep, c, k: x.std_mean(axis, keep, c)[k],
                    _torch_std_mean,
                    "{0}.std_mean({1!r}, keepdim={2}, correction={3})[{4}]", _std_mean_args),
    "normalize": op1("f", lambda m, a: _float_of(m, 1.0), lambda x, p, d: x.normalize(p, d),
                     lambda x, p, d: F.normalize(x, p, d), "{0}.normalize({1!r}, {2})",
                     _normalize_args, lambda m: len(m.shape) > 0),
    "sum_dtype": op1("fib", _sum_dtype_result,
                     lambda x, axis, keep, dt: x.sum(axis, keepdim=keep, dtype=dt),
                     _torch_sum_dtype, "{0}.sum({1!r}, keepdim={2}, dtype={3!r})",
                     _sum_dtype_args, in_grad=False),  # torch: "Autograd not support dtype"
}


def _scan_result(m: Meta, arg: tuple, name: str) -> Meta | None:
    n = m.shape[arg[0] % len(m.shape)] if m.shape else 1
    kind = FLOAT if m.kind == FLOAT else INT
    if name == "cumsum":
        return meta(m.shape, kind, m.mag * max(n, 1), m.frac, m.exact)
    if name == "cumprod":
        return meta(m.shape, kind, _product_mag(m, n), m.frac * n, m.exact)
    if name == "logcumsumexp":
        return meta(m.shape, FLOAT, m.mag + math.log(n + 1) + 1, 0, False)
    if arg[1] == 1:  # cummax's or cummin's indices
        return meta(m.shape, INT, n)
    return meta(m.shape, m.kind, m.mag, m.frac, m.exact)


def _scan(name: str, kinds: str) -> OpSpec:
    """x.cumsum(axis) and the other scans; cummax and cummin give their values or (of exact
    values: a tie is a tie in both libraries) their indices."""
    def args(draw: Draw, m: Meta) -> tuple:
        if name not in ("cummax", "cummin"):
            return (_axis_of(draw, m),)
        return _axis_of(draw, m), draw(st.sampled_from([0, 1] if m.exact else [0]))
    if name in ("cummax", "cummin"):
        fn = lambda x, axis, k: getattr(x, name)(axis)[k]  # noqa: E731
        text = f"{{0}}.{name}({{1}})[{{2}}]"
    else:
        fn = lambda x, axis: getattr(x, name)(axis)  # noqa: E731
        text = f"{{0}}.{name}({{1}})"
    return op1(kinds, lambda m, a: _scan_result(m, a, name), fn, fn, text, args)


SCANS: dict[str, OpSpec] = {
    "cumsum": _scan("cumsum", "fib"), "cumprod": _scan("cumprod", "fib"),
    "cummax": _scan("cummax", "fib"), "cummin": _scan("cummin", "fib"),
    "logcumsumexp": _scan("logcumsumexp", "f"),
}


def _sort_args(draw: Draw, m: Meta) -> tuple:
    """dim, descending and which output: the indices only of exact values (a tie is a tie in
    both libraries, and both sort stably: torch with stable=True)."""
    return _axis_of(draw, m), draw(st.booleans()), draw(st.sampled_from([0, 1] if m.exact
                                                                         else [0]))


def _sort_result(m: Meta, arg: tuple) -> Meta | None:
    dim, _, k = arg
    if k == 1:
        return meta(m.shape, INT, m.shape[dim % len(m.shape)] if m.shape else 1)
    return meta(m.shape, m.kind, m.mag, m.frac, m.exact)


def _topk_args(draw: Draw, m: Meta) -> tuple:
    dim = _axis_of(draw, m)
    n = m.shape[dim % len(m.shape)] if m.shape else 1
    return draw(st.sampled_from([min(2, n), n, 0, min(1, n)])), dim, draw(st.booleans())


def _topk_result(m: Meta, arg: tuple) -> Meta | None:
    k, dim, _ = arg
    shape = list(m.shape)
    if shape:
        shape[dim % len(shape)] = k
    return meta(tuple(shape), m.kind, m.mag, m.frac, m.exact)


SORTS: dict[str, OpSpec] = {
    "sort": op1("fib", _sort_result, lambda x, d, desc, k: x.sort(d, desc)[k],
                lambda x, d, desc, k: x.sort(dim=d, descending=desc, stable=True)[k],
                "{0}.sort({1}, descending={2})[{3}]", _sort_args),
    "argsort": op1("fib", lambda m, a: _sort_result(m, (a[0], a[1], 1)),
                   lambda x, d, desc: x.argsort(d, desc),
                   lambda x, d, desc: torch.argsort(x, dim=d, descending=desc, stable=True),
                   "{0}.argsort({1}, descending={2})", lambda draw, m: _sort_args(draw, m)[:2],
                   needs_exact=True),
    # torch leaves which of equal values topk picks open: values only, no gradients
    "topk": op1("fi", _topk_result, lambda x, k, d, big: x.topk(k, d, big)[0],
                lambda x, k, d, big: x.topk(k, d, big)[0], "{0}.topk({1}, {2}, {3})[0]",
                _topk_args, in_grad=False),
}


def _gather() -> OpSpec:
    """x.gather(dim, index): index a constant, or an int value v of a fitting shape as
    v % size (in range)."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: len(m.shape) > 0 and m.numel > 0)
        if i is None:
            return None
        x = metas[i]
        dim = draw(st.integers(0, len(x.shape) - 1))
        size = x.shape[dim]

        def fitting(m: Meta) -> bool:
            return m.kind == INT and len(m.shape) == len(x.shape) and all(
                a <= b for d, (a, b) in enumerate(zip(m.shape, x.shape)) if d != dim)
        j = pick(draw, metas, fitting) if draw(st.booleans()) else None
        if j is not None:
            return (i, j), (dim, None, size), _same(Meta(metas[j].shape, x.kind, x.mag, x.frac,
                                                         x.exact))
        shape = tuple(draw(st.sampled_from([2, 1, 3])) if d == dim else
                      s - draw(st.integers(0, s)) for d, s in enumerate(x.shape))
        index = int_array(draw, shape, 0, size - 1)
        return (i,), (dim, index, size), _same(Meta(shape, x.kind, x.mag, x.frac, x.exact))

    def run(L: TinyLib, xs: list[Any], arg: tuple) -> Any:
        dim, index, size = arg
        idx = L.index(index) if index is not None else xs[1] % size
        return L.call(lambda x, i: x.gather(dim, i), lambda x, i: x.gather(dim, i.long()),
                      xs[0], idx)

    def show(n: list[str], arg: tuple) -> str:
        dim, index, size = arg
        return f"{n[0]}.gather({dim}, {index!r})" if index is not None else \
            f"{n[0]}.gather({dim}, {n[1]} % {size})"
    return OpSpec(build, run, show)


def _take() -> OpSpec:
    """x[...] with integer tensors (negative entries too) on some of the leading axes, mixed
    with ints and whole slices; the tensors are constants, or an int value v as v % size."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: len(m.shape) > 0)
        if i is None:
            return None
        x = metas[i]
        count = draw(st.integers(1, len(x.shape)))
        hows = [draw(st.sampled_from(["tensor", "slice", "int"])) if s else "slice"
                for s in x.shape[:count]]
        sized = [k for k, s in enumerate(x.shape[:count]) if s > 0]
        if not sized:
            return None
        if "tensor" not in hows:
            hows[draw(st.sampled_from(sized))] = "tensor"
        j = pick(draw, metas, lambda m: m.kind == INT and len(m.shape) <= 2 and m.numel <= 12) \
            if draw(st.booleans()) else None
        shape = metas[j].shape if j is not None else \
            tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
        entries: list[Any] = []
        computed = j is not None
        for how, s in zip(hows, x.shape):
            if how == "tensor" and computed:
                entries.append(("v", s))
                computed = False  # the value once, constants for the other tensor entries
            elif how == "tensor":
                entries.append(int_array(draw, shape, -s, s - 1))
            elif how == "int":
                entries.append(draw(st.integers(-s, s - 1)))
            else:
                entries.append(slice(None))
        probe = tuple(torch.zeros(shape, dtype=torch.long) if not isinstance(e, (int, slice))
                      else e for e in entries)
        out_shape = tuple(torch.zeros(x.shape)[probe].shape)
        out = meta(out_shape, x.kind, x.mag, x.frac, x.exact)
        if out is None:
            return None
        return ((i, j) if j is not None else (i,)), tuple(entries), out

    def run(L: TinyLib, xs: list[Any], entries: tuple) -> Any:
        index = tuple(xs[1] % e[1] if isinstance(e, tuple) else L.index(e)
                      if isinstance(e, IntArray) else e for e in entries)
        return L.call(lambda x, *ix: x[ix], lambda x, *ix: x[tuple(
            e.long() if isinstance(e, torch.Tensor) else e for e in ix)], xs[0], *index)

    def show(n: list[str], entries: tuple) -> str:
        parts = [f"{n[1]} % {e[1]}" if isinstance(e, tuple) else ":" if isinstance(e, slice)
                 else repr(e) for e in entries]
        return f"{n[0]}[{', '.join(parts)}{',' if len(parts) == 1 else ''}]"
    return OpSpec(build, run, show)


def _masked_fill() -> OpSpec:
    """x.masked_fill(mask, number): a bool value as the mask, broadcast with x, or (no such
    value) x > 0.5 of an exact x."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: True)
        if i is None:
            return None
        x = metas[i]
        c = pick(draw, metas, lambda m: m.kind == BOOL and fits(x, m))
        if c is None and not (x.exact and x.kind != BOOL):
            return None
        s = scalar_for(draw, x.kind)
        shape = x.shape if c is None else broadcast(x.shape, metas[c].shape)
        out = meta(shape, x.kind, max(x.mag, s.meta.mag), max(x.frac, s.meta.frac), x.exact)
        return None if out is None else (((i,) if c is None else (i, c)), s, out)

    def run(L: TinyLib, xs: list[Any], s: Scalar) -> Any:
        return xs[0].masked_fill(xs[0] > 0.5 if len(xs) == 1 else xs[1], s.value)

    def show(n: list[str], s: Scalar) -> str:
        return f"{n[0]}.masked_fill({n[0] + ' > 0.5' if len(n) == 1 else n[1]}, {s!r})"
    return OpSpec(build, run, show)


GATHERS: dict[str, OpSpec] = {"gather": _gather(), "take": _take(),
                              "masked_fill": _masked_fill()}


def _diagonal_args(draw: Draw, m: Meta) -> tuple:
    nd = len(m.shape)
    d1, d2 = draw(st.lists(st.integers(0, nd - 1), min_size=2, max_size=2, unique=True))
    return draw(st.integers(-2, 2)), d1 - nd * draw(st.integers(0, 1)), d2


def _roll_args(draw: Draw, m: Meta) -> tuple:
    nd = len(m.shape)
    shifts = st.sampled_from([1, -2, 3, 0, -5])
    if not nd or draw(st.integers(0, 2)) == 0:
        return draw(shifts), None
    dims = tuple(draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=2,
                               unique_by=lambda d: d % nd)))
    return tuple(draw(shifts) for _ in dims), dims


def _repeat_interleave_args(draw: Draw, m: Meta) -> tuple:
    """repeats, and dim: None (the flattened tensor) or an axis."""
    dim = draw(st.one_of(st.none(), st.integers(-len(m.shape), len(m.shape) - 1))) \
        if m.shape else None
    return draw(st.sampled_from([2, 3, 1, 0])), dim


def _repeat_interleave_result(m: Meta, arg: tuple) -> Meta | None:
    repeats, dim = arg
    if dim is None:
        return _same(Meta((m.numel * repeats,), m.kind, m.mag, m.frac, m.exact))
    shape = list(m.shape)
    shape[dim % len(shape)] *= repeats
    return _same(Meta(tuple(shape), m.kind, m.mag, m.frac, m.exact))


def _pad_mode_args(draw: Draw, m: Meta) -> tuple | None:
    """A flat padding of the last 1 to 3 axes and a mode, in the mode's domain (reflect: less
    than the size, circular: at most the size)."""
    mode = draw(st.sampled_from(["reflect", "replicate", "circular"] if m.kind != BOOL
                                else ["circular"]))
    axes = draw(st.integers(1, min(3, len(m.shape))))
    flat: list[int] = []
    for s in reversed(m.shape[-axes:]):
        most = min(3, s - 1 if mode == "reflect" else s)
        flat += [most - draw(st.integers(0, most)), most - draw(st.integers(0, most))]
    return tuple(flat), mode


def _pad_mode_result(m: Meta, arg: tuple) -> Meta | None:
    flat, _ = arg
    shape = list(m.shape)
    for k in range(len(flat) // 2):
        shape[-1 - k] += flat[2 * k] + flat[2 * k + 1]
    return _same(Meta(tuple(shape), m.kind, m.mag, m.frac, m.exact))


def _torch_pad_mode(x: torch.Tensor, flat: tuple[int, ...], mode: str) -> torch.Tensor:
    """F.pad with a mode, which takes the padded axes and one or two more: the leading axes
    flattened into one, and back."""
    k = len(flat) // 2
    lead = x.shape[:x.ndim - k]
    out = F.pad(x.reshape((-1,) + x.shape[x.ndim - k:]), flat, mode=mode)
    return out.reshape(lead + out.shape[1:])


def _unfold_args(draw: Draw, m: Meta) -> tuple:
    dim = _axis_of(draw, m)
    s = m.shape[dim]
    return dim, draw(st.sampled_from([min(2, s), 1, s])), draw(st.sampled_from([1, 2, 3]))


def _unfold_result(m: Meta, arg: tuple) -> Meta | None:
    dim, size, step = arg
    shape = list(m.shape)
    shape[dim] = (shape[dim] - size) // step + 1
    return _same(Meta(tuple(shape) + (size,), m.kind, m.mag, m.frac, m.exact))


def _diagonal_result(m: Meta, arg: tuple) -> Meta | None:
    shape = np.zeros(m.shape).diagonal(*arg).shape
    return _same(Meta(shape, m.kind, m.mag, m.frac, m.exact))


def _einsum() -> OpSpec:
    """Tensor.einsum of one value (float or int) or two floats: repeated labels in an operand
    (a diagonal), labels shared by the two (sizes equal, or 1: broadcast), an explicit output
    of some labels in any order, or the implicit one."""
    def build(draw: Draw, metas: list[Meta], grad: bool) -> Built:
        i = pick(draw, metas, lambda m: m.kind in "fi")
        if i is None:
            return None
        a = metas[i]
        j = pick(draw, metas, lambda m: m.kind == FLOAT) if a.kind == FLOAT and \
            draw(st.booleans()) else None
        size: dict[str, int] = {}
        terms = []
        for m in [a] if j is None else [a, metas[j]]:
            term, own = "", {}  # this operand's labels and their sizes in it
            for s in m.shape:
                mine = [c for c in term if own[c] == s]
                theirs = [c for c in size if c not in term and (size[c] == s or 1 in (size[c], s))]
                how = draw(st.sampled_from(["shared", "new", "repeat"] if terms else
                                           ["new", "repeat"]))
                if how == "repeat" and mine:
                    c = draw(st.sampled_from(mine))
                elif how == "shared" and theirs:
                    c = draw(st.sampled_from(theirs))
                else:
                    c = "abcdefghijkl"[len(size)]
                term += c
                own[c] = s
                size[c] = s if size.get(c, 1) == 1 else size[c]
            terms.append(term)
        labels = "".join(terms)
        if draw(st.booleans()):
            order = draw(st.permutations(sorted(size)))
            out_labels = "".join(order[:draw(st.integers(0, len(order)))])
            formula = ",".join(terms) + "->" + out_labels
        else:
            out_labels = "".join(sorted(c for c in size if labels.count(c) == 1))
            formula = ",".join(terms)
        summed = math.prod(size[c] for c in size if c not in out_labels)
        ms = [a] if j is None else [a, metas[j]]
        out = meta(tuple(size[c] for c in out_labels), a.kind,
                   math.prod(m.mag for m in ms) * max(summed, 1), sum(m.frac for m in ms),
                   all(m.exact for m in ms))
        return None if out is None else (((i,) if j is None else (i, j)), formula, out)

    def run(L: TinyLib, xs: list[Any], formula: str) -> Any:
        return L.call(lambda *t: Tensor.einsum(formula, *t),
                      lambda *t: torch.einsum(formula, *t), *xs)
    return OpSpec(build, run, lambda n, f: f"Tensor.einsum({f!r}, {', '.join(n)})",
                  kinds="fi")


_tril, _triu = same_syntax("tril"), same_syntax("triu")
_at_least_2d = lambda m: len(m.shape) >= 2  # noqa: E731
_some_axis = lambda m: len(m.shape) >= 1  # noqa: E731
_same_meta = lambda m, a: _same(m)  # noqa: E731

SHAPES: dict[str, OpSpec] = {
    "tril": op1("fib", _same_meta, *_tril, "{0}.tril({1})",
                lambda draw, m: (draw(st.integers(-2, 2)),), _at_least_2d),
    "triu": op1("fib", _same_meta, *_triu, "{0}.triu({1})",
                lambda draw, m: (draw(st.integers(-2, 2)),), _at_least_2d),
    "diagonal": op1("fib", _diagonal_result, *same_syntax("diagonal"),
                    "{0}.diagonal({1}, {2}, {3})", _diagonal_args, _at_least_2d),
    "roll": op1("fib", _same_meta, *same_syntax("roll"), "{0}.roll({1!r}, {2!r})", _roll_args),
    "repeat_interleave": op1("fib", _repeat_interleave_result,
                             *same_syntax("repeat_interleave"),
                             "{0}.repeat_interleave({1}, {2!r})", _repeat_interleave_args),
    "pad_mode": op1("fib", _pad_mode_result, lambda x, flat, mode: x.pad(flat, mode=mode),
                    _torch_pad_mode, "{0}.pad({1!r}, mode={2!r})", _pad_mode_args,
                    lambda m: len(m.shape) >= 1 and m.numel > 0),
    "unfold": op1("fib", _unfold_result, *same_syntax("unfold"), "{0}.unfold({1}, {2}, {3})",
                  _unfold_args, lambda m: len(m.shape) >= 1 and min(m.shape) > 0),
    "einsum": _einsum(),
}


OPS: dict[str, OpSpec] = {
    **UNARY, **BINARY,
    "float": cast_op(FLOAT), "int": cast_op(INT), "bool": cast_op(BOOL),
    "where": _where(),
    "sum": _reduce("sum"), "max": _reduce("max"), "min": _reduce("min"), "mean": _reduce("mean"),
    "reshape": _movement(_reshape_arg, lambda L, x, a: x.reshape(a),
                         lambda n, a: f"{n}.reshape({a!r})"),
    "permute": _movement(_permute_arg, lambda L, x, a: x.permute(a),
                         lambda n, a: f"{n}.permute({a!r})"),
    "expand": _movement(_expand_arg, lambda L, x, a: x.expand(a),
                        lambda n, a: f"{n}.expand({a!r})"),
    "pad": _movement(_pad_arg, _pad_run, _pad_text),
    "shrink": _movement(_shrink_arg, lambda L, x, a: L.shrink(x, a),
                        lambda n, a: f"{n}.shrink({a!r})"),
    "flip": _movement(_flip_arg, lambda L, x, a: L.flip(x, a), lambda n, a: f"{n}.flip({a!r})"),
    "index": _movement(_index_arg, lambda L, x, a: L.getitem(x, a), _index_text),
    "cat": _cat(),
    "matmul": _matmul(),
    **MATH, **BINARY_MATH, **ACTIVATIONS, **STATS, **SCANS, **SORTS, **GATHERS, **SHAPES,
}
MOVEMENT_OPS = ("reshape", "permute", "expand", "pad", "shrink", "flip", "index", "cat")
REDUCE_OPS = ("sum", "max", "min", "mean", "matmul")
OTHER_OPS = ("float", "int", "bool", "where", "contiguous", "realize", "to_and_back")
GROUPS = {"movement": MOVEMENT_OPS, "reduce": REDUCE_OPS, "other": OTHER_OPS,
          "binary": tuple(BINARY), "unary": tuple(n for n in UNARY if n not in OTHER_OPS),
          # issue 11's
          "math": (*MATH, *BINARY_MATH), "activation": tuple(ACTIVATIONS), "stats": tuple(STATS),
          "scan": tuple(SCANS), "sort": tuple(SORTS), "gather": tuple(GATHERS),
          "shape": tuple(SHAPES)}
OLD_GROUPS = ("binary", "movement", "other", "reduce", "unary")  # before issue 11
NEW_OPS = tuple(n for g in ("math", "activation", "stats", "scan", "sort", "gather", "shape")
                for n in GROUPS[g])


def ops_of(group: str, grad: bool) -> list[str]:
    """The ops of a group used in value programs (grad False) or gradient programs."""
    return [n for n in GROUPS[group] if (OPS[n].in_grad if grad else not n.endswith("_s"))]


@st.composite
def programs(draw: Draw, grad: bool = False, max_steps: int = 8, special: bool = False,
             focus: str | None = None) -> Program:
    """A random program: 1 to 3 inputs of broadcast-compatible shapes, then up to max_steps
    ops, each on earlier values (the last one is the result). With special, float inputs hold
    nan, infs and -0.0 too, and count as inexact (no comparisons, int casts or rounding ops of
    them, whose results would hinge on them). Without focus the ops are those before issue 11
    (the programs these tests always drew); with focus, the first step and half the others
    try that op (else they draw from every op), and the last step is that op."""
    groups = tuple(sorted(GROUPS)) if focus else OLD_GROUPS
    if focus:  # the simplest example (hypothesis' first) 2-D, of sizes above 1
        ndim = draw(st.sampled_from([2, 3, 1, 0]))
        base = tuple(draw(st.sampled_from([3, 2, 4, 5, 1])) for _ in range(ndim))
    else:
        ndim = draw(st.integers(0, 3))
        base = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    inputs = []
    for k in range(draw(st.integers(1, 3))):
        keep = draw(st.integers(0, ndim)) if k else 0
        ones = 3 if focus else 0  # which draw makes an axis 1 (not the simplest, with focus)
        shape = tuple(1 if draw(st.integers(0, 3)) == ones else s for s in base[keep:])
        kinds = [FLOAT, FLOAT, INT, BOOL]
        if focus and k == 0:  # one the op takes
            kinds = [kind for kind in kinds if kind in OPS[focus].kinds]
        kind = FLOAT if grad else draw(st.sampled_from(kinds))
        inputs.append(Meta(shape, kind, {FLOAT: 4.0, INT: 5.0, BOOL: 1.0}[kind],
                           2 if kind == FLOAT and not special else 0,
                           not (special and kind == FLOAT)))
    metas, steps = list(inputs), []
    for k in range(draw(st.integers(2, max_steps))):
        name, built = focus, None
        if focus and (k == 0 or draw(st.integers(0, 1)) == 0):  # then every other step
            built = OPS[focus].build(draw, metas, grad)
        if built is None:
            name = draw(st.sampled_from(ops_of(draw(st.sampled_from(groups)), grad)))
            built = OPS[name].build(draw, metas, grad)
        if built is not None:
            srcs, arg, out = built
            steps.append(Step(name, srcs, arg))
            metas.append(out)
    built = OPS[focus].build(draw, metas, grad) if focus else None
    if built is not None:  # the result is the op's (when it fits), not a value beside it
        srcs, arg, out = built
        steps.append(Step(focus, srcs, arg))
        metas.append(out)
    if grad:  # the result is the last float value (later bools only fed a where, or nothing)
        last = max(i for i, m in enumerate(metas) if m.kind == FLOAT)
        steps, metas = steps[:max(last - len(inputs) + 1, 0)], metas[:last + 1]
    return Program(tuple(inputs), tuple(steps), draw(st.integers(0, 2 ** 16)), tuple(metas),
                   grad, special)


# ---------------------------------------------------------------------------------------------
# comparing


def to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def assert_agree(got: np.ndarray, ref32: np.ndarray, ref64: np.ndarray, exact: bool,
                 what: str) -> None:
    """got equals the reference: exactly for exact values; else the same nan and inf positions,
    and finite values within the rounding error float32 can make (float64 as the truth)."""
    __tracebackhide__ = True
    assert got.shape == ref32.shape, f"{what}: shape {got.shape}, expected {ref32.shape}"
    g = got.astype(np.float64)
    r32, r64 = ref32.astype(np.float64), ref64.astype(np.float64)
    if exact:
        np.testing.assert_array_equal(g, r64, err_msg=what)
        return
    for name, test in (("nan", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        np.testing.assert_array_equal(test(g), test(r32), err_msg=f"{what}: {name} positions")
    finite = np.isfinite(g) & np.isfinite(r64)
    with np.errstate(invalid="ignore"):
        tol = 1e-5 + 1e-4 * np.abs(r64) + 16 * np.abs(np.nan_to_num(r32 - r64))
        bad = finite & ~(np.abs(g - r64) <= tol)
    assert not bad.any(), (f"{what}: {int(bad.sum())} values differ; first at "
                           f"{np.argwhere(bad)[0].tolist()}: got {g[bad][0]!r}, expected "
                           f"{r64[bad][0]!r} (float32 torch: {r32[bad][0]!r})")


def run_torch(prog: Program, dtype: torch.dtype, grad: bool) -> tuple[Any, list[Any]]:
    with torch_default_float(dtype):
        return run_program(prog, TorchLib(dtype), grad)


def check_values(prog: Program) -> None:
    """prog's result on CPU and on NUMPY equals PyTorch's (dtype, shape, values)."""
    ref32 = to_numpy(run_torch(prog, torch.float32, False)[0])
    ref64 = to_numpy(run_torch(prog, torch.float64, False)[0])
    out = prog.out
    for device in ("CPU", "NUMPY"):
        got, _ = run_program(prog, TinyLib(device))
        # ints and bools sum into int64, as in torch (other int results stay int32 in tinyfw,
        # where torch may give int64: torch.where(c, 2, 3))
        summed = out.kind == INT and got.dtype == dtypes.int64 and ref32.dtype == np.int64
        assert got.dtype == TINY_DTYPES[out.kind] or summed, f"{device}: dtype {got.dtype}"
        assert got.device == device
        assert_agree(got.numpy(), ref32, ref64, out.exact, f"{device} value")


def weights(prog: Program) -> np.ndarray:
    """The random weights of the loss sum(out * w): nonzero quarter-grid values."""
    rng = np.random.default_rng(prog.seed + 1)
    sign = rng.integers(0, 2, prog.out.shape) * 2 - 1
    return (sign * rng.integers(1, 9, prog.out.shape) / 4).astype(np.float32)


def check_gradients(prog: Program) -> None:
    """The gradient of sum(out * w) for each input, on CPU and NUMPY, equals PyTorch's."""
    w = weights(prog)
    refs = []
    for dtype in (torch.float32, torch.float64):
        with torch_default_float(dtype):
            out, inputs = run_program(prog, TorchLib(dtype), True)
            loss = (out * torch.tensor(w, dtype=dtype)).sum()
            if loss.requires_grad:
                loss.backward()
        refs.append([to_numpy(t.grad) if t.grad is not None else np.zeros(t.shape)
                     for t in inputs])
    for device in ("CPU", "NUMPY"):
        out, inputs = run_program(prog, TinyLib(device), True)
        loss = (out * Tensor(w, device=device)).sum()
        if loss.requires_grad:
            loss.backward()
        for k, t in enumerate(inputs):
            got = t.grad.numpy() if t.grad is not None else np.zeros(t.shape)
            assert got.dtype == np.float32 if t.grad is not None else True
            assert_agree(got, refs[0][k], refs[1][k], False, f"{device} gradient of v{k}")


# ---------------------------------------------------------------------------------------------
# the tests


@DIFF_SETTINGS
@given(programs())
def test_random_programs_values(prog: Program) -> None:
    """A random program computes the same on CPU, on NUMPY and in PyTorch."""
    check_values(prog)


# nan, infs and -0.0 in random programs; not huge or subnormal values: sums of those depend on
# the order of the adds, which differs from torch's (those are tested on their own below)
PROGRAM_SPECIALS = (math.nan, math.inf, -math.inf, -0.0)


@settings(DIFF_SETTINGS, max_examples=60)
@given(programs(special=True))
def test_random_programs_special_values(prog: Program) -> None:
    """A random program of inputs holding nan, inf, -inf and -0.0 computes the same on CPU, on
    NUMPY and in PyTorch: nan and infs at the same places, the rest within rounding."""
    check_values(prog)


@GRAD_SETTINGS
@given(programs(grad=True))
def test_random_programs_gradients(prog: Program) -> None:
    """A random float program has the same gradients on CPU, on NUMPY and in PyTorch."""
    check_values(prog)
    check_gradients(prog)


# issue 11's ops: random programs in which most steps try the op, the others any op
VALUE_OPS = [n for n in NEW_OPS if not n.endswith("_s")]
# of exact values only, which hold no nan or inf: not in the special-value programs
EXACT_ONLY = ("asin", "acos", "atanh", "acosh", "log10", "fmod", "isclose", "div_trunc",
              "div_floor", "argsort", "lshift", "rshift", "bitwise_not")
# ops that can end a gradient program: those with float results (not isfinite, isclose,
# argsort, whose values reach a float result only through other ops)
GRAD_OPS = [n for n in NEW_OPS if OPS[n].in_grad and n not in ("isfinite", "isclose",
                                                                 "argsort")]


@pytest.mark.parametrize("op", VALUE_OPS)
@settings(DIFF_SETTINGS, max_examples=3)
@given(st.data())
def test_new_ops_in_random_programs(op: str, data: st.DataObject) -> None:
    """Random programs using op compute the same on CPU, on NUMPY and in PyTorch."""
    check_values(data.draw(programs(max_steps=5, focus=op), label="program"))


@pytest.mark.parametrize("op", [n for n in VALUE_OPS if n not in EXACT_ONLY])
@settings(DIFF_SETTINGS, max_examples=2)
@given(st.data())
def test_new_ops_in_random_programs_special_values(op: str, data: st.DataObject) -> None:
    """Random programs using op, of inputs holding nan, inf, -inf and -0.0, compute the same
    on CPU, on NUMPY and in PyTorch."""
    check_values(data.draw(programs(max_steps=5, special=True, focus=op), label="program"))


@pytest.mark.parametrize("op", GRAD_OPS)
@settings(DIFF_SETTINGS, max_examples=2)
@given(st.data())
def test_new_ops_in_random_programs_gradients(op: str, data: st.DataObject) -> None:
    """Random float programs using op have the same gradients on CPU, on NUMPY and in
    PyTorch."""
    prog = data.draw(programs(grad=True, max_steps=5, focus=op), label="program")
    check_values(prog)
    check_gradients(prog)


# ---------------------------------------------------------------------------------------------
# targeted cases: stacked views, padded computed values, deep chains

Fn = Callable[..., Any]


def check_fn(fn: Fn, *shapes: tuple[int, ...], grad: bool = True, seed: int = 0) -> None:
    """fn(lib, *inputs) on CPU and NUMPY equals torch's, values and (for grad) gradients."""
    rng = np.random.default_rng(seed)
    arrays = [(rng.integers(-16, 17, s) / 4).astype(np.float32) for s in shapes]
    refs: list[tuple[np.ndarray, list[np.ndarray]]] = []
    for dtype in (torch.float32, torch.float64):
        with torch_default_float(dtype):
            lib = TorchLib(dtype)
            xs = [lib.tensor(a, grad) for a in arrays]
            out = fn(lib, *xs)
            if grad:
                (out * torch.arange(out.numel(), dtype=dtype).reshape(out.shape).sin()).sum() \
                    .backward()
            refs.append((to_numpy(out), [to_numpy(x.grad) for x in xs] if grad else []))
    for device in ("CPU", "NUMPY"):
        xs = [Tensor(a, device=device, requires_grad=grad) for a in arrays]
        out = fn(TinyLib(device), *xs)
        assert_agree(out.numpy(), refs[0][0], refs[1][0], False, f"{device} value")
        if grad:
            w = Tensor(np.sin(np.arange(out.numel())).astype(np.float32), device=device)
            (out * w.reshape(out.shape)).sum().backward()
            for k, x in enumerate(xs):
                assert x.grad is not None, f"{device}: no gradient for input {k}"
                assert_agree(x.grad.numpy(), refs[0][1][k], refs[1][1][k], False,
                             f"{device} gradient of input {k}")


STACKED_VIEWS: dict[str, tuple[Fn, tuple[tuple[int, ...], ...]]] = {
    "permute_reshape": (lambda L, x: x.permute(2, 0, 1).reshape(4, 6) * 2 + 1, ((2, 3, 4),)),
    "permute_reshape_permute": (lambda L, x: (x.permute(1, 0, 2).reshape(3, 8).permute(1, 0)
                                              .reshape(6, 4) + x.reshape(6, 4)), ((2, 3, 4),)),
    "expand_reshape": (lambda L, x, y: x.expand(3, 4).reshape(12) * y, ((3, 1), (12,))),
    "expand_permute_reshape": (lambda L, x: x.expand(2, 3, 4).permute(2, 1, 0).reshape(4, 6),
                               ((1, 3, 1),)),
    "flip_permute_reshape": (lambda L, x: L.flip(x, (0, 2)).permute(1, 2, 0).reshape(-1),
                             ((2, 3, 4),)),
    "pad_reshape_permute": (lambda L, x: L.pad(x, ((1, 0), (0, 2)), False, 0.0).reshape(2, 12)
                            .permute(1, 0), ((3, 4),)),
    "shrink_permute_reshape": (lambda L, x: L.shrink(x, ((1, 3), (0, 4))).permute(1, 0)
                               .reshape(8), ((4, 5),)),
    "steps_then_reshape": (lambda L, x: L.getitem(x, (slice(None, None, 2),
                                                      slice(None, None, -2))).reshape(-1),
                           ((5, 5),)),
    "stacked_pads_with_value": (lambda L, x: L.pad(L.pad(x, ((1, 1), (0, 0)), False, 1.5),
                                                   ((0, 0), (2, 1)), False, -2.0).reshape(-1),
                                ((2, 3),)),
    "reshape_split_merge": (lambda L, x: x.reshape(2, 2, 3, 2).permute(0, 2, 1, 3)
                            .reshape(6, 4).sum(0), ((4, 6),)),
}

PADDED_COMPUTED: dict[str, tuple[Fn, tuple[tuple[int, ...], ...]]] = {
    "pad_alu": (lambda L, x: L.pad(x * 2 + 1, ((1, 1), (2, 0)), False, 0.0), ((3, 4),)),
    "pad_exp_value": (lambda L, x: L.pad(x.exp(), ((0, 2),), True, 3.0), ((4,),)),
    "pad_reduce": (lambda L, x: L.pad(L.reduce(x, "sum", 1, True), ((1, 0), (1, 1)), False, 0.0),
                   ((3, 4),)),
    "pad_permuted_alu": (lambda L, x: L.pad((x + 1).permute(1, 0), ((1, 1), (0, 1)), False, 0.0),
                         ((3, 4),)),
    "pad_expanded_reduce": (lambda L, x: L.pad(L.reduce(x, "max", 1, True).expand(3, 4),
                                               ((0, 1), (1, 0)), False, 0.0), ((3, 4),)),
    "cat_computed": (lambda L, x: L.cat([x + 1, x.exp(), L.reduce(x, "sum", 0, True)], 0),
                     ((2, 3),)),
    "pad_then_reduce": (lambda L, x: L.reduce(L.pad(x.sin(), ((1, 1), (1, 1)), False, 0.0) + 1,
                                              "sum", 1, False), ((3, 4),)),
    "crop_computed": (lambda L, x: L.pad(x * x, ((-1, 1), (1, -2)), False, 0.0), ((3, 4),)),
}


def _deep_elementwise(L: TinyLib, x: Any, y: Any) -> Any:
    for k in range(60):
        x = (x * 0.5 + y).sin() if k % 3 == 0 else x * y + 0.25 if k % 3 == 1 else x - y * 0.5
    return x


def _deep_movement(L: TinyLib, x: Any) -> Any:
    for k in range(12):
        x = x.permute(1, 2, 0).reshape(4, 3, 2) if k % 3 == 0 else \
            L.flip(x, (1,)).reshape(2, 4, 3) if k % 3 == 1 else \
            L.pad(L.shrink(x, ((0, 2), (1, 4), (0, 3))), ((0, 0), (0, 1), (0, 0)), False, 0.0) + 1
    return x


def _deep_reductions(L: TinyLib, x: Any) -> Any:
    for _ in range(5):  # a layer norm, repeated: each reduce is read through an expand
        centered = x - L.reduce(x, "mean", 1, True)
        x = centered / (L.reduce(centered * centered, "mean", 1, True) + 1).sqrt() + x * 0.5
    return L.reduce(x, "max", 0, False)


DEEP_CHAINS: dict[str, tuple[Fn, tuple[tuple[int, ...], ...]]] = {
    "elementwise_60": (_deep_elementwise, ((3, 4), (4,))),
    "movement_12": (_deep_movement, ((2, 3, 4),)),
    "reductions_5": (_deep_reductions, ((3, 5),)),
    "matmul_chain": (lambda L, a, b: L.matmul(L.matmul(a, b).sin(), b.permute(1, 0)) + a,
                     ((3, 4), (4, 4))),
}


@pytest.mark.parametrize("name", sorted(STACKED_VIEWS))
def test_stacked_views(name: str) -> None:
    """Views that don't merge into one (permute then reshape, pad then reshape, ...)."""
    fn, shapes = STACKED_VIEWS[name]
    check_fn(fn, *shapes)


@pytest.mark.parametrize("name", sorted(PADDED_COMPUTED))
def test_padded_computed_values(name: str) -> None:
    """A pad of a computed value reads 0 (or the pad value) outside, not f(0)."""
    fn, shapes = PADDED_COMPUTED[name]
    check_fn(fn, *shapes)


@pytest.mark.parametrize("name", sorted(DEEP_CHAINS))
def test_deep_chains(name: str) -> None:
    """Long chains of ops fuse, schedule and differentiate like short ones."""
    fn, shapes = DEEP_CHAINS[name]
    check_fn(fn, *shapes)


def test_max_gradient_of_recomputed_value() -> None:
    """The gradient of a max finds the maximum again in a value computed in another kernel: the
    same expression gives the same bits in every kernel (gcc once fused a*b+c into an fma in one
    kernel and not in another, and the CPU gradient was nan)."""
    grads = []
    for device in ("CPU", "NUMPY"):
        x = Tensor([[0.1, 0.7], [0.3, -0.2]], device=device, requires_grad=True)
        y = Tensor([[1.3, 0.9], [2.1, 0.5]], device=device)
        z = x * y - (x * y).mean(1, keepdim=True)
        z.max(0).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)  # CPU gave nan


# ---------------------------------------------------------------------------------------------
# regressions: minimal repros of the bugs these tests found (all fixed)


@pytest.mark.parametrize("device", ["CPU", "NUMPY"])
def test_cast_stops_gradient(device: str) -> None:
    """No gradient flows through x.int() or x.bool() (as in torch): d/dx of x is all."""
    x = Tensor([1.5, -2.0, 3.0], device=device, requires_grad=True)
    (x.int().float() * 2 + x.bool().float() * 3 + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])  # the CAST rule gave 4


def _bce_logits(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return F.binary_cross_entropy_with_logits(x, torch.ones(x.shape), reduction="sum")
    return x.binary_crossentropy_logits(x.ones_like(), reduction="sum")


KINKS: dict[str, tuple[Fn, str]] = {
    "sigmoid": (lambda x: x.sigmoid(), "d/dx of exp(-|x|) was 0 at 0: sigmoid'(0) was 0"),
    "tanh": (lambda x: x.tanh(), "through sigmoid: tanh'(0) was 0, not 1"),
    "elu": (lambda x: F.elu(x) if isinstance(x, torch.Tensor) else x.elu(),
            "minimum(x, 0) shared a tie: elu'(0) was 0.5, not 1"),
    "clip": (lambda x: x.clip(-1.0, 0.0), "maximum/minimum shared a tie: 0.5 at a bound"),
    "bce_logits": (_bce_logits, "relu'(0) and |x|'(0) are 0: the gradient at 0 was -1"),
}


@pytest.mark.parametrize("name", sorted(KINKS))
def test_gradient_at_kinks(name: str) -> None:
    """At 0 and at clip's bounds the gradient is torch's (the one-sided value torch picks);
    KINKS says what tinyfw gave before."""
    fn = KINKS[name][0]
    data = np.array([-1.0, 0.0, 0.5], dtype=np.float32)
    t = torch.tensor(data, requires_grad=True)
    fn(t).sum().backward()
    for device in ("CPU", "NUMPY"):
        x = Tensor(data, device=device, requires_grad=True)
        fn(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=device)


def test_pad_value_keeps_dtype() -> None:
    """pad keeps the tensor's dtype whatever the value, as torch casts the value (it used to
    promote: an int32 tensor padded with 2.5 became float32)."""
    x = Tensor(np.array([1, 2], dtype=np.int32))
    out = x.pad((1, 1), value=2.5)
    ref = F.pad(torch.tensor([1, 2], dtype=torch.int32), (1, 1), value=2.5)
    assert out.dtype == dtypes.int32
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    assert Tensor([True, False]).pad((1, 0), value=1).dtype == dtypes.bool


def test_abs_of_negative_zero() -> None:
    """abs clears the sign of zero, as torch's does (x * sign(x) kept -0.0: 1 / it was -inf)."""
    x = -Tensor([0.0])
    assert x.abs().reciprocal().numpy()[0] == math.inf


def test_minus_negative_int() -> None:
    """An int tensor minus a negative Python int compiles and runs on CPU (NEG of the constant -1
    was rendered (--1), a decrement)."""
    x = Tensor(np.array([4, -2], dtype=np.int32), device="CPU")
    np.testing.assert_array_equal((x - -1).numpy(), [5, -1])


# ---------------------------------------------------------------------------------------------
# special values (nan, infs, -0.0, huge, denormal, int limits), sizes that are not powers of
# two, and long sums: each against torch in float64 (the same op on the float64 values of the
# same inputs), rounded once to the result's dtype. +, -, *, /, sqrt and comparisons round
# correctly in IEEE arithmetic (and a float64 result rounded to float32 is the correctly
# rounded float32 one), so they must match bit for bit; transcendental ops within a few ulps.

F32 = np.finfo(np.float32)
SPECIAL_FLOATS = (math.nan, math.inf, -math.inf, -0.0, 0.0, float(F32.max), -float(F32.max),
                  1e30, -3e38, float(F32.tiny), -float(F32.tiny), 1e-40, -1e-42,
                  float(F32.smallest_subnormal), 2.0 ** 24 + 2, 0.5, -1.5, 1.0, -2.75, 7.0)
SPECIAL_INTS = (2 ** 31 - 1, -2 ** 31, 2 ** 31 - 2, -2 ** 31 + 1, 0, 1, -1, 2, -3, 2 ** 24 + 1,
                65536, -46341)
SPECIAL_SHAPES = ((1,), (7,), (33,), (129,), (3, 5), (6, 1))  # few: each is a compile per op


@st.composite
def special_arrays(draw: Draw, kind: str, count: int = 1) -> list[np.ndarray]:
    """count arrays of one shape (1-D or 2-D, sizes not powers of two but 1) mixing special
    values with ordinary ones: float32 (kind FLOAT) or int32 (INT)."""
    shape = draw(st.sampled_from(SPECIAL_SHAPES))
    values = SPECIAL_FLOATS if kind == FLOAT else SPECIAL_INTS
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    dtype = np.float32 if kind == FLOAT else np.int32
    return [np.array(values, dtype=dtype)[rng.integers(0, len(values), shape)]
            for _ in range(count)]


# name -> (tinyfw, torch, kinds, ulps): ulps None means bit-exact (-0.0 and 0.0 equal)
SPECIAL_UNARY: dict[str, tuple[Fn, Fn, str, int | None]] = {
    "neg": (lambda x: -x, lambda x: -x, "fi", None),
    "abs": (lambda x: x.abs(), torch.abs, "fi", None),
    "square": (lambda x: x.square(), torch.square, "f", None),
    "sqrt": (lambda x: x.sqrt(), torch.sqrt, "f", None),
    "reciprocal": (lambda x: x.reciprocal(), torch.reciprocal, "f", None),
    "relu": (lambda x: x.relu(), torch.relu, "fi", None),
    "floor": (lambda x: x.floor(), torch.floor, "f", None),
    "ceil": (lambda x: x.ceil(), torch.ceil, "f", None),
    "trunc": (lambda x: x.trunc(), torch.trunc, "f", None),
    "round": (lambda x: x.round(), torch.round, "f", None),
    "sign": (lambda x: x.sign(), torch.sign, "fi", None),  # torch: sign(nan) is 0
    "exp": (lambda x: x.exp(), torch.exp, "f", 4),
    "log": (lambda x: x.log(), torch.log, "f", 4),
    "sin": (lambda x: x.sin(), torch.sin, "f", 4),
    "cos": (lambda x: x.cos(), torch.cos, "f", 4),
    "tanh": (lambda x: x.tanh(), torch.tanh, "f", 4),
    "sigmoid": (lambda x: x.sigmoid(), torch.sigmoid, "f", 4),
}
SPECIAL_BINARY: dict[str, tuple[Fn, str, int | None]] = {
    "add": (operator.add, "fi", None), "sub": (operator.sub, "fi", None),
    "mul": (operator.mul, "fi", None), "div": (operator.truediv, "f", None),
    "maximum": (lambda a, b: a.maximum(b) if isinstance(a, Tensor) else torch.maximum(a, b),
                "fi", None),
    "minimum": (lambda a, b: a.minimum(b) if isinstance(a, Tensor) else torch.minimum(a, b),
                "fi", None),
    "lt": (operator.lt, "fi", None), "eq": (operator.eq, "fi", None),
    "ne": (operator.ne, "fi", None),
}


def reference64(fn: Fn, arrays: list[np.ndarray]) -> np.ndarray:
    """fn in torch on the inputs as float64 (ints stay int32, which wraps as tinyfw's does),
    rounded once to float32 (floats) or kept (ints and bools)."""
    xs = [torch.tensor(a.astype(np.float64) if a.dtype == np.float32 else a) for a in arrays]
    out = fn(*xs)
    return out.to(torch.float32).numpy() if out.dtype == torch.float64 else out.numpy()


def ulp32(x: np.ndarray) -> np.ndarray:
    """The spacing of float32 values at |x| (the smallest subnormal at least)."""
    with np.errstate(over="ignore"):  # the spacing at float32's max is that of max - ulp
        return np.spacing(np.abs(x).astype(np.float32)).astype(np.float64)


def assert_special(got: np.ndarray, ref: np.ndarray, ulps: int | None, what: str) -> None:
    """got equals ref: the same dtype, nan at the same places, infs of the same sign at the same
    places, finite values equal (ulps None) or within ulps float32 ulps of ref."""
    __tracebackhide__ = True
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, expected {ref.shape}"
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype}, expected {ref.dtype}"
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    for name, test in (("nan", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        np.testing.assert_array_equal(test(got), test(ref), err_msg=f"{what}: {name} positions")
    finite = np.isfinite(ref)
    g, r = got.astype(np.float64)[finite], ref.astype(np.float64)[finite]
    tol = 0.0 if ulps is None else ulps * ulp32(r)
    bad = ~(np.abs(g - r) <= tol)
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {r.size} finite values differ; first: "
                           f"got {g[bad][0]!r}, expected {r[bad][0]!r}")


def run_on_devices(fn: Fn, arrays: list[np.ndarray], ref: np.ndarray, ulps: int | None,
                   what: str, devices: tuple[str, ...] = ("CPU", "NUMPY")) -> None:
    """fn of the arrays on each device (CPU and NUMPY) equals ref."""
    __tracebackhide__ = True
    for device in devices:
        got = fn(*(Tensor(a, device=device) for a in arrays)).numpy()
        assert_special(got, ref, ulps, f"{device} {what}")


SPECIAL_SETTINGS = settings(DIFF_SETTINGS, max_examples=30)
# op name -> what goes wrong, for bugs found and not fixed yet (none now): their tests xfail
KNOWN_BAD: dict[str, str] = {}


def with_known_bugs(names: list[str]) -> list[Any]:
    """pytest params of the op names, those in KNOWN_BAD marked xfail (strict: a fix shows)."""
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_BAD[n]))
            if n in KNOWN_BAD else n for n in names]


@pytest.mark.parametrize("name", with_known_bugs(sorted(SPECIAL_UNARY)))
@SPECIAL_SETTINGS
@given(st.sampled_from([FLOAT, INT]), st.data())
def test_special_values_unary(name: str, kind: str, data: st.DataObject) -> None:
    """An elementwise op of nan, infs, -0.0, huge, denormal values or int32 limits gives
    torch's float64 result, rounded to float32 (the same nan and inf positions)."""
    tiny_fn, torch_fn, kinds, ulps = SPECIAL_UNARY[name]
    if kind not in kinds:
        kind = FLOAT
    (x,) = data.draw(special_arrays(kind))
    run_on_devices(tiny_fn, [x], reference64(torch_fn, [x]), ulps, f"{name}({x.tolist()})")


@pytest.mark.parametrize("name", with_known_bugs(sorted(SPECIAL_BINARY)))
@SPECIAL_SETTINGS
@given(st.sampled_from([FLOAT, INT]), st.data())
def test_special_values_binary(name: str, kind: str, data: st.DataObject) -> None:
    """A binary op of special values (two arrays of the same odd shape) gives torch's float64
    result, rounded to float32; int32 ops wrap around as torch's do."""
    fn, kinds, ulps = SPECIAL_BINARY[name]
    if kind not in kinds:
        kind = FLOAT
    a, b = data.draw(special_arrays(kind, 2))
    run_on_devices(fn, [a, b], reference64(fn, [a, b]), ulps,
                   f"{name}({a.tolist()}, {b.tolist()})")


KNOWN_BAD_INPUTS: dict[str, tuple[Fn, Fn, list[float], list[float] | None]] = {
    "cos": (lambda x: x.cos(), torch.cos, [1e5, 16777218.0, 3.4028235e38], None),
    "tanh": (lambda x: x.tanh(), torch.tanh, [1e-20, 1.1754944e-38, 1e-5, 1e-3], None),
    "div": (operator.truediv, operator.truediv, [49.0, 10.0, 1e-40, 0.0, 6.0],
            [7.0, 3.0, 1e-40, 1e-40, 3.0]),
}


@pytest.mark.parametrize("name", with_known_bugs(sorted(KNOWN_BAD_INPUTS)))
def test_known_bad_special_inputs(name: str) -> None:
    """Small inputs on which the special-value tests above found bugs: cos and tanh, fixed by
    tinyfw/uop/elementwise_math.py (cos(1e5) was -0.999378, not -0.999361, cos(3.4028235e38)
    0.5219, not 0.8530, tanh(1e-20) 0.0, tanh(1e-5) 1.001358e-05), and division, fixed by
    Ops.FDIV (x / d was x * (1 / d), rounded twice: 49.0 / 7.0 was 7.0000005, 10.0 / 3.0
    3.3333335, and 1 / d overflowed for a subnormal d: 1e-40 / 1e-40 was inf, 0.0 / 1e-40 nan)."""
    tiny_fn, torch_fn, a, b = KNOWN_BAD_INPUTS[name]
    arrays = [np.array(v, dtype=np.float32) for v in ([a] if b is None else [a, b])]
    ulps = 4 if name != "div" else None
    run_on_devices(tiny_fn, arrays, reference64(torch_fn, arrays), ulps, name)


def _mean32(x: torch.Tensor, axis: int | None) -> torch.Tensor:
    """The mean as torch's float32 one: the sum (in float64) rounded to float32, over n."""
    total = (x.sum(axis) if axis is not None else x.sum()).to(torch.float32)
    return total / (x.numel() // max(total.numel(), 1))


SPECIAL_REDUCES: dict[str, tuple[Fn, Fn]] = {
    "sum": (lambda x, axis: x.sum(axis), lambda x, axis: x.sum(axis) if axis is not None
            else x.sum()),
    "max": (lambda x, axis: x.max(axis), lambda x, axis: torch.amax(x, axis)
            if axis is not None else torch.amax(x)),
    "min": (lambda x, axis: x.min(axis), lambda x, axis: torch.amin(x, axis)
            if axis is not None else torch.amin(x)),
    # the float32 sum / n, as torch's float32 mean: mean(max, max) overflows to inf there too
    "mean": (lambda x, axis: x.mean(axis), lambda x, axis: _mean32(x, axis)),
}


@SPECIAL_SETTINGS
@given(st.sampled_from(sorted(SPECIAL_REDUCES)), st.sampled_from([FLOAT, INT]), st.data())
def test_special_values_reduce(name: str, kind: str, data: st.DataObject) -> None:
    """sum, max, min and mean of special values, over an axis or all, give torch's: a nan
    anywhere makes a nan, inf + -inf is nan, max and min propagate nan; int32 values sum into
    int64 (torch's dtype). Float sums are within 2 ulps of the float64 sum per element."""
    tiny_fn, torch_fn = SPECIAL_REDUCES[name]
    if name == "mean":
        kind = FLOAT
    (x,) = data.draw(special_arrays(kind))
    axis = data.draw(st.sampled_from([None, *range(x.ndim)]))
    ref = reference64(lambda t: torch_fn(t, axis), [x])
    count = x.size if axis is None else x.shape[axis]
    ulps = None if name in ("max", "min") or kind == INT else 2 * count
    run_on_devices(lambda t: tiny_fn(t, axis), [x], ref, ulps, f"{name}({x.tolist()}, {axis})")


OTHER_DEVICES = ("CL", "CUDA", "CUDAEMU", "WEBGPU")
# GPUs may flush subnormals to zero (WGSL and OpenCL allow it): the other devices get these
NORMAL_FLOATS = np.array([v for v in SPECIAL_FLOATS if not 0 < abs(v) < float(F32.tiny)],
                         dtype=np.float32)
# (device, op name) -> what goes wrong there, for bugs not fixed yet (none now)
KNOWN_BAD_ON: dict[tuple[str, str], str] = {}


@functools.cache
def device_available(device: str) -> tuple[bool, str]:
    """Whether device works here (as `python -m tinyfw.probe` checks), and if not, why."""
    from tinyfw.probe import probe
    return probe(device)


def other_device_cases() -> list[Any]:
    """(device, op) params for every op on every other device, known bugs marked xfail."""
    names = [*sorted(SPECIAL_UNARY), *sorted(SPECIAL_BINARY), *sorted(SPECIAL_REDUCES)]
    return [pytest.param(d, n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_BAD_ON[d, n]))
            if (d, n) in KNOWN_BAD_ON else (d, n) for d in OTHER_DEVICES for n in names]


@pytest.mark.parametrize(("device", "name"), other_device_cases())
def test_special_values_on_other_devices(device: str, name: str) -> None:
    """Every special-value op on CL, CUDA, CUDAEMU and WEBGPU, on every pair of the normal
    special values (nan, infs, -0.0, huge, float32's tiny: no subnormals) and, where the op
    takes ints, of the int32 limits, gives torch's float64 result rounded to float32."""
    ok, why = device_available(device)
    if not ok:
        pytest.skip(f"{device} is not available here: {why}")
    x, n = NORMAL_FLOATS, len(NORMAL_FLOATS)
    ints = np.array(SPECIAL_INTS, dtype=np.int32)
    if name in SPECIAL_UNARY:
        tiny_fn, torch_fn, kinds, ulps = SPECIAL_UNARY[name]
        cases = [(tiny_fn, torch_fn, [x], ulps)]
        cases += [(tiny_fn, torch_fn, [ints], ulps)] if "i" in kinds else []
    elif name in SPECIAL_BINARY:
        fn, kinds, ulps = SPECIAL_BINARY[name]
        cases = [(fn, fn, [np.repeat(x, n), np.tile(x, n)], ulps)]
        if "i" in kinds:
            cases.append((fn, fn, [np.repeat(ints, len(ints)), np.tile(ints, len(ints))], ulps))
    else:
        tiny_r, torch_r = SPECIAL_REDUCES[name]
        pairs = np.stack([np.repeat(x, n), np.tile(x, n)], 1)  # (n * n, 2): reduce along 1
        ulps = None if name in ("max", "min") else 4
        cases = [(lambda t: tiny_r(t, 1), lambda t: torch_r(t, 1), [pairs], ulps),
                 (lambda t: tiny_r(t, None), lambda t: torch_r(t, None), [x[2:]], ulps)]
    for tiny_fn, torch_fn, arrays, ulps in cases:
        run_on_devices(tiny_fn, arrays, reference64(torch_fn, arrays), ulps, name, (device,))


def long_sum_tolerance(x: np.ndarray, rtol: float = 4e-6) -> float:
    """How far from the float64 sum of x a float32 sum may be: rtol of the sum of |x|, which a
    sum in partial sums meets (tinyfw's: ~1.4e-6 at worst, pairwise ones ~1e-7) and a
    one-accumulator sum of 10^5 values of 1000 + u misses (by 4e-4; 2e-2 at 3e6)."""
    return rtol * float(np.abs(x.astype(np.float64)).sum())


def test_long_sum_tolerance_rejects_one_accumulator() -> None:
    """The tolerance of the long sums below fails a float32 sum kept in one accumulator."""
    x = (1000 + np.random.default_rng(0).random(100_003)).astype(np.float32)
    one_accumulator = np.cumsum(x, dtype=np.float32)[-1]
    assert abs(float(one_accumulator) - x.astype(np.float64).sum()) > long_sum_tolerance(x)


LONG_SIZES = st.integers(20_001, 400_000).filter(lambda n: n & (n - 1) != 0)


@settings(DIFF_SETTINGS, max_examples=25)
@given(LONG_SIZES, st.sampled_from([1, 3]), st.sampled_from(["sum", "mean"]),
       st.sampled_from([0.0, 1000.0, -50.0]), st.integers(0, 2 ** 16))
def test_long_sums_against_float64(n: int, rows: int, name: str, offset: float,
                                   seed: int) -> None:
    """A sum or mean over n (2 * 10^4 to 4 * 10^5, not a power of two) float32 values of
    offset + uniform [0, 1), along the last axis of rows x n, is within long_sum_tolerance of
    float64's (rows > 1 also reduces the transposed rows: a strided reduce)."""
    x = (offset + np.random.default_rng(seed).random((rows, n))).astype(np.float32)
    ref = getattr(x.astype(np.float64), name)(1)
    tol = np.array([long_sum_tolerance(r) for r in x]) / (n if name == "mean" else 1)
    for device in ("CPU", "NUMPY"):
        t = Tensor(x, device=device)
        outs = [getattr(t, name)(1)] + ([getattr(t.permute(1, 0), name)(0)] if rows > 1 else [])
        Tensor.realize_all(*outs)
        for out in outs:
            err = np.abs(out.numpy().astype(np.float64) - ref)
            assert (err <= tol).all(), f"{device} {name} of {rows}x{n} (+{offset}): error " \
                                       f"{err.max()}, allowed {tol.min()}"


def test_long_sum_as_accurate_as_pairwise() -> None:
    """The CPU sum of 299335 uniform [0, 1) values (row 1 of the array below) is within 1e-6 of
    the float64 sum, as a pairwise float32 sum (torch's, numpy's) is by far."""
    x = np.random.default_rng(0).random((3, 299_335)).astype(np.float32)[1]
    got = Tensor(x, device="CPU").sum().item()
    assert abs(got - x.astype(np.float64).sum()) <= long_sum_tolerance(x, 1e-6)


INT_DIVISION_SCRIPT = """
import sys
import numpy as np
from tinyfw import Tensor
device = sys.argv[1]
a = Tensor(np.array([-2**31, 7, -7, -2**31, 5], dtype=np.int32), device=device)
b = Tensor(np.array([-1, -1, 2, 1, 3], dtype=np.int32), device=device)
print((a // b).numpy()[:4].tolist(), (a % b).numpy()[:4].tolist())
"""
INT_DIVISION_DEVICES = ("CPU", "NUMPY", "CL", "CUDA", "CUDAEMU", "WEBGPU")


@pytest.mark.parametrize("device", INT_DIVISION_DEVICES)
def test_int_division_overflow_does_not_crash(device: str) -> None:
    """int32 floor division and modulo of -2**31 by -1 give torch's -2**31 and 0 (the ones
    that overflow); run in a subprocess, as a trap
    would take pytest down with it (CPU and CUDAEMU died of SIGFPE before the traps fix)."""
    ok, why = device_available(device)
    if not ok:
        pytest.skip(f"{device} is not available here: {why}")
    done = subprocess.run([sys.executable, "-c", INT_DIVISION_SCRIPT, device],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{device}: exit status {done.returncode}: {done.stderr[-500:]}"
    a = torch.tensor([-2 ** 31, 7, -7, -2 ** 31], dtype=torch.int32)
    b = torch.tensor([-1, -1, 2, 1], dtype=torch.int32)
    expected = f"{(a // b).tolist()} {(a % b).tolist()}"
    assert done.stdout.strip() == expected, f"{device}: {done.stdout.strip()}, torch {expected}"
