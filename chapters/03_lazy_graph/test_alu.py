"""The ALU rules: what each elementwise primitive op computes, with C's integer semantics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chapters.grading import expect_close, expect_equal
from tinyfw import Tensor
from tinyfw.runtime import ops_numpy
from tinyfw.uop.ops import ALU, Ops

pytestmark = pytest.mark.task("03.alu")

RNG = np.random.default_rng(3)


def apply(op: Ops, *sources: np.ndarray, dtype: type | None = None) -> np.ndarray:
    """One rule applied to arrays, converted to dtype (the node's dtype) as evaluate() does."""
    rules = ops_numpy.alu_rules()
    assert op in rules, f"alu_rules() has no rule for {op}"
    out = np.asarray(rules[op](*sources))
    return out if dtype is None else out.astype(dtype)


def test_every_elementwise_op_has_a_rule() -> None:
    """The table covers the unary, binary and ternary ops (CAST and BITCAST are evaluate's own
    business)."""
    rules = ops_numpy.alu_rules()
    assert isinstance(rules, dict), f"alu_rules() should return a dict, got {type(rules)}"
    missing, extra = ALU - {Ops.CAST, Ops.BITCAST} - set(rules), set(rules) - ALU
    assert not missing and not extra, f"alu_rules() lacks {sorted(o.name for o in missing)} " \
                                      f"and has extra {sorted(o.name for o in extra)}"


def test_float_ops_match_numpy() -> None:
    """NEG, EXP2, LOG2, SIN, SQRT, RECIPROCAL, TRUNC, ADD, MUL, MAX on float32."""
    x = RNG.uniform(0.1, 4.0, 12).astype(np.float32)
    y = RNG.uniform(-4.0, 4.0, 12).astype(np.float32)
    for op, expected in [(Ops.NEG, -y), (Ops.EXP2, np.exp2(y)), (Ops.LOG2, np.log2(x)),
                         (Ops.SIN, np.sin(y)), (Ops.SQRT, np.sqrt(x)), (Ops.RECIPROCAL, 1 / x),
                         (Ops.TRUNC, np.trunc(y))]:
        source = x if op in (Ops.LOG2, Ops.SQRT, Ops.RECIPROCAL) else y
        expect_close(apply(op, source, dtype=np.float32), expected, what=op.name)
    for op, expected in [(Ops.ADD, x + y), (Ops.MUL, x * y), (Ops.MAX, np.maximum(x, y))]:
        expect_close(apply(op, x, y, dtype=np.float32), expected, what=op.name)


def test_integer_division_rounds_toward_zero() -> None:
    """IDIV is C's /: -7 / 2 is -3 (Python says -4); x / 0 is 0."""
    a = np.array([7, -7, 7, -7, 0, 6, -6, 5, 100, -1], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, 3, 0, 7, 0], dtype=np.int32)
    expected = torch.div(torch.tensor(a), torch.tensor(np.where(b == 0, 1, b)),
                         rounding_mode="trunc").numpy() * (b != 0)
    expect_equal(apply(Ops.IDIV, a, b, dtype=np.int32), expected.astype(np.int32),
                 what="IDIV (C's integer division; divisor 0 gives 0)")


def test_float_division_is_rounded_once() -> None:
    """FDIV is IEEE division: 49 / 7 is 7 exactly (49 * (1/7) is not); x / 0 is +-inf, 0 / 0
    nan, and a denormal divisor is no overflow (1/1e-40 is inf, 1e-40 / 1e-40 is 1)."""
    a = np.array([49.0, 10.0, 1.0, -1.0, 0.0, 1e-40, 0.0, np.inf, 3.0], dtype=np.float32)
    b = np.array([7.0, 3.0, 0.0, 0.0, 0.0, 1e-40, 1e-40, np.inf, np.inf], dtype=np.float32)
    with np.errstate(all="ignore"):  # numpy warns of the divisions by zero
        expected, actual = a / b, apply(Ops.FDIV, a, b, dtype=np.float32)
    expect_equal(actual, expected, what="FDIV (float division, rounded once)")


def test_remainder_has_the_sign_of_the_dividend() -> None:
    """MOD is C's %: -7 % 2 is -1 (Python says 1); x % 0 is 0; floats use fmod."""
    a = np.array([7, -7, 7, -7, 0, 6, -6, 5, 100, -1], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, 3, 0, 7, 0], dtype=np.int32)
    expected = np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b)))
    expect_equal(apply(Ops.MOD, a, b, dtype=np.int32), expected.astype(np.int32),
                 what="MOD (C's remainder; divisor 0 gives 0)")
    x = np.array([5.5, -5.5, 5.5], dtype=np.float32)
    y = np.array([2.0, 2.0, -2.0], dtype=np.float32)
    expect_close(apply(Ops.MOD, x, y, dtype=np.float32), np.fmod(x, y), what="MOD of floats")


def test_bools_comparisons_bits_and_where() -> None:
    """Bool ADD/MUL/NEG are or/and/not; CMPLT, CMPNE give bools; AND/OR/XOR; WHERE picks."""
    p = np.array([False, False, True, True])
    q = np.array([False, True, False, True])
    for op, expected in [(Ops.ADD, p | q), (Ops.MUL, p & q), (Ops.MAX, p | q), (Ops.AND, p & q),
                         (Ops.OR, p | q), (Ops.XOR, p ^ q), (Ops.CMPNE, p != q),
                         (Ops.CMPLT, ~p & q)]:
        expect_equal(apply(op, p, q), expected, what=f"{op.name} of bools", dtype=np.bool_)
    expect_equal(apply(Ops.NEG, p), ~p, what="NEG of bools (logical not)", dtype=np.bool_)
    a = np.array([12, -3, 5, 0], dtype=np.int32)
    b = np.array([10, 6, 5, -1], dtype=np.int32)
    for op, expected in [(Ops.AND, a & b), (Ops.OR, a | b), (Ops.XOR, a ^ b)]:
        expect_equal(apply(op, a, b, dtype=np.int32), expected, what=f"{op.name} of ints")
    expect_equal(apply(Ops.CMPLT, a, b), a < b, what="CMPLT of ints", dtype=np.bool_)
    expect_equal(apply(Ops.CMPNE, a, b), a != b, what="CMPNE of ints", dtype=np.bool_)
    expect_equal(apply(Ops.WHERE, p, a, b, dtype=np.int32), np.where(p, a, b), what="WHERE")


def test_tensor_arithmetic_runs_on_the_rules() -> None:
    """Whole expressions through realize(): torch's answers, Python's // and % included."""
    a = RNG.integers(-20, 20, (3, 4)).astype(np.int32)
    b = RNG.integers(1, 6, (3, 4)).astype(np.int32) * np.where(RNG.random((3, 4)) < 0.5, -1, 1)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    ta, tb, tx = (Tensor(v, device="NUMPY") for v in (a, b, x))
    expect_equal((ta // tb).numpy(), a // b, what="a // b (floor division, built on IDIV)")
    expect_equal((ta % tb).numpy(), a % b, what="a % b (Python's remainder, built on MOD)")
    expect_close((tx.relu() * 2 - tx.exp() / 3).numpy(),
                 np.maximum(x, 0) * 2 - np.exp(x) / 3, what="relu(x) * 2 - exp(x) / 3")
    expect_equal((tx > 0).where(ta, tb).numpy(), np.where(x > 0, a, b), what="where")
