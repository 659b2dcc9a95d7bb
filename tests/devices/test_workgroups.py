"""Chapter 11's work-groups: LOCAL (outputs computed by the threads of one GPU work-group) and
GROUP (a reduce shared by them, its partials added through local memory after a barrier), on
every GPU device here; the CPU refuses them."""
from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tinyfw import Tensor, dtypes
from tinyfw.codegen.heuristic import hand_coded_optimizations
from tinyfw.codegen.kernel import Kernel
from tinyfw.codegen.lower import LOps
from tinyfw.codegen.lower_groups import lower_workgroups
from tinyfw.codegen.opt import KernelOptError, Opt, OptOps, apply_opt, apply_opts
from tinyfw.probe import probe
from tinyfw.engine.program import get_program
from tinyfw.renderer.base import NotSupportedError
from tinyfw.renderer.cstyle import CPU_C
from tinyfw.renderer.cuda_c import CUDA
from tinyfw.renderer.wgsl import WGSL

from tests.unit.test_opt import run_with

GPUS = ["CL", "WEBGPU", "CUDAEMU", "CUDA"]  # (CUDA: scripts/test_cuda.sh, on a GPU)
L, G, U, R = OptOps.LOCAL, OptOps.GROUP, OptOps.UPCAST, OptOps.UNROLL
RNG = np.random.default_rng(3)
A = RNG.normal(size=(12, 20)).astype(np.float32)
B = RNG.normal(size=(20, 8)).astype(np.float32)
SPECIAL = np.arange(48, dtype=np.float32).reshape(4, 12)  # a row each: NaN, inf, all -inf
SPECIAL[1, 5], SPECIAL[2, 3], SPECIAL[3] = np.nan, np.inf, -np.inf

# (name, the tensor on a device, opts to try on its last kernel)
CASES: list[tuple[str, Callable[[str], Tensor], list[tuple[Opt, ...]]]] = [
    ("row sum", lambda d: Tensor(A, device=d).sum(1),
     [(Opt(G, 1, 4),), (Opt(G, 1, 20),), (Opt(L, 0, 3),), (Opt(L, 0, 4), Opt(G, 2, 5))]),
    ("column max", lambda d: Tensor(A, device=d).max(0), [(Opt(G, 0, 6),), (Opt(L, 1, 5),)]),
    ("int sum", lambda d: Tensor((A * 100).astype(np.int32), device=d).sum(1, dtype=dtypes.int32),
     [(Opt(G, 1, 10),)]),
    ("padded sum", lambda d: Tensor(A, device=d).pad(((1, 2), (0, 3))).sum(1),
     [(Opt(G, 1, 23),), (Opt(L, 0, 5), Opt(G, 2, 23))]),
    ("matmul", lambda d: Tensor(A, device=d) @ Tensor(B, device=d),
     [(Opt(G, 1, 5),), (Opt(L, 2, 8), Opt(G, 1, 4)), (Opt(L, 2, 4), Opt(L, 0, 2))]),
    ("elementwise", lambda d: Tensor(A, device=d).exp() * 2 + 1, [(Opt(L, 1, 4),),
                                                                   (Opt(L, 0, 6), Opt(L, 2, 5))]),
    ("sum of all", lambda d: Tensor(A, device=d).sum(), [(Opt(G, 1, 10), Opt(G, 0, 12))]),
    ("mean, then math", lambda d: (Tensor(A, device=d).mean(1) * 2).exp() + 1,
     [(Opt(G, 1, 4),), (Opt(L, 0, 3), Opt(G, 2, 5))]),
    ("float16 sum", lambda d: Tensor(A.astype(np.float16), device=d).sum(1), [(Opt(G, 1, 4),)]),
    ("any", lambda d: (Tensor(A, device=d) > 1.5).any(1), [(Opt(G, 1, 5),)]),
    ("NaN and infinities", lambda d: Tensor(SPECIAL, device=d).max(1) + Tensor(SPECIAL, device=d)
     .sum(1), [(Opt(G, 1, 4),)]),
]


def kernel_of(t: Tensor) -> Kernel:
    return Kernel.from_ast(t.schedule()[-1].ast, "k")


@pytest.mark.parametrize("device", GPUS)
def test_workgroups_compute_what_one_thread_per_output_does(device: str) -> None:
    """Every kernel with LOCAL and GROUP axes gives the plain kernel's values on the device
    (a float sum within rounding: its partials are added in another order); sizes that are not
    powers of two included."""
    if not probe(device)[0]:
        pytest.skip(f"not graded here: no {device}")
    for name, build, tries in CASES:
        try:
            plain = run_with((), functools.partial(build, device))
        except NotSupportedError:  # (float16 on WEBGPU)
            continue
        for opts in tries:
            got = run_with(opts, functools.partial(build, device))
            assert got.dtype == plain.dtype and got.shape == plain.shape, (name, opts)
            np.testing.assert_allclose(got, plain, rtol=1e-6, atol=1e-5,  # (|sums| < 20)
                                       err_msg=f"{name} with {opts}")


