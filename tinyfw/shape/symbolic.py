"""Integer index expressions over loop variables, simplified as they are built."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Union

import numpy as np

Operand = Union["Expr", int]


def lift(x: Operand) -> Expr:
    """An Expr from an Expr or an int."""
    return x if isinstance(x, Expr) else Const(int(x))


class Expr:
    """A non-recursive-looking but immutable integer expression with known bounds [vmin, vmax].
    Every operator returns a simplified expression: constants fold, `(x*4)//4` is `x`, `x % 8` is
    `x` when x is known to lie in [0, 8)."""
    vmin: int
    vmax: int

    # --- building ---
    def __add__(self, other: Operand) -> Expr: return make_sum([self, lift(other)])
    def __radd__(self, other: int) -> Expr: return make_sum([lift(other), self])
    def __sub__(self, other: Operand) -> Expr: return self + lift(other) * -1
    def __mul__(self, factor: int) -> Expr: return make_mul(self, factor)
    def __rmul__(self, factor: int) -> Expr: return make_mul(self, factor)
    def __floordiv__(self, divisor: int) -> Expr: return make_div(self, divisor)
    def __mod__(self, divisor: int) -> Expr: return make_mod(self, divisor)
    def lt(self, bound: int) -> Expr: return make_lt(self, bound)
    def ge(self, bound: int) -> Expr: return make_not(make_lt(self, bound))

    # --- reading ---
    def render(self, fn: Callable[[Expr], str] | None = None) -> str:
        """The expression as C source (also valid OpenCL, CUDA and, with int vars, WGSL)."""
        raise NotImplementedError

    def evaluate(self, env: Mapping[str, np.ndarray | int]) -> np.ndarray | int:
        """The value for numpy arrays (or ints) bound to the variables."""
        raise NotImplementedError

    def vars(self) -> set[str]:
        """The names of the variables in the expression."""
        return set().union(*(c.vars() for c in self.children())) if self.children() else set()

    def children(self) -> tuple[Expr, ...]:
        return ()

    @property
    def is_const(self) -> bool:
        return self.vmin == self.vmax

    def __str__(self) -> str:
        return self.render()


@dataclass(frozen=True, eq=True)
class Const(Expr):
    """A number."""
    value: int

    @property
    def vmin(self) -> int:  # type: ignore[override]
        return self.value

    @property
    def vmax(self) -> int:  # type: ignore[override]
        return self.value

    def render(self, fn: Callable[[Expr], str] | None = None) -> str:
        return str(self.value)

    def evaluate(self, env: Mapping[str, np.ndarray | int]) -> int:
        return self.value


@dataclass(frozen=True, eq=True)
class Var(Expr):
    """A loop variable that takes every value in [vmin, vmax]."""
    name: str
    vmin: int
    vmax: int

    def render(self, fn: Callable[[Expr], str] | None = None) -> str:
        return self.name

    def evaluate(self, env: Mapping[str, np.ndarray | int]) -> np.ndarray | int:
        return env[self.name]

    def vars(self) -> set[str]:
        return {self.name}


@dataclass(frozen=True, eq=True)
class Sum(Expr):
    """terms[0] + terms[1] + ... (at most one constant, last)."""
    terms: tuple[Expr, ...]

    @property
    def vmin(self) -> int:  # type: ignore[override]
        return sum(t.vmin for t in self.terms)

    @property
    def vmax(self) -> int:  # type: ignore[override]
        return sum(t.vmax for t in self.terms)

    def children(self) -> tuple[Expr, ...]:
        return self.terms

    def render(self, fn: Callable[[Expr], str] | None = None) -> str:
        return "(" + " + ".join(t.render(fn) for t in self.terms) + ")"

    def evaluate(self, env: Mapping[str, np.ndarray | int]) -> np.ndarray | int:
        return sum((t.evaluate(env) for t in self.terms), 0)


@dataclass(frozen=True, eq=True)
class Mul(Expr):
    """expr * factor, for an int factor."""
    expr: Expr
    factor: int

    @property
    def vmin(self) -> int:  # type: ignore[override]
        return min(self.expr.vmin * self.factor, self.expr.vmax * self.factor)

    @property
    def vmax(self) -> int:  # type: ignore[override]
        return max(self.expr.vmin * self.factor, self.expr.vmax * self.factor)

    def children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    def render(self, fn: Callable[[Expr], str] | None = None) -> str:
        return f"({self.expr.render(fn)} * {self.factor})"

    def evaluate(self, env: Mapping[str, np.ndarray | int]) -> np.ndarray | int:
        return self.expr.evaluate(env) * self.factor


@dataclass(frozen=True, eq=True)
class Div(Expr):
    """expr // divisor, for a non-negative expr and a positive int divisor."""
    expr: Expr
    divisor: int

    @property
    def vmin(self) -> int:  # type: ignore[override]
        return self.expr.vmin // self.divisor

    @property
    def vmax(self) -> int:  # type: ignore[override]
        return self.expr.vmax // self.divisor

    def children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    def render(self, fn: Callable[[Expr], str] | None = None) -> str:
        return f"({self.expr.render(fn)} / {self.divisor})"

    def evaluate(self, env: Mapping[str, np.ndarray | int]) -> np.ndarray | int:
        return self.expr.evaluate(env) // self.divisor


