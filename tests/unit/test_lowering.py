"""The one lowering path (tinyfw/codegen/lowering.py): the kernel's optimizations and the
renderer's fields switch its named steps on; exactly one step makes the program; a lowering
function swapped in by name (a learner's) is the one that runs."""
from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.codegen import lowering
from tinyfw.codegen.kernel import Kernel
from tinyfw.codegen.lower import Program, lower
from tinyfw.codegen.lower_groups import lower_workgroups
from tinyfw.codegen.lower_opts import lower_optimized
from tinyfw.codegen.opt import Opt, OptOps, apply_opts
from tinyfw.dtype import VectorDType
from tinyfw.renderer.cstyle import CPU_C
from tinyfw.renderer.cuda_c import CUDA

RNG = np.random.default_rng(0)
MAKERS = frozenset({"workgroups", "written_out", "loops"})  # the steps that make the program


def matmul_kernel() -> Kernel:
    a, b = RNG.normal(size=(16, 32)), RNG.normal(size=(32, 16))
    item = (Tensor(a.astype(np.float32)) @ Tensor(b.astype(np.float32))).schedule()[-1]
    assert item.ast is not None
    return Kernel.from_ast(item.ast, item.name)


def steps_of(program: Program) -> list[tuple[object, ...]]:
    """The program's steps as comparable tuples (an index Expr compares by its text)."""
    return [(s.op, s.dtype, s.src, repr(s.arg)) for s in program.steps]


def test_every_step_is_named_and_says_when_it_runs() -> None:
    """Each step has its own name, and a one-line docstring for its condition and its work."""
    names = [step.name for step in lowering.LOWERING]
    assert len(set(names)) == len(names) and MAKERS <= set(names)
    for step in lowering.LOWERING:
        for function in (step.wanted, step.run):
            doc = (function.__doc__ or "").strip()
            assert doc and "\n" not in doc, f"{step.name}: {function.__name__} needs a docstring"


def test_a_kernel_without_optimizations_is_chapter_05s_loops() -> None:
    """No optimization: only `loops` runs, whatever the renderer, and makes lower()'s program."""
    kernel = matmul_kernel()
    for renderer in (CPU_C, CUDA):
        done = lowering.lowered(kernel, renderer)
        assert done.ran == ["loops"] and done.program is not None
        assert steps_of(done.program) == steps_of(lower(kernel))


def test_the_renderers_vectors_switch_the_vectors_step() -> None:
    """An UPCAST on a renderer with SIMD registers: `vectors` chooses the axis, and the written
    out program computes it as vectors; the same renderer without vectors writes it out."""
    opts = (Opt(OptOps.UPCAST, 2, 8),)
    kernel = apply_opts(matmul_kernel(), opts)
    simd = SimpleNamespace(vector_lanes=8, vector_bytes=False)
    done = lowering.lowered(kernel, simd, opts)
    assert done.ran == ["vectors", "written_out"] and done.vector == 3
    assert done.program is not None
    assert any(isinstance(s.dtype, VectorDType) for s in done.program.steps)
    no_simd = copy.copy(CPU_C)
    no_simd.vector_lanes = 0
    scalar = lowering.lowered(kernel, no_simd, opts)
    assert scalar.ran == ["written_out"] and scalar.vector is None
    assert scalar.program is not None
    assert steps_of(scalar.program) == steps_of(lower_optimized(kernel))
    assert not any(isinstance(s.dtype, VectorDType) for s in scalar.program.steps)


def test_a_swap_alone_is_an_optimized_kernel() -> None:
    """SWAP leaves the loops GLOBAL and REDUCE, yet it is an optimization: `written_out`."""
    opts = (Opt(OptOps.SWAP, 0, 2),)
    assert lowering.lowered(apply_opts(matmul_kernel(), opts), CPU_C, opts).ran[-1:] == \
        ["written_out"]


def test_work_groups_are_their_own_step() -> None:
    """A GROUP: `workgroups` makes the program, with its launch; vectors are not asked for."""
    item = Tensor(RNG.normal(size=(8, 256)).astype(np.float32)).sum(1).schedule()[-1]
    assert item.ast is not None
    opts = (Opt(OptOps.GROUP, 1, 16),)
    kernel = apply_opts(Kernel.from_ast(item.ast, item.name), opts)
    done = lowering.lowered(kernel, SimpleNamespace(vector_lanes=8, vector_bytes=True), opts)
    assert done.ran == ["workgroups"] and done.program is not None
    assert done.program.workgroup == (8, 16)
    assert steps_of(done.program) == steps_of(lower_workgroups(kernel))


def test_exactly_one_step_makes_the_program() -> None:
    """For plain, optimized and work-group kernels, one of the making steps runs."""
    kernel = matmul_kernel()
    for opts in ((), (Opt(OptOps.UNROLL, 1, 4),), (Opt(OptOps.LOCAL, 0, 4),),
                 (Opt(OptOps.THREAD, 0, 4), Opt(OptOps.UPCAST, 3, 4))):
        done = lowering.lowered(apply_opts(kernel, opts), CPU_C, opts)
        assert len(MAKERS & set(done.ran)) == 1, (opts, done.ran)


def test_a_lowering_function_swapped_in_by_name_is_what_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The steps look lower() up in their module when they run, as the chapters' grading
    swaps a learner's in (chapters/learner.py): no step holds the function itself."""
    kernel = matmul_kernel()
    calls: list[Kernel] = []

    def learners_lower(k: Kernel) -> Program:
        calls.append(k)
        return Program(k.name)
    monkeypatch.setattr(lowering, "lower", learners_lower)
    assert lowering.lower_kernel(kernel, CPU_C).name == kernel.name and calls == [kernel]


def test_chapter_05s_swapped_in_lower_runs() -> None:
    """With chapter 05's work in use (here its solutions), the engine's lowering of a plain
    kernel runs that module's lower()."""
    from chapters.learner import unuse, use
    use("05", "solutions")
    try:
        assert lowering.lower.__module__.startswith("_learner_05")
    finally:
        unuse()
    assert lowering.lower.__module__ == "tinyfw.codegen.lower"