def test_a_group_reduce_is_partials_a_barrier_and_one_sum() -> None:
    """A GROUP of 4 over a row of 20: each thread sums 5 values, writes its partial to local
    memory, waits at the barrier; the first of each 4 adds them and stores. The launch is
    exact: 12 groups (one per row) of 4 threads."""
    k = apply_opt(kernel_of(Tensor(A).sum(1)), Opt(G, 1, 4))
    prog = lower_workgroups(k)
    ops = [s.op for s in prog.steps]
    assert prog.workgroup == (12, 4)
    assert ops.count(LOps.BARRIER) == 1 and ops.count(LOps.LOCAL) == 1
    assert ops.index(LOps.LOCAL) < ops.index(LOps.BARRIER) < ops.index(LOps.IF) < \
        ops.index(LOps.STORE, ops.index(LOps.IF))
    loops = [s.arg for s in prog.steps if s.op is LOps.LOOP]
    assert loops == [("ridx1", 5), ("part", 4)]
    local = next(s for s in prog.steps if s.op is LOps.LOCAL)
    assert local.arg == ("partials", 4)


def test_local_threads_count_the_group_last() -> None:
    """LOCAL and GROUP threads of one group: the GROUP's are the fastest digits of the thread
    index, so one output's partials lie side by side in local memory."""
    k = apply_opts(kernel_of(Tensor(A).sum(1)), (Opt(L, 0, 3), Opt(G, 2, 5)))
    prog = lower_workgroups(k)
    specials = {s.arg[0]: s.arg[1:] for s in prog.steps if s.op is LOps.SPECIAL}
    assert prog.workgroup == (4, 15)
    assert specials["lidx1"] == ("local", 5, 3) and specials["lidx3"] == ("local", 1, 5)
    assert specials["lane"] == ("local", 1, 5)


@pytest.mark.parametrize("device", GPUS)
def test_each_language_writes_local_memory_and_a_barrier(device: str) -> None:
    """The source of a GROUP kernel declares its local array and waits at its barrier in the
    device's own words; a WGSL shader gets the group's size as its workgroup size."""
    if not probe(device)[0]:
        pytest.skip(f"not graded here: no {device}")
    out = Tensor(A, device=device).sum(1)
    source = run_source(out, (Opt(G, 1, 4),))
    words = {"CL": ("__local float partials[4];", "barrier(CLK_LOCAL_MEM_FENCE);"),
             "CUDAEMU": ("__shared__ float partials[4];", "__syncthreads();"),
             "CUDA": ("__shared__ float partials[4];", "__syncthreads();"),
             "WEBGPU": ("var<workgroup> partials: array<f32, 4>;", "workgroupBarrier();")}
    for word in words[device]:
        assert source.count(word) == 1, source
    if device == "WEBGPU":
        assert "@workgroup_size(4)" in source and source.startswith("var<workgroup>")


def run_source(out: Tensor, opts: tuple[Opt, ...]) -> str:
    """The source of out's last kernel with opts."""
    from tinyfw.engine import program as engine_program
    from tinyfw.engine.caches import forget_built
    original = engine_program.optimize

    def optimize(b: engine_program.Build) -> None:
        assert b.kernel is not None
        b.kernel, b.opts = apply_opts(b.kernel, opts), opts
    engine_program.PASSES = tuple(optimize if p is original else p
                                  for p in engine_program.PASSES)
    forget_built()  # (a kernel built before was built with other optimizations)
    try:
        return get_program(out.schedule()[-1]).source or ""
    finally:
        engine_program.PASSES = tuple(original if p is optimize else p
                                      for p in engine_program.PASSES)
        forget_built()


def test_workgroup_opts_that_do_not_apply_are_refused() -> None:
    """A GROUP of an output loop, a LOCAL of a reduce loop, a group of more than 256 threads,
    and work-groups mixed with UPCAST or UNROLL: KernelOptError, each saying why."""
    k = kernel_of(Tensor(np.ones((64, 512), np.float32)).sum(1))
    for opts, why in [((Opt(G, 0, 4),), "is GLOBAL, not REDUCE"),
                      ((Opt(L, 1, 4),), "is REDUCE, not GLOBAL"),
                      ((Opt(G, 1, 512),), "more than 256"),
                      ((Opt(L, 0, 32), Opt(G, 2, 16)), "512 threads"),
                      ((Opt(U, 0, 4), Opt(G, 2, 16)), "not combined"),
                      ((Opt(G, 1, 16), Opt(R, 1, 4)), "not combined")]:
        with pytest.raises(KernelOptError, match=why):
            apply_opts(k, opts)