@dataclass(frozen=True, eq=True)
class Mod(Expr):
    """expr % divisor, for a non-negative expr and a positive int divisor."""
    expr: Expr
    divisor: int

    @property
    def vmin(self) -> int:  # type: ignore[override]
        return 0

    @property
    def vmax(self) -> int:  # type: ignore[override]
        return self.divisor - 1

    def children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    def render(self, fn: Callable[[Expr], str] | None = None) -> str:
        return f"({self.expr.render(fn)} % {self.divisor})"

    def evaluate(self, env: Mapping[str, np.ndarray | int]) -> np.ndarray | int:
        return self.expr.evaluate(env) % self.divisor


@dataclass(frozen=True, eq=True)
class Lt(Expr):
    """1 if expr < bound else 0."""
    expr: Expr
    bound: int

    @property
    def vmin(self) -> int:  # type: ignore[override]
        return 0

    @property
    def vmax(self) -> int:  # type: ignore[override]
        return 1

    def children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    def render(self, fn: Callable[[Expr], str] | None = None) -> str:
        return f"({self.expr.render(fn)} < {self.bound})"

    def evaluate(self, env: Mapping[str, np.ndarray | int]) -> np.ndarray | int:
        return self.expr.evaluate(env) < self.bound


@dataclass(frozen=True, eq=True)
class Not(Expr):
    """1 if expr is 0 else 0, for a 0/1 expr."""
    expr: Expr
    vmin = 0
    vmax = 1

    def children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    def render(self, fn: Callable[[Expr], str] | None = None) -> str:
        return f"(!{self.expr.render(fn)})"

    def evaluate(self, env: Mapping[str, np.ndarray | int]) -> np.ndarray | int:
        return np.logical_not(self.expr.evaluate(env))


@dataclass(frozen=True, eq=True)
class And(Expr):
    """1 if every term is 1, for 0/1 terms."""
    terms: tuple[Expr, ...]
    vmin = 0
    vmax = 1

    def children(self) -> tuple[Expr, ...]:
        return self.terms

    def render(self, fn: Callable[[Expr], str] | None = None) -> str:
        return "(" + " && ".join(t.render(fn) for t in self.terms) + ")"

    def evaluate(self, env: Mapping[str, np.ndarray | int]) -> np.ndarray | int:
        out: np.ndarray | int = True
        for t in self.terms:
            out = np.logical_and(out, t.evaluate(env))
        return out


TRUE, FALSE = Const(1), Const(0)


# --- the simplifier: each constructor returns the simplest form it knows ---
def _split_factor(e: Expr) -> tuple[Expr, int]:
    """e as (base, factor) with e == base * factor."""
    return (e.expr, e.factor) if isinstance(e, Mul) else (e, 1)


def make_sum(terms: list[Expr]) -> Expr:
    """A sum with nested sums flattened, like terms combined and constants folded."""
    flat: list[Expr] = []
    for t in terms:
        flat.extend(t.terms if isinstance(t, Sum) else [t])
    constant = 0
    factors: dict[Expr, int] = {}
    order: list[Expr] = []
    for t in flat:
        if isinstance(t, Const):
            constant += t.value
            continue
        base, factor = _split_factor(t)
        if base not in factors:
            order.append(base)
        factors[base] = factors.get(base, 0) + factor
    out = [make_mul(b, factors[b]) for b in order if factors[b] != 0]
    if constant or not out:
        out.append(Const(constant))
    return out[0] if len(out) == 1 else Sum(tuple(out))


def make_mul(e: Expr, factor: int) -> Expr:
    """e * factor, folded, merged with inner factors and distributed over sums."""
    if factor == 0:
        return Const(0)
    if factor == 1:
        return e
    if isinstance(e, Const):
        return Const(e.value * factor)
    if isinstance(e, Mul):
        return make_mul(e.expr, e.factor * factor)
    if isinstance(e, Sum):
        return make_sum([make_mul(t, factor) for t in e.terms])
    return Mul(e, factor)


