"""Index expressions: simplified as they are built, with sound bounds and unchanged values."""
from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyfw.shape.symbolic import (
    FALSE,
    TRUE,
    Const,
    Div,
    Expr,
    Lt,
    Mod,
    Mul,
    Sum,
    Var,
    index_where_valid,
    make_and,
    make_sum,
)

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None)
x, y, z = Var("x", 0, 9), Var("y", 0, 3), Var("z", -4, 4)


def test_constants_fold() -> None:
    """Arithmetic on constants gives a constant, with Python's (floor) // and %."""
    assert Const(2) + 3 == Const(5)
    assert Const(2) * 3 - 1 == Const(5)
    assert Const(7) // 2 == Const(3) and Const(-7) // 2 == Const(-4)
    assert Const(7) % 4 == Const(3) and Const(-7) % 2 == Const(1) and Const(8) % 8 == Const(0)
    assert x * 0 == Const(0) and x * 1 is x and x + 0 is x and x // 1 is x
    assert x % 1 == Const(0)


def test_like_terms_combine() -> None:
    """Sums flatten, add the factors of equal terms and fold their constants."""
    assert x + x == Mul(x, 2)
    assert x * 3 + x * -3 == Const(0)
    assert x + y - y is x
    assert (x + 1) + (y + 2) == Sum((x, y, Const(3)))
    assert (x + 2) * 3 == Sum((Mul(x, 3), Const(6)))
    assert make_sum([x, Mul(x, 4), y, Const(-1), Const(1)]) == Sum((Mul(x, 5), y))
    assert (x * 2) * 3 == Mul(x, 6)