def test_the_cpu_refuses_work_groups() -> None:
    """The CPU's C has no work-groups: a kernel with a GROUP fails to render, saying so."""
    out = Tensor(A, device="CPU").sum(1)
    with pytest.raises(NotSupportedError, match="CPU has no work-groups"):
        run_source(out, (Opt(G, 1, 4),))


def test_gpu_heuristics_group_a_reduce_with_few_outputs() -> None:
    """A reduce of at most 1024 outputs and a loop of 256 or more is shared by about the square
    root of its length of threads; one with many outputs, or a short loop, is not."""
    # (made on NUMPY: on a CPU of two cores this sum is two kernels, split_reduce.py)
    few = kernel_of(Tensor(np.ones((64, 4096), np.float32), device="NUMPY").sum(1))
    assert hand_coded_optimizations(few, CUDA) == (Opt(G, 1, 64),)
    assert hand_coded_optimizations(kernel_of(Tensor(np.ones((16, 1024), np.float32)).sum(1)),
                                    WGSL) == (Opt(G, 1, 32),)
    many = kernel_of(Tensor(np.ones((4096, 256), np.float32)).sum(1))
    assert all(o.op is not G for o in hand_coded_optimizations(many, CUDA))
    short = kernel_of(Tensor(np.ones((16, 128), np.float32)).sum(1))
    assert all(o.op is not G for o in hand_coded_optimizations(short, CUDA))
    assert all(o.op is not G for o in hand_coded_optimizations(few, CPU_C))


@pytest.mark.parametrize("device", GPUS)
def test_a_grouped_float_sum_stays_exact(device: str) -> None:
    """The heuristics' GROUP on a sum of 1M float32s (its partials per thread, then per group)
    stays within 1e-6 of the float64 sum."""
    if not probe(device)[0]:
        pytest.skip(f"not graded here: no {device}")
    x = RNG.random((256, 4096), dtype=np.float32)
    got = Tensor(x, device=device).sum(1).numpy()
    exact = x.astype(np.float64).sum(1)
    np.testing.assert_allclose(got, exact, rtol=1e-6)


def test_search_tries_work_groups_on_a_gpu_device_only() -> None:
    """actions() offers LOCAL and GROUP for a device of work-groups; they apply, and once the
    kernel has one, no UPCAST or UNROLL is offered (and the other way round)."""
    from tinyfw.codegen.search import actions
    k = kernel_of(Tensor(np.ones((16, 1024), np.float32)).sum(1))
    offered = actions(k, workgroups=True)
    assert {o.op for o in offered} == {U, R, L, G}
    assert not {L, G} & {o.op for o in actions(k)}
    grouped = apply_opt(k, Opt(G, 1, 64))
    assert {o.op for o in actions(grouped, workgroups=True)} <= {L, G}
    assert {o.op for o in actions(apply_opt(k, Opt(R, 1, 4)), workgroups=True)} <= {U, R}


@pytest.mark.parametrize("device", ["CL", "CUDAEMU"])
def test_beam_on_a_gpu_device_keeps_a_winner_that_computes_the_same(
        device: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """BEAM=1 on a GPU device (its candidates LOCAL and GROUP too, each built and timed on it):
    the row sums are numpy's, and the winner is kept in beam.json."""
    if not probe(device)[0]:
        pytest.skip(f"not graded here: no {device}")
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    monkeypatch.setenv("BEAM", "1")
    monkeypatch.setenv("BEAM_BUDGET", "2")
    x = RNG.random((16, 1024), dtype=np.float32)
    got = Tensor(x, device=device).sum(1).numpy()
    np.testing.assert_allclose(got, x.astype(np.float64).sum(1), rtol=1e-5)  # (any winner)
    saved = json.loads((tmp_path / "beam.json").read_text())
    assert len(saved) == 1


def test_webgpu_refuses_a_grid_of_work_groups_it_cannot_dispatch() -> None:
    """WebGPU dispatches at most 65535 work-groups along a dimension, and a kernel with a
    barrier must get exactly its groups: 65537 of them (a prime) are no grid of that shape, so
    rendering says so instead of dispatching more groups than the kernel has."""
    if not probe("WEBGPU")[0]:
        pytest.skip("not graded here: no WEBGPU")
    from tinyfw.renderer.wgsl import workgroup_dispatch
    assert workgroup_dispatch(65535) == (65535, 1)
    assert workgroup_dispatch(2 * 65535) == (65535, 2)
    with pytest.raises(NotSupportedError, match="65537 work-groups are not a grid"):
        workgroup_dispatch(65537)
    out = Tensor(np.ones(65537 * 2, np.float32), device="WEBGPU") + 1
    with pytest.raises(NotSupportedError, match="65537 work-groups"):
        run_source(out, (Opt(L, 0, 2),))
