"""From a kernel to loops: the shape of the program lower() makes, and what it computes when the
reference renderer and the C compiler run it."""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tinyfw
from chapters.grading import expect_close, expect_equal, show_on_failure
from tinyfw import Tensor, dtypes
from tinyfw.codegen.lower import Kernel, LOps, Program, lower
from tinyfw.engine.realize import buffer_of
from tinyfw.runtime.c_compiler import ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram
from tinyfw.uop.ops import Ops

pytestmark = pytest.mark.task("05.lower")

RNG = np.random.default_rng(5)


# --- helpers: kernels from tensors on the NUMPY device, programs checked and run ---
def data(*shape: int, dtype: Any = np.float32) -> Tensor:
    """A tensor of random values on the reference device (realizing it needs no lowering)."""
    return Tensor(RNG.standard_normal(shape).astype(dtype), device="NUMPY")


def kernels(t: Tensor) -> list[Any]:
    """The scheduled kernels that compute t."""
    return t.schedule()


def lowered(t: Tensor, number: int = -1) -> Program:
    """Your program for one kernel of t (the last by default)."""
    item = kernels(t)[number]
    return lower(Kernel.from_ast(item.ast, item.name))


@functools.cache
def reference_renderer() -> ModuleType:
    """tinyfw's own cstyle.py, loaded apart, so these tests use it even when chapter 05's
    render() is yours."""
    path = Path(tinyfw.__file__).parent / "renderer" / "cstyle.py"
    spec = importlib.util.spec_from_file_location("_reference_renderer_c", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def depths(prog: Program) -> list[int]:
    """How many loops are open at each step."""
    out, depth = [], 0
    for step in prog.steps:
        depth -= step.op is LOps.ENDLOOP
        out.append(depth)
        depth += step.op is LOps.LOOP
    return out


def open_loops(prog: Program, at: int) -> list[tuple[str, int]]:
    """The (variable, size) of the loops open at step number `at`, outermost first."""
    stack: list[tuple[str, int]] = []
    for step in prog.steps[:at]:
        if step.op is LOps.LOOP:
            stack.append(step.arg)
        elif step.op is LOps.ENDLOOP:
            stack.pop()
    return stack


def scopes(prog: Program) -> list[tuple[int, ...]]:
    """The positions of the LOOP steps open at each step, outermost first."""
    out: list[tuple[int, ...]] = []
    stack: list[int] = []
    for i, step in enumerate(prog.steps):
        if step.op is LOps.ENDLOOP and stack:
            stack.pop()
        out.append(tuple(stack))
        if step.op is LOps.LOOP:
            stack.append(i)
    return out


def check_structure(prog: Program) -> None:
    """What every program must be: params first, steps using earlier steps made in loops that
    are still open, loops closed, variables used only inside their loops."""
    ops = [s.op for s in prog.steps]
    n_params = len(prog.params)
    assert ops[:n_params] == [LOps.PARAM] * n_params and LOps.PARAM not in ops[n_params:], \
        f"the PARAM steps come first, one per buffer: {[o.name for o in ops]}"
    assert ops.count(LOps.LOOP) == ops.count(LOps.ENDLOOP), "every LOOP needs its ENDLOOP"
    assert min(depths(prog) + [0]) >= 0, "an ENDLOOP closes a loop that was never opened"
    assert ops.count(LOps.STORE) == 1, "a kernel stores one value, once per output element"
    scope = scopes(prog)
    for i, step in enumerate(prog.steps):
        assert all(0 <= s < i for s in step.src), f"step {i} ({step.op.name}) uses {step.src}: " \
                                                  "a step may only use earlier steps"
        for s in step.src:
            assert scope[i][:len(scope[s])] == scope[s], \
                f"step {i} ({step.op.name}) uses step {s}, made inside a loop that has closed: " \
                "compute the value again after the loop"
        names = {name for name, _ in open_loops(prog, i)}
        exprs = {LOps.LOAD: lambda a: a, LOps.STORE: lambda a: (a,), LOps.VALID: lambda a: (a,)}
        if step.op in exprs:
            used = set().union(*(e.vars() for e in exprs[step.op](step.arg)))
            assert used <= names, f"step {i} ({step.op.name}) uses {sorted(used - names)} " \
                                  f"outside their loops (open: {sorted(names)})"


def run(t: Tensor) -> np.ndarray:
    """t computed by your lower(), the reference renderer and the C compiler, kernel by kernel.
    A failure of the test shows the C of these kernels under the values that differ."""
    render = reference_renderer().render
    values: dict[Any, np.ndarray] = {}
    sources: list[str] = []
    for item in kernels(t):
        prog = lower(Kernel.from_ast(item.ast, item.name))
        check_structure(prog)
        sources.append(render(prog))
        show_on_failure("the C of your lower()'s programs, rendered by tinyfw's renderer "
                        "(the values above came from it)", "\n".join(sources))
        program = CPUProgram(prog.name, ClangStyleCompiler().compile(sources[-1]))
        inputs = [values[n] if n in values else buffer_of(n).numpy() for n in item.inputs]
        out = np.zeros(item.output.numel, item.output.dtype.np)
        program(out, *[np.ascontiguousarray(a) for a in inputs])
        values[item.output] = out
    return values[t.uop].reshape(t.shape)


# --- the structure of the program ---
def test_params_come_first_output_first() -> None:
    """One PARAM per buffer, buffer 0 (the output, written) first, each with its element type."""
    x, n = data(3, 4), Tensor(np.arange(12, dtype=np.int16).reshape(3, 4), device="NUMPY")
    prog = lowered(x + n.cast(dtypes.float32))
    check_structure(prog)
    params = [prog.steps[i] for i in prog.params]
    assert [p.arg for p in params] == [(0, True), (1, False), (2, False)], \
        f"params (buffer number, is output): {[p.arg for p in params]}"
    item = kernels(x + n.cast(dtypes.float32))[-1]
    loads = {node.arg: node.dtype for node in item.ast.toposort() if node.op is Ops.LOAD}
    assert [p.dtype for p in params] == [dtypes.float32, loads[1], loads[2]], \
        "each PARAM has the dtype of its buffer's elements"


def test_one_loop_per_axis_in_order() -> None:
    """An elementwise kernel of shape (2, 3, 4) is three nested loops of 2, 3 and 4, with every
    step of the body inside all of them."""
    prog = lowered(data(2, 3, 4) * 2)
    check_structure(prog)
    loops = [s.arg[1] for s in prog.steps if s.op is LOps.LOOP]
    assert loops == [2, 3, 4], f"loop sizes {loops}"
    assert prog.global_size == (2, 3, 4), f"global_size {prog.global_size}"
    body = [d for s, d in zip(prog.steps, depths(prog)) if s.op in (LOps.LOAD, LOps.STORE)]
    assert body and all(d == 3 for d in body), "loads and the store run inside all three loops"
    assert len({s.arg[0] for s in prog.steps if s.op is LOps.LOOP}) == 3, "one variable per loop"


def test_reduce_has_an_accumulator_and_inner_loops() -> None:
    """sum over axis 1 of (3, 4): a loop of 3 holding ACC, a loop of 4 holding the UPDATE, then
    the STORE once that inner loop has closed."""
    prog = lowered(data(3, 4).sum(1))
    check_structure(prog)
    steps, depth = prog.steps, depths(prog)
    ops = [s.op for s in steps]
    assert ops.count(LOps.ACC) == 1 and ops.count(LOps.UPDATE) == 1, "one ACC, one UPDATE"
    acc, update, store = ops.index(LOps.ACC), ops.index(LOps.UPDATE), ops.index(LOps.STORE)
    assert [size for _, size in open_loops(prog, acc)] == [3] and depth[acc] == 1, \
        "ACC sits inside the output loop, before the reduce loop opens"
    assert [size for _, size in open_loops(prog, update)] == [3, 4], "UPDATE is in both loops"
    assert steps[update].src[0] == acc and steps[update].arg is Ops.ADD, \
        "UPDATE names the ACC it adds to, and the op (Ops.ADD for a sum)"
    assert steps[acc].arg == 0, f"a sum starts at 0, not {steps[acc].arg}"
    assert [size for _, size in open_loops(prog, store)] == [3] and steps[store].src[1] == acc, \
        "the STORE is after the reduce loop, inside the output loop, and stores the ACC"


def test_a_reduced_first_axis_is_the_inner_loop() -> None:
    """sum over axis 0 of (5, 7): the output loop (7) is outside, the reduce loop (5) inside."""
    prog = lowered(data(5, 7).sum(0))
    check_structure(prog)
    loops = [s.arg[1] for s in prog.steps if s.op is LOps.LOOP]
    assert loops == [7, 5], f"loop sizes in program order {loops}: output loops come first"
    assert prog.global_size == (7,)


def test_max_starts_from_minus_infinity() -> None:
    """A max reduce updates with Ops.MAX from the smallest value of the dtype."""
    prog = lowered(data(4, 6).max(1))
    acc = next(s for s in prog.steps if s.op is LOps.ACC)
    update = next(s for s in prog.steps if s.op is LOps.UPDATE)
    assert acc.arg == -float("inf") and update.arg is Ops.MAX, (acc.arg, update.arg)
    ints = Tensor(np.arange(6, dtype=np.int32).reshape(2, 3), device="NUMPY").max(1)
    acc = next(s for s in lowered(ints).steps if s.op is LOps.ACC)
    assert acc.arg == np.iinfo(np.int32).min, f"an int32 max starts from {acc.arg}"


def test_ops_after_the_reduce_run_after_its_loop() -> None:
    """(x.sum(1) * 2 + 1): the multiply and add come after the reduce loop closes, once per
    output element."""
    prog = lowered(data(3, 4).sum(1) * 2 + 1)
    check_structure(prog)
    ops, depth = [s.op for s in prog.steps], depths(prog)
    after = [i for i, s in enumerate(prog.steps) if s.op is LOps.ALU and i > ops.index(LOps.UPDATE)]
    assert len(after) == 2 and all(depth[i] == 1 for i in after), \
        "the ops above the reduce run in the output loop, after the reduce loop"
    assert {prog.steps[i].arg for i in after} == {Ops.MUL, Ops.ADD}


def test_float16_sums_accumulate_in_float32() -> None:
    """The ACC of a float16 sum is float32, cast to float16 after the loop."""
    prog = lowered(data(4, 8).cast(dtypes.float16).sum(1))
    acc = next(s for s in prog.steps if s.op is LOps.ACC)
    store = next(s for s in prog.steps if s.op is LOps.STORE)
    assert acc.dtype == dtypes.float32, f"ACC dtype {acc.dtype.name}"
    value = prog.steps[store.src[1]]
    assert value.dtype == dtypes.float16 and value.op is LOps.ALU and value.arg is Ops.CAST, \
        "the stored value is the accumulator cast back to float16"


def grid_env(prog: Program, at: int) -> dict[str, np.ndarray]:
    """Every value of the loop variables open at step `at`, as broadcasting numpy grids."""
    loops = open_loops(prog, at)
    grids = np.indices(tuple(size for _, size in loops), sparse=True)
    return {name: g for (name, _), g in zip(loops, grids)}


def test_store_index_is_row_major() -> None:
    """The STORE writes output element (i0, i1, ...) at its row-major position, with or without
    a reduce between the output axes."""
    for case, t in [("elementwise", data(3, 5, 2) + 1), ("reduce", data(2, 5, 3).sum(1))]:
        prog = lowered(t)
        at = next(i for i, s in enumerate(prog.steps) if s.op is LOps.STORE)
        shape = tuple(size for _, size in open_loops(prog, at))
        index = np.broadcast_to(prog.steps[at].arg.evaluate(grid_env(prog, at)), shape)
        expect_equal(index, np.arange(int(np.prod(shape))).reshape(shape),
                     what=f"STORE index of each output element ({case})")


def test_padding_is_a_validity_condition() -> None:
    """A padded input is a LOAD with a condition that is false exactly on the padding, and its
    index stays inside the buffer wherever the condition holds."""
    prog = lowered(data(2, 3).pad(((1, 1), (2, 0))) + 1)
    at = next(i for i, s in enumerate(prog.steps) if s.op is LOps.LOAD)
    index, valid = prog.steps[at].arg
    env = grid_env(prog, at)
    shape = tuple(size for _, size in open_loops(prog, at))
    ok = np.broadcast_to(valid.evaluate(env), shape).astype(bool)
    expect_equal(ok, np.pad(np.ones((2, 3), bool), ((1, 1), (2, 0))), what="LOAD validity")
    reads = np.broadcast_to(index.evaluate(env), shape)[ok]
    expect_equal(reads, np.arange(6), what="indices read where valid")


# --- what the programs compute ---
def size_one_reduce(x: Tensor) -> Tensor:
    """A sum over an axis of size 1, times its input: x is read inside the reduce loop and
    again after it (the same node), where the values of the loop are gone."""
    return x.sum(1, keepdim=True) * x - 2


CASES: dict[str, dict[str, Callable[[], Tensor]]] = {
    "elementwise": {
        "elementwise": lambda: (data(4, 5) * 3 - 1).exp2(),
        "broadcast": lambda: data(3, 1) + data(1, 4) * data(4),
        "scalar": lambda: data() * 2 + 1,
    },
    "reduce": {
        "sum of rows": lambda: data(6, 4).sum(1),
        "sum over non-adjacent axes": lambda: data(3, 4, 5).sum((0, 2)),
        "full sum": lambda: data(5, 6).sum(),
        "max with keepdim": lambda: data(3, 7).max(0, keepdim=True) * 2,
        "a size-1 reduce next to its input": lambda: size_one_reduce(data(3, 1)),
    },
    "padded": {
        "padded": lambda: data(3, 4).pad(((1, 2), (2, 1))) * 2 + 1,
        "padded constant": lambda: Tensor.ones(3, 2, device="NUMPY").pad(((1, 0), (0, 2))) + 0.5,
    },
    "views": {
        "flipped": lambda: data(4, 6).flip(1) - data(4, 6).flip((0, 1)),
        "permuted": lambda: data(2, 3, 4).permute(2, 0, 1) * 5,
        "shrunk": lambda: data(6, 7)[1:5, 2:6] + 1,
        "transposed then reshaped": lambda: data(4, 6).T.reshape(8, 3) + 0,
    },
    "matmul": {
        "matmul": lambda: data(6, 5) @ data(5, 7),
        "batched matmul": lambda: data(2, 3, 4) @ data(4, 2),
    },
    "softmax": {
        "softmax": lambda: data(4, 9).softmax(-1),
        "log_softmax over axis 0": lambda: data(5, 3).log_softmax(0),
    },
    "integers and bools": {
        "integers": lambda: Tensor(RNG.integers(-20, 20, (4, 5)).astype(np.int32),
                                   device="NUMPY") // 3 % 4,
        "where": lambda: (data(5, 5) > 0).where(data(5, 5), 0),
    },
    "float16": {
        "cast": lambda: data(3, 4).cast(dtypes.float16) * 3,
        "float16 sum": lambda: data(8, 64).cast(dtypes.float16).sum(1),
    },
}


@pytest.mark.parametrize("group", CASES)
def test_program_computes_what_numpy_does(group: str) -> None:
    """Lowered, rendered by the reference renderer, compiled and run, each kernel of each case
    gives what the reference device gives (its interpreter computes with numpy)."""
    for case, make in CASES[group].items():
        t = make()
        names = ", ".join(item.name for item in kernels(t))
        got = run(t)
        expected = t.numpy()  # on the NUMPY device: no lowering involved
        expect_close(got, expected, rtol=1e-3 if group == "float16" else 1e-5,
                     what=f"{case} (kernels {names})")
