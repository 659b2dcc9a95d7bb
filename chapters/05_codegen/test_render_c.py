"""Rendering C: programs made by hand, rendered by your render(), compiled and run, compute what
numpy computes, including where C and numpy disagree (NaN, division by zero, bools, casts)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal, show_on_failure
from tinyfw import dtypes
from tinyfw.codegen.lower import LOps, Program
from tinyfw.dtype import DType
from tinyfw.renderer.cstyle import CStyleLanguage, render
from tinyfw.runtime.c_compiler import ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram
from tinyfw.shape.symbolic import Const, Expr, Var, make_and
from tinyfw.uop.ops import Ops

pytestmark = pytest.mark.task("05.render_c")

RNG = np.random.default_rng(7)
ALWAYS = Const(1)


class Builder:
    """A hand-made program: buffers, loops, and steps that return their positions."""

    def __init__(self, name: str, out: DType, *inputs: DType) -> None:
        self.prog = Program(name)
        for number, dtype in enumerate((out, *inputs)):
            self.prog.params.append(self.prog.add(LOps.PARAM, dtype, (), (number, number == 0)))
        self.loops: list[Var] = []

    def param(self, number: int) -> int:
        return self.prog.params[number]

    def loop(self, name: str, size: int) -> Var:
        self.prog.add(LOps.LOOP, dtypes.int32, (), (name, size))
        self.loops.append(Var(name, 0, max(size - 1, 0)))
        return self.loops[-1]

    def end(self) -> None:
        self.prog.add(LOps.ENDLOOP, dtypes.int32)
        self.loops.pop()

    def load(self, number: int, index: Expr, valid: Expr = ALWAYS) -> int:
        dtype = self.prog.steps[self.param(number)].dtype
        return self.prog.add(LOps.LOAD, dtype, (self.param(number),), (index, valid))

    def const(self, value: Any, dtype: DType) -> int:
        return self.prog.add(LOps.CONST, dtype, (), value)

    def alu(self, op: Ops, dtype: DType, *src: int) -> int:
        return self.prog.add(LOps.ALU, dtype, tuple(src), op)

    def store(self, value: int, index: Expr) -> None:
        dtype = self.prog.steps[self.param(0)].dtype
        self.prog.add(LOps.STORE, dtype, (self.param(0), value), index)


def inside(i: Var, start: int, end: int) -> Expr:
    """start <= i < end, as an expression."""
    return make_and([i.ge(start), i.lt(end)])


def run(prog: Program, out: np.ndarray, *inputs: np.ndarray) -> np.ndarray:
    """Your C for prog, compiled and called on the arrays; returns out. A failure of the test
    shows this source (the last one run) under the values that differ."""
    source = render(prog)
    assert isinstance(source, str) and f"{prog.name}(" in source, \
        f"render() should return C source defining a function named {prog.name}"
    show_on_failure("the C your render() made (the values above came from it)", source)
    CPUProgram(prog.name, ClangStyleCompiler().compile(source))(out, *inputs)
    return out


def unary_program(op: Ops, dtype: DType, out: DType, n: int) -> Program:
    """data0[i] = op(data1[i]) for i < n."""
    b = Builder(f"unary_{op.name.lower()}_{dtype.name}_{out.name}", out, dtype)
    i = b.loop("i", n)
    b.store(b.alu(op, out, b.load(1, i)), i)
    b.end()
    return b.prog


def binary_program(op: Ops, dtype: DType, out: DType, n: int) -> Program:
    """data0[i] = op(data1[i], data2[i]) for i < n."""
    b = Builder(f"binary_{op.name.lower()}_{dtype.name}", out, dtype, dtype)
    i = b.loop("i", n)
    b.store(b.alu(op, out, b.load(1, i), b.load(2, i)), i)
    b.end()
    return b.prog


def reduce_program(op: Ops, dtype: DType, rows: int, cols: int) -> Program:
    """data0[r] = op over c of data1[r, c], with an accumulator."""
    b = Builder(f"reduce_{op.name.lower()}_{dtype.name}", dtype, dtype)
    r = b.loop("r", rows)
    start = 0.0 if op is Ops.ADD else -float("inf")
    acc = b.prog.add(LOps.ACC, dtype, (), start)
    c = b.loop("c", cols)
    b.prog.add(LOps.UPDATE, dtype, (acc, b.load(1, r * cols + c)), op)
    b.end()
    b.store(acc, r)
    b.end()
    return b.prog


def test_elementwise_add() -> None:
    """data0[i] = data1[i] + data2[i]: parameters, a loop, two loads, an ALU and a store."""
    a, c = RNG.standard_normal(10).astype(np.float32), RNG.standard_normal(10).astype(np.float32)
    got = run(binary_program(Ops.ADD, dtypes.float32, dtypes.float32, 10),
              np.zeros(10, np.float32), a, c)
    expect_close(got, a + c, what="data1 + data2")


def test_nested_loops_and_index_expressions() -> None:
    """A transpose: two loops, an index expression in both variables on the load."""
    b = Builder("transpose", dtypes.float64, dtypes.float64)
    i, j = b.loop("i", 4), b.loop("j", 3)
    b.store(b.load(1, j * 4 + i), i * 3 + j)
    b.end()
    b.end()
    x = RNG.standard_normal((3, 4))
    expect_equal(run(b.prog, np.zeros(12), x.reshape(-1)).reshape(4, 3), x.T, what="transpose")


def test_sum_with_an_accumulator() -> None:
    """ACC before the inner loop, UPDATE inside it, STORE after it."""
    x = RNG.standard_normal((5, 7)).astype(np.float32)
    got = run(reduce_program(Ops.ADD, dtypes.float32, 5, 7), np.zeros(5, np.float32),
              x.reshape(-1))
    expect_close(got, x.sum(1), rtol=1e-5, what="row sums")


def test_max_reduce_propagates_nan() -> None:
    """A max over a row holding a NaN is NaN, wherever the NaN is (numpy's np.max)."""
    x = RNG.standard_normal((4, 6))
    x[0, 0], x[1, 3], x[2, 5] = np.nan, np.nan, np.nan
    got = run(reduce_program(Ops.MAX, dtypes.float64, 4, 6), np.zeros(4), x.reshape(-1))
    expect_equal(got, x.max(1), what="row maxima (rows 0 to 2 hold a NaN)")


def test_elementwise_max_propagates_nan() -> None:
    """MAX(a, b) is NaN when either side is NaN, as np.maximum."""
    a = np.array([1.0, np.nan, 3.0, np.nan, -np.inf], np.float32)
    c = np.array([2.0, 0.0, np.nan, np.nan, -1.0], np.float32)
    got = run(binary_program(Ops.MAX, dtypes.float32, dtypes.float32, 5),
              np.zeros(5, np.float32), a, c)
    expect_equal(got, np.maximum(a, c), what="MAX with NaNs on either side")


def c_division(a: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C's integer / and % (toward zero), with x / 0 and x % 0 giving 0."""
    safe = np.where(c == 0, 1, c)
    q = np.trunc(a / safe).astype(a.dtype)
    return np.where(c == 0, 0, q), np.where(c == 0, 0, a - q * safe)


def test_integer_division_by_zero_is_zero() -> None:
    """IDIV and MOD round toward zero as C does, and give 0 (not a crash) for a divisor of 0."""
    for dtype in (dtypes.int32, dtypes.int8, dtypes.int64):
        a = np.array([7, -7, 7, -7, 5, 0, -3, 9], dtype.np)
        c = np.array([2, 2, -2, -2, 0, 0, 0, 3], dtype.np)
        quotient, remainder = c_division(a, c)
        got = run(binary_program(Ops.IDIV, dtype, dtype, 8), np.zeros(8, dtype.np), a, c)
        expect_equal(got, quotient, what=f"{dtype.name} IDIV")
        got = run(binary_program(Ops.MOD, dtype, dtype, 8), np.zeros(8, dtype.np), a, c)
        expect_equal(got, remainder, what=f"{dtype.name} MOD")


BOOL_OPS = [(Ops.ADD, np.logical_or), (Ops.MUL, np.logical_and), (Ops.AND, np.logical_and),
            (Ops.OR, np.logical_or), (Ops.XOR, np.logical_xor), (Ops.CMPNE, np.not_equal),
            (Ops.CMPLT, np.less)]


def test_bool_ops() -> None:
    """On bools, ADD is or, MUL is and, and the logic ops and comparisons give bools."""
    a = np.array([False, False, True, True])
    c = np.array([False, True, False, True])
    for op, fn in BOOL_OPS:
        got = run(binary_program(op, dtypes.bool, dtypes.bool, 4), np.zeros(4, bool), a, c)
        expect_equal(got, fn(a, c), what=f"{op.name} on bools")


def test_not_and_where() -> None:
    """NEG of a bool is not; WHERE picks between two values."""
    flags = np.array([True, False, True, False, False])
    got = run(unary_program(Ops.NEG, dtypes.bool, dtypes.bool, 5), np.zeros(5, bool), flags)
    expect_equal(got, ~flags, what="NEG of bools")
    b = Builder("where_f32", dtypes.float32, dtypes.bool, dtypes.float32)
    i = b.loop("i", 5)
    b.store(b.alu(Ops.WHERE, dtypes.float32, b.load(1, i), b.load(2, i),
                  b.const(-1.0, dtypes.float32)), i)
    b.end()
    x = np.arange(5, dtype=np.float32)
    expect_equal(run(b.prog, np.zeros(5, np.float32), flags, x), np.where(flags, x, -1),
                 what="WHERE(flag, x, -1)")


CASTS = [
    (dtypes.float32, dtypes.int32, [-2.7, -0.5, 0.0, 0.9, 3.99, 1e6]),
    (dtypes.float64, dtypes.int8, [-100.9, -1.5, 0.2, 7.7, 126.9, 0.0]),
    (dtypes.int32, dtypes.float32, [-3, 0, 7, 1 << 20, -(1 << 20), 5]),
    (dtypes.float32, dtypes.bool, [0.0, -0.0, 0.5, np.nan, -3.0, np.inf]),
    (dtypes.int16, dtypes.bool, [0, 1, -1, 300, 0, 2]),
    (dtypes.bool, dtypes.float32, [True, False, True, True, False, False]),
    (dtypes.float64, dtypes.float16, [0.1, 1e-3, 65504.0, -2.5, 1 / 3, 1e5]),
    (dtypes.uint8, dtypes.int64, [0, 1, 127, 128, 255, 42]),
    (dtypes.int64, dtypes.float64, [-(1 << 40), 3, 0, 1 << 50, -7, 12]),
]


def test_casts() -> None:
    """CAST converts as C does: floats truncate toward zero, anything nonzero (or NaN) is true."""
    for src, dst, values in CASTS:
        x = np.array(values).astype(src.np)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = x != 0 if dst.is_bool else np.trunc(x).astype(dst.np) if src.is_float and \
                dst.is_int else x.astype(dst.np)
        got = run(unary_program(Ops.CAST, src, dst, 6), np.zeros(6, dst.np), x)
        expect_equal(got, want, what=f"cast {src.name} -> {dst.name}")


MATH = [(Ops.EXP2, np.exp2), (Ops.LOG2, np.log2), (Ops.SIN, np.sin), (Ops.SQRT, np.sqrt),
        (Ops.RECIPROCAL, np.reciprocal), (Ops.TRUNC, np.trunc), (Ops.NEG, np.negative)]


@pytest.mark.parametrize("dtype", [dtypes.float64, dtypes.float32, dtypes.float16],
                         ids=lambda d: d.name)
def test_math(dtype: DType) -> None:
    """The unary math ops in float64, float32 and float16 (which computes in float)."""
    x = np.array([0.25, 0.5, 1.0, 2.0, 3.75, 7.5, 10.0, 0.1], dtype.np)
    for op, fn in MATH:
        got = run(unary_program(op, dtype, dtype, 8), np.zeros(8, dtype.np), x)
        expect_close(got, fn(x), rtol=1e-3 if dtype == dtypes.float16 else 1e-6,
                     what=f"{op.name} in {dtype.name}")


def test_constants_of_every_kind() -> None:
    """CONST steps become literals: NaN, infinities, a precise double, a big int64, a bool."""
    cases = [(np.nan, dtypes.float32), (-np.inf, dtypes.float32), (np.inf, dtypes.float64),
             (0.1, dtypes.float64), (-(1 << 62), dtypes.int64), (-128, dtypes.int8),
             (True, dtypes.bool), (-2.5, dtypes.float16)]
    for value, dtype in cases:
        b = Builder(f"const_{dtype.name}", dtype)
        b.store(b.const(value, dtype), Const(0))
        got = run(b.prog, np.zeros(1, dtype.np))
        expect_equal(got, np.array([value], dtype.np), what=f"CONST {value!r} of {dtype.name}")


def test_every_dtype_copies_exactly() -> None:
    """A copy compiles for every dtype and moves every bit: the C type matches the numpy one.
    (Every dtype C has: bfloat16 reaches a renderer as float32 and uint16, tinyfw's
    codegen/emulate.py rewrites it before.)"""
    for dtype in [d for d in dtypes.all() if d in CStyleLanguage.types]:
        b = Builder(f"copy_{dtype.name}", dtype, dtype)
        i = b.loop("i", 16)
        b.store(b.load(1, i * -1 + 15), i)
        b.end()
        x = (RNG.integers(0, 256, 16 * dtype.itemsize).astype(np.uint8).view(dtype.np)
             if not dtype.is_bool else RNG.random(16) < 0.5)
        got = run(b.prog, np.zeros(16, dtype.np), x)
        expect_equal(got.view(np.uint8), x[::-1].copy().view(np.uint8),
                     what=f"reversed copy of {dtype.name} (as bytes)")


def test_a_load_that_is_not_always_valid_reads_zero() -> None:
    """A LOAD with a condition reads 0 where it is false (padding) and memory only where true."""
    b = Builder("padded", dtypes.float32, dtypes.float32)
    i = b.loop("i", 8)
    b.store(b.load(1, i - 2, inside(i, 2, 6)), i)
    b.end()
    x = np.arange(1, 5, dtype=np.float32)
    expect_equal(run(b.prog, np.full(8, 9, np.float32), x), np.pad(x, (2, 2)),
                 what="x padded with two zeros on each side")


def test_valid_step_makes_a_bool() -> None:
    """A VALID step is a bool from the loop variables, usable as a WHERE condition."""
    b = Builder("valid_where", dtypes.int32)
    i = b.loop("i", 6)
    cond = b.prog.add(LOps.VALID, dtypes.bool, (), inside(i, 1, 4))
    b.store(b.alu(Ops.WHERE, dtypes.int32, cond, b.const(5, dtypes.int32),
                  b.const(0, dtypes.int32)), i)
    b.end()
    expect_equal(run(b.prog, np.full(6, 9, np.int32)), [0, 5, 5, 5, 0, 0],
                 what="5 where 1 <= i < 4, else 0")


def test_a_program_without_loops_and_an_empty_loop() -> None:
    """A program with no loop runs its steps once; a loop of size 0 runs them never."""
    b = Builder("scalar_mul", dtypes.float32, dtypes.float32)
    b.store(b.alu(Ops.MUL, dtypes.float32, b.load(1, Const(0)), b.const(4.0, dtypes.float32)),
            Const(0))
    expect_equal(run(b.prog, np.zeros(1, np.float32), np.array([2.5], np.float32)), [10.0],
                 what="data1[0] * 4")
    b = Builder("nothing", dtypes.float32)
    i = b.loop("i", 0)
    b.store(b.const(1.0, dtypes.float32), i)
    b.end()
    expect_equal(run(b.prog, np.full(2, 7, np.float32)), [7.0, 7.0], what="no iteration")


class ThreadedC(CStyleLanguage):
    """C pretending to be a GPU language: one call of name_thread per thread, made by a loop
    the test appends, with more threads than elements (as a GPU launches whole blocks)."""

    has_threads = True

    def kernel_header(self, name: str, params: list[tuple[int, str, bool]]) -> str:
        args = ", ".join(f"{'' if out else 'const '}{t}* data{i}" for i, t, out in params)
        return f"static void {name}_thread(int tf_thread, {args}) {{"

    def thread_index(self) -> str:
        return "tf_thread"


def test_a_language_with_threads_gets_its_indices_from_the_thread() -> None:
    """Global loops become gid = thread index, a guard, and gidxN unraveled from gid."""
    b = Builder("threaded", dtypes.float32, dtypes.float32)
    rows, cols = b.loop("gidx0", 3), b.loop("gidx1", 5)
    index = rows * 5 + cols
    b.store(b.alu(Ops.MUL, dtypes.float32, b.load(1, cols * 3 + rows),
                  b.const(2.0, dtypes.float32)), index)
    b.end()
    b.end()
    b.prog.global_size = (3, 5)
    source = ThreadedC().render(b.prog)
    assert "for (int gidx" not in source, \
        f"with threads, the global loops are not written as loops:\n{source}"
    driver = ("void threaded(float* data0, const float* data1) {\n"
              "  for (int t = 0; t < 15 + 7; t++) threaded_thread(t, data0, data1);\n}\n")
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    out = np.full(15 + 7, -1.0, np.float32)  # past the 15 elements: untouched by the guard
    CPUProgram("threaded", ClangStyleCompiler().compile(source + driver))(out, x)
    expected = np.concatenate([(2 * x.T).reshape(-1), np.full(7, -1.0, np.float32)])
    expect_close(out, expected, what=f"3x5 threads (and 7 spare) running\n{source}")


def test_indices_past_2_31_are_64_bit() -> None:
    """A loop of 2**31 + 5 iterations counts in a long long (an int would overflow: the loop
    would never end); a small one keeps its int. (Rendered only: running it takes seconds.)"""
    big = 2**31 + 5
    b = Builder("count", dtypes.float32)
    b.loop("i", big)
    b.store(b.const(1.0, dtypes.float32), Const(0))
    b.end()
    source = render(b.prog)
    assert f"for (long long i = 0; i < {big}; i++)" in source, \
        f"a loop of {big} needs a 64-bit variable (see prog.index_dtype):\n{source}"
    small = Builder("count", dtypes.float32)
    small.loop("i", 5)
    small.store(small.const(1.0, dtypes.float32), Const(0))
    small.end()
    assert "for (int i = 0; i < 5; i++)" in render(small.prog)
