"""Splitting a kernel's loop (outer x inner) changes the loops, never the result."""
from __future__ import annotations

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.engine import realize
from tinyfw.codegen.lower import AxisKind, Kernel, LOps, lower
from tinyfw.renderer.cstyle import render
from tinyfw.runtime.c_compiler import ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram


def run_kernel(kernel: Kernel, item) -> np.ndarray:
    """Compile and run a (possibly split) kernel on the CPU; its output, flat."""
    program = CPUProgram(kernel.name, ClangStyleCompiler().compile(render(lower(kernel))))
    inputs = [realize.buffer_of(realize.realize(n)).numpy() for n in item.inputs]
    out = np.zeros(item.output.numel, item.output.dtype.np)
    program(out, *inputs)
    return out


PROGRAMS = {
    "matmul_relu": lambda x, w: (x @ w).relu(),
    "fused_sum": lambda x, w: ((x * 2 + 1).relu() * x).sum(),
    "row_max": lambda x, w: x.max(1),
    "permuted_add": lambda x, w: x.T + w[:, :1],
}


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("axis, amount", [(0, 2), (1, 4), (-1, 2)])
def test_split_keeps_the_result(name: str, axis: int, amount: int) -> None:
    """Any axis split by a divisor of its size computes the same values."""
    x, w = Tensor.rand(8, 12, device="NUMPY"), Tensor.rand(12, 4, device="NUMPY")
    out = PROGRAMS[name](x.to("CPU"), w.to("CPU"))
    item = out.schedule()[-1]
    kernel = Kernel.from_ast(item.ast, item.name)
    axis %= len(kernel.axes)
    if kernel.axes[axis].size % amount:
        amount = 1
    split = kernel.split(axis, amount)
    assert len(split.axes) == len(kernel.axes) + 1
    assert split.axes[axis].size * split.axes[axis + 1].size == kernel.axes[axis].size
    np.testing.assert_allclose(run_kernel(split, item), out.numpy().reshape(-1), rtol=1e-5)


def test_split_reduce_makes_two_reduce_loops() -> None:
    """Splitting a reduce axis gives two nested reduce loops inside the accumulator."""
    x = Tensor.rand(4, 12)
    item = x.sum(1).schedule()[0]
    kernel = Kernel.from_ast(item.ast, item.name).split(1, 3)
    assert [a.kind for a in kernel.axes] == [AxisKind.GLOBAL, AxisKind.REDUCE, AxisKind.REDUCE]
    steps = lower(kernel).steps
    acc = next(i for i, s in enumerate(steps) if s.op is LOps.ACC)
    loops_after_acc = [s.arg[1] for s in steps[acc:] if s.op is LOps.LOOP]
    assert loops_after_acc == [4, 3]
    np.testing.assert_allclose(run_kernel(kernel, item), x.numpy().sum(1), rtol=1e-5)


def test_split_refuses_a_non_divisor() -> None:
    item = Tensor.rand(6).exp().schedule()[0]
    with pytest.raises(ValueError):
        Kernel.from_ast(item.ast, item.name).split(0, 4)