def test_division_cancels_factors() -> None:
    """(x*4)//4 is x; (x*4 + y)//4 is x when y is in [0, 4); what can't be proved stays."""
    assert (x * 4) // 4 is x
    assert (x * 8) // 4 == Mul(x, 2)
    assert (x * 4 + y) // 4 is x
    assert (x * 4 + y + 4) // 4 == Sum((x, Const(1)))
    wide = Var("w", 0, 7)
    assert (x * 4 + wide) // 4 == Sum((x, Div(wide, 4)))
    assert isinstance((x * 4 - 1) // 4, Div), "x*4 - 1 may be negative: no rewrite"
    assert (x // 2) // 3 == Div(x, 6)
    assert y // 4 == Const(0) and (x + 10) // 20 == Const(0)


def test_division_by_a_multiple_of_a_shared_factor() -> None:
    """A head index of a reshaped expand: (h*16384 + p*64 + d + 64) // 49152 is h // 3, as
    ((...) // 16384) // 3 with the rest in [0, 16384); kept where a division would remain."""
    h, p, d = Var("h", 0, 8), Var("p", 0, 63), Var("d", 0, 63)
    assert (h * 16384 + p * 64 + d + 64) // 49152 == Div(h, 3)
    assert (h * 4 + y) // 12 == Div(h, 3)
    assert isinstance((h * 4 + x) // 12, Div) and (h * 4 + x) // 12 != Div(h, 3)
    assert (h * 4 + Var("w", 0, 7)) // 12 == Div(Sum((h * 4, Var("w", 0, 7))), 12), \
        "w // 4 would stay: no rewrite"


def test_modulo_folds_constants() -> None:
    """A constant in a sum keeps only its rest: (d + 64) % 64 is d, (d + 65) % 64 (d + 1) % 64."""
    d = Var("d", 0, 63)
    assert (d + 64) % 64 is d
    assert (d + 65) % 64 == Mod(Sum((d, Const(1))), 64)
    assert (d * 64 + 130) % 64 == Const(2)


def test_modulo_uses_bounds() -> None:
    """x % 8 is x when x is in [0, 8); multiples of the divisor drop out of a sum."""
    assert Var("a", 0, 7) % 8 == Var("a", 0, 7)
    assert isinstance(Var("a", 0, 8) % 8, Mod)
    assert (x * 8 + y) % 8 is y
    assert (x * 8 + Var("w", 0, 9)) % 8 == Mod(Var("w", 0, 9), 8)
    assert (x * 4 + 5) % 4 == Const(1)
    assert (x % 8) % 4 == Mod(x, 4)
    assert (x * 6) % 3 == Const(0)


def test_modulo_keeps_a_factor_s_rest() -> None:
    """In a sum taken % d, a term x * f with f > d counts as x * (f % d): a pooling window's
    row (oy + ky * 14) % 13, oy < 11 and ky < 3, is oy + ky, no modulo left."""
    oy, ky = Var("oy", 0, 10), Var("ky", 0, 2)
    assert (oy + ky * 14) % 13 == Sum((oy, ky))
    assert (ky * 14 + 3) % 13 == Sum((ky, Const(3)))
    assert (Var("a", 0, 20) * 15 + ky) % 13 == Mod(Sum((Var("a", 0, 20) * 2, ky)), 13)


def test_comparisons_and_conditions() -> None:
    """Bounds decide comparisons; make_and drops what is true and is false if anything is."""
    assert y.lt(4) == TRUE and y.lt(0) == FALSE and y.ge(0) == TRUE and y.ge(4) == FALSE
    assert y.lt(2) == Lt(y, 2)
    assert y.ge(2).vmin == 0 and y.ge(2).vmax == 1
    assert make_and([TRUE, y.lt(2), TRUE]) == Lt(y, 2)
    assert make_and([y.lt(2), FALSE]) == FALSE
    assert make_and([]) == TRUE
    assert make_and([y.lt(2), make_and([y.lt(2), x.lt(5)])]) == make_and([y.lt(2), x.lt(5)])


def test_bounds() -> None:
    """vmin and vmax follow each operation, negative factors included."""
    assert (x * 3 + y).vmin == 0 and (x * 3 + y).vmax == 30
    assert (x * -2).vmin == -18 and (x * -2).vmax == 0
    assert (x // 4).vmin == 0 and (x // 4).vmax == 2
    assert (z // 3).vmin == -2 and (z // 3).vmax == 1
    assert (x + z).vmin == -4 and (x + z).vmax == 13
    mod = Var("b", 0, 20) % 6
    assert mod.vmin == 0 and mod.vmax == 5


def test_render_and_vars() -> None:
    """An expression prints as C; vars() names its variables."""
    index = (Var("i0", 0, 5) // 2) + (Var("i0", 0, 5) % 2) * 3
    assert str(index) == "((i0 / 2) + ((i0 % 2) * 3))"
    assert str(make_and([y.ge(1), x.lt(3)])) == "((!(y < 1)) && (x < 3))"
    assert (x * 2 + y).vars() == {"x", "y"} and Const(3).vars() == set()


# --- random expressions: the simplified expression computes what the operations say ---
Tree = tuple[Any, ...]
VARS = st.tuples(st.integers(-5, 5), st.integers(0, 6)).map(lambda lw: (lw[0], lw[0] + lw[1]))


def trees(depth: int) -> st.SearchStrategy[Tree]:
    """Random arithmetic over x0, x1, x2: + - by a term, * by an int, // and % by a positive int."""
    leaf = st.one_of(st.tuples(st.just("var"), st.integers(0, 2)),
                     st.tuples(st.just("const"), st.integers(-6, 6)))
    if depth == 0:
        return leaf
    sub = trees(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(st.just("add"), sub, sub), st.tuples(st.just("sub"), sub, sub),
        st.tuples(st.just("mul"), sub, st.integers(-3, 4)),
        st.tuples(st.just("div"), sub, st.integers(1, 6)),
        st.tuples(st.just("mod"), sub, st.integers(1, 6)))


def build(tree: Tree, leaves: list[Any]) -> Any:
    """The tree built from leaves: Exprs (simplified as built) or numpy arrays."""
    kind = tree[0]
    if kind == "var":
        return leaves[tree[1]]
    if kind == "const":
        return Const(tree[1]) if isinstance(leaves[0], Expr) else tree[1]
    a = build(tree[1], leaves)
    if kind in ("add", "sub"):
        b = build(tree[2], leaves)
        return a + b if kind == "add" else a - b
    return a * tree[2] if kind == "mul" else a // tree[2] if kind == "div" else a % tree[2]


@SETTINGS
@given(tree=trees(4), ranges=st.lists(VARS, min_size=3, max_size=3),
       bound=st.integers(-10, 10))
def test_random_expressions_keep_their_values(tree: Tree, ranges: list[tuple[int, int]],
                                              bound: int) -> None:
    """At every point of the variables' ranges, the simplified expression equals the same
    operations on Python ints, and lies within its bounds; a comparison of it too."""
    names = ["x0", "x1", "x2"]
    variables = [Var(n, lo, hi) for n, (lo, hi) in zip(names, ranges)]
    grids = np.meshgrid(*[np.arange(lo, hi + 1) for lo, hi in ranges], indexing="ij")
    expr = build(tree, list(variables))
    expr = expr if isinstance(expr, Expr) else Const(expr)
    expected = np.broadcast_to(build(tree, list(grids)), grids[0].shape)
    got = np.broadcast_to(np.asarray(expr.evaluate(dict(zip(names, grids)))), grids[0].shape)
    assert np.array_equal(got, expected), f"{tree} built as {expr}"
    assert expr.vmin <= expected.min() and expected.max() <= expr.vmax, \
        f"{expr} has bounds [{expr.vmin}, {expr.vmax}] but takes {expected.min()}..{expected.max()}"
    for cond, want in [(expr.lt(bound), expected < bound), (expr.ge(bound), expected >= bound)]:
        value = np.broadcast_to(np.asarray(cond.evaluate(dict(zip(names, grids)))), want.shape)
        assert np.array_equal(value.astype(bool), want), f"{cond} for {tree}"


@SETTINGS
@given(tree=trees(3), ranges=st.lists(VARS, min_size=3, max_size=3))
def test_simplifying_never_grows(tree: Tree, ranges: list[tuple[int, int]]) -> None:
    """Rebuilding a simplified expression through the operators leaves it as it is."""
    variables = [Var(n, lo, hi) for n, (lo, hi) in zip(["x0", "x1", "x2"], ranges)]
    expr = build(tree, list(variables))
    if not isinstance(expr, Expr):
        return
    assert expr + 0 == expr and expr * 1 == expr and expr // 1 == expr


# --- an index where its validity holds (index_where_valid) ---
def test_index_where_valid_drops_divisions_the_valid_range_does_not_cross() -> None:
    """A convolution's input gradient reads through the windows of a repeated input: 16
    taps of which 9 are valid, its index a dozen divisions and remainders. Where valid, the
    bounds of the taps (`r * 13 + g < 42`) make most of them vanish."""
    c, g3, r4, g5, r6, g7 = (Var("c", 0, 127), Var("g3", 0, 7), Var("r4", 0, 3),
                             Var("g5", 0, 12), Var("r6", 0, 3), Var("g7", 0, 12))
    rows, cols = r4 * 13 + g5, r6 * 13 + g7
    valid = make_and([rows.lt(42), cols.lt(42), ((rows + cols // 42) % 14).lt(11),
                      (cols % 14).lt(11)])
    flat = g3 * 1764 + rows * 42 + cols
    index = ((c + flat // 14112) % 128) * 8712 + ((g3 + (rows * 42 + cols) // 1764) % 8) * 1089 \
        + (((rows * 42 + cols) // 588) % 3) * 3 + ((rows + cols // 42) % 14) * 99 \
        + ((cols // 14) % 3) + (cols % 14) * 9
    simpler = index_where_valid(index, valid)
    assert simpler == c * 8712 + g3 * 1089 + (rows // 14) * 3 + (rows % 14) * 99 + cols // 14 \
        + (cols % 14) * 9
    grids = np.meshgrid(*[np.arange(v.vmin, v.vmax + 1) for v in (c, g3, r4, g5, r6, g7)],
                        indexing="ij")
    env = dict(zip(["c", "g3", "r4", "g5", "r6", "g7"], grids))
    where = valid.evaluate(env).astype(bool)
    assert np.array_equal(np.broadcast_to(index.evaluate(env), where.shape)[where],
                          np.broadcast_to(simpler.evaluate(env), where.shape)[where])


def test_index_where_valid_bounds_a_variable() -> None:
    """A padded view's row, valid below 10 of 11: `(x * 10 + y) // 100` is 0 there; an index
    that is never valid, or a valid that bounds nothing, is left as it is."""
    a, b = Var("a", 0, 10), Var("b", 0, 10)
    index = ((a * 10 + b) // 100) * 1600 + (a * 10 + b) % 100
    simpler = index_where_valid(index, make_and([a.lt(10), b.lt(10)]))
    assert simpler.render() == (a * 10 + b).render() and simpler.vmax == 99  # (a, b now < 10)
    assert index_where_valid(index, make_and([a.lt(3), a.ge(5)])) is index
    assert index_where_valid(index, TRUE) is index


@SETTINGS
@given(tree=trees(4), ranges=st.lists(VARS, min_size=3, max_size=3),
       conditions=st.lists(st.tuples(trees(2), st.integers(-6, 6), st.booleans()),
                           min_size=1, max_size=3))
def test_index_where_valid_keeps_the_values_where_valid(
        tree: Tree, ranges: list[tuple[int, int]],
        conditions: list[tuple[Tree, int, bool]]) -> None:
    """At every point where valid (random bounds on random expressions, x < b or x >= b)
    holds, the index simplified with it has the index's value."""
    names = ["x0", "x1", "x2"]
    variables = [Var(n, lo, hi) for n, (lo, hi) in zip(names, ranges)]
    grids = np.meshgrid(*[np.arange(lo, hi + 1) for lo, hi in ranges], indexing="ij")
    env = dict(zip(names, grids))

    def expr_of(t: Tree) -> Expr:
        e = build(t, list(variables))
        return e if isinstance(e, Expr) else Const(e)
    index = expr_of(tree)
    valid = make_and([expr_of(t).lt(bound) if below else expr_of(t).ge(bound)
                      for t, bound, below in conditions])
    where = np.broadcast_to(np.asarray(valid.evaluate(env)), grids[0].shape).astype(bool)
    simpler = index_where_valid(index, valid)
    got = np.broadcast_to(np.asarray(simpler.evaluate(env)), grids[0].shape)
    want = np.broadcast_to(np.asarray(index.evaluate(env)), grids[0].shape)
    assert np.array_equal(got[where], want[where]), f"{index} where {valid}: {simpler}"