def make_div(e: Expr, d: int) -> Expr:
    """e // d: folded when bounds decide it; (a*d + b) // d is a + b // d."""
    assert d > 0, "division by a non-positive number"
    if d == 1:
        return e
    if isinstance(e, Const):
        return Const(e.value // d)
    if e.vmin >= 0 and e.vmin // d == e.vmax // d:
        return Const(e.vmin // d)
    if isinstance(e, Mul) and e.factor % d == 0:
        return make_mul(e.expr, e.factor // d)
    if isinstance(e, Div):
        return make_div(e.expr, e.divisor * d)
    if isinstance(e, Sum):
        whole = [t for t in e.terms if _split_factor(t)[1] % d == 0]
        rest = [t for t in e.terms if _split_factor(t)[1] % d != 0]
        if whole and rest:
            remainder = make_sum(rest)
            if remainder.vmin >= 0:
                return make_sum([make_div(t, d) for t in whole] + [make_div(remainder, d)])
        elif whole:
            return make_sum([make_div(t, d) for t in whole])
        for inner in _inner_divisors(e, d):
            if not _divides(divided := make_div(e, inner)):
                return make_div(divided, d // inner)
    return Div(e, d)


def _inner_divisors(e: Sum, d: int) -> list[int]:
    """The divisors c of d (below it, largest first) that the terms' factors share with it:
    e // d == (e // c) // (d // c), and e // c may simplify to an expression with no division
    where e // d did not. Where a head index is divided out of a reshaped expand,
    (head * 16384 + rest) // 49152, with the rest in [0, 16384), becomes head // 3."""
    shared = {math.gcd(_split_factor(t)[1], d) for t in e.terms if not isinstance(t, Const)}
    return sorted((c for c in shared if 1 < c < d), reverse=True)


def _divides(e: Expr) -> bool:
    """Whether e holds a division or a modulo anywhere."""
    return isinstance(e, (Div, Mod)) or any(_divides(c) for c in e.children())


def make_mod(e: Expr, d: int) -> Expr:
    """e % d: e itself when it lies in [0, d); multiples of d (and of constants, all but
    their rest) dropped from a sum."""
    assert d > 0, "modulo by a non-positive number"
    if d == 1:
        return Const(0)
    if isinstance(e, Const):
        return Const(e.value % d)
    if 0 <= e.vmin and e.vmax < d:
        return e
    if isinstance(e, Mul) and e.factor % d == 0:
        return Const(0)
    if isinstance(e, Sum):
        terms = [Const(t.value % d) if isinstance(t, Const) else _factor_mod(t, d)
                 for t in e.terms]
        rest = [t for t in terms if _split_factor(t)[1] % d != 0 and t != Const(0)]
        if len(rest) != len(e.terms) or terms != list(e.terms):
            remainder = make_sum(rest) if rest else Const(0)
            if remainder.vmin >= 0:
                return make_mod(remainder, d)
    if isinstance(e, Mod) and e.divisor % d == 0:
        return make_mod(e.expr, d)
    return Mod(e, d)


def _factor_mod(term: Expr, d: int) -> Expr:
    """A term x*f of a sum taken % d as x*(f % d), for x >= 0 and f > d: the same modulo.
    (A pooling window's row, (oy + ky*14) % 13, is (oy + ky) % 13, which the bounds fold.)"""
    base, factor = _split_factor(term)
    if factor > d and factor % d and base.vmin >= 0:
        return make_mul(base, factor % d)
    return term


def make_lt(e: Expr, bound: int) -> Expr:
    """e < bound, decided by the bounds of e when they allow it."""
    if e.vmax < bound:
        return TRUE
    if e.vmin >= bound:
        return FALSE
    return Lt(e, bound)


def make_not(e: Expr) -> Expr:
    if e.is_const:
        return FALSE if e.vmin else TRUE
    if isinstance(e, Not):
        return e.expr
    return Not(e)


def make_and(terms: list[Expr]) -> Expr:
    """All of terms: true ones dropped, false if any is false."""
    flat: list[Expr] = []
    for t in terms:
        for u in (t.terms if isinstance(t, And) else (t,)):
            if u.is_const and u.vmin == 0:
                return FALSE
            if not u.is_const and u not in flat:
                flat.append(u)
    if not flat:
        return TRUE
    return flat[0] if len(flat) == 1 else And(tuple(flat))


# --- an index where its validity holds ---
def substitute(e: Expr, new: Mapping[str, Expr]) -> Expr:
    """e with each variable named in new replaced, simplified again as it is rebuilt."""
    return _rebuild(e, lambda x: new.get(x.name) if isinstance(x, Var) else None)


def _rebuild(e: Expr, visit: Callable[[Expr], Expr | None]) -> Expr:
    """e rebuilt bottom-up through the simplifying constructors, each node that visit gives a
    replacement for replaced by it (and not looked into)."""
    if (found := visit(e)) is not None:
        return found
    if isinstance(e, Sum):
        return make_sum([_rebuild(t, visit) for t in e.terms])
    if isinstance(e, Mul):
        return make_mul(_rebuild(e.expr, visit), e.factor)
    if isinstance(e, Div):
        return make_div(_rebuild(e.expr, visit), e.divisor)
    if isinstance(e, Mod):
        return make_mod(_rebuild(e.expr, visit), e.divisor)
    if isinstance(e, Lt):
        return make_lt(_rebuild(e.expr, visit), e.bound)
    if isinstance(e, Not):
        return make_not(_rebuild(e.expr, visit))
    if isinstance(e, And):
        return make_and([_rebuild(t, visit) for t in e.terms])
    return e


def _scaled_part(whole: Sum, part: Sum) -> int | None:
    """k where whole's terms include part's, each times k (part with no constant), or None."""
    have = dict(_split_factor(t) for t in whole.terms if not isinstance(t, Const))
    wanted = [_split_factor(t) for t in part.terms]
    if any(isinstance(b, Const) for b, _ in wanted) or wanted[0][0] not in have or \
            have[wanted[0][0]] % wanted[0][1]:
        return None
    k = have[wanted[0][0]] // wanted[0][1]
    return k if k and all(have.get(b) == k * f for b, f in wanted) else None


def _stand_in(e: Expr, part: Expr, var: Var) -> Expr:
    """e with `part` (a subexpression, or a sum whose terms some sum in e holds, times k)
    replaced by var (times k)."""
    def visit(x: Expr) -> Expr | None:
        if x == part:
            return var
        if isinstance(x, Sum) and isinstance(part, Sum) and \
                (k := _scaled_part(x, part)) is not None:
            taken = {b for b, _ in map(_split_factor, part.terms)}
            rest = [_rebuild(t, visit) for t in x.terms if _split_factor(t)[0] not in taken]
            return make_sum(rest + [make_mul(var, k)])
        return None
    return _rebuild(e, visit)


def index_where_valid(index: Expr, valid: Expr) -> Expr:
    """index as it may be computed where valid is 1 (a load reads memory only there),
    simplified again with what valid says: each variable a term of valid bounds on its own
    (`x < 10`, `!(x < 3)`) taken in those bounds, and each expression a term bounds (`x * 13 +
    y < 42`) taken as a variable in those bounds while index is simplified, then written out
    again. A padded view's index, split into rows and columns by a reshape, divides by sizes
    that the whole range of its variables crosses and the valid range does not: `(x * 10 + y)
    // 100` is 0 for x, y < 10 (a pooling's or a convolution's gradient read its input
    through a dozen such divisions and remainders per element)."""
    atoms = []
    for term in valid.terms if isinstance(valid, And) else (valid,):
        upper, atom = (False, term.expr) if isinstance(term, Not) else (True, term)
        if isinstance(atom, Lt):
            atoms.append((atom.expr, atom.bound, upper))
    bounds: dict[str, tuple[int, int]] = {}
    for expr, bound, upper in atoms:
        if isinstance(expr, Var):
            low, high = bounds.get(expr.name, (expr.vmin, expr.vmax))
            bounds[expr.name] = (low, min(high, bound - 1)) if upper else \
                (max(low, bound), high)
    if any(low > high for low, high in bounds.values()):
        return index  # (never valid: never read)
    narrowed = {name: Var(name, low, high) for name, (low, high) in bounds.items()}
    index = substitute(index, narrowed) if narrowed else index
    stand_ins: dict[str, Expr] = {}
    for expr, bound, upper in atoms:
        if isinstance(expr, Var):
            continue
        expr = substitute(expr, narrowed) if narrowed else expr
        low, high = (expr.vmin, min(expr.vmax, bound - 1)) if upper else \
            (max(expr.vmin, bound), expr.vmax)
        if low > high:
            return index
        if (low, high) != (expr.vmin, expr.vmax):
            var = Var(f"tf_valid{len(stand_ins)}", low, high)
            stand_ins[var.name] = expr
            index = _stand_in(index, expr, var)
    return substitute(index, stand_ins) if stand_ins else index
