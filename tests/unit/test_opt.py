"""Kernel optimizations (chapter 11): every optimized kernel computes what the plain one does.

UPCAST and THREAD only reorder which output is computed when: their results are the same bits.
UNROLL adds a reduce's values in several partial sums, and PANEL in one partial sum per panel,
so a float sum may round differently: within the float64 error bound of the sum (and exact for
ints and maxes). On a processor with fused multiply-adds an optimized float32 sum of products
rounds each product once less (tinyfw/codegen/fuse.py): within that bound too."""
from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from tinyfw import Tensor, dtypes
from tinyfw.dtype import VectorDType
from tinyfw.codegen.heuristic import hand_coded_optimizations
from tinyfw.codegen.kernel import AxisKind, Kernel
from tinyfw.codegen.lower_opts import lower_optimized, vector_axis
from tinyfw.codegen.opt import KernelOptError, Opt, OptOps, apply_opt, apply_opts
from tinyfw.codegen.search import actions, beam_search
from tinyfw.device import Device
from tinyfw.probe import probe
from tinyfw.engine import beam
from tinyfw.engine import program as engine_program
from tinyfw.engine.program import get_program
from tinyfw.engine.caches import forget_built
from tinyfw.helpers import prod
from tinyfw.renderer.cstyle import CPU_C
from tinyfw.runtime.ops_numpy import NumpyRenderer

RNG = np.random.default_rng(0)


def run_with(opts: tuple[Opt, ...] | None, build: Callable[[], Tensor]) -> np.ndarray:
    """The value of build() with its (last) kernel optimized by opts (None: the heuristics';
    () none at all)."""
    original = engine_program.optimize

    def optimize(b: engine_program.Build) -> None:
        assert b.kernel is not None
        if opts is None:
            original(b)
        elif b.item.ast is target:
            b.kernel, b.opts = apply_opts(b.kernel, opts), opts

    out = build()
    target = out.schedule()[-1].ast
    passes = engine_program.PASSES
    engine_program.PASSES = tuple(optimize if p is original else p for p in passes)
    forget_built()  # (a program's key holds no optimizations: a swapped pass is said so)
    try:
        return out.numpy()
    finally:
        engine_program.PASSES = passes
        forget_built()


def kernel_of(t: Tensor) -> Kernel:
    return Kernel.from_ast(t.schedule()[-1].ast, "k")


# (name, the tensor to compute, opts to try on its kernel)
U, R, T, S, P = OptOps.UPCAST, OptOps.UNROLL, OptOps.THREAD, OptOps.SWAP, OptOps.PANEL
A, B = RNG.normal(size=(12, 20)).astype(np.float32), RNG.normal(size=(20, 8)).astype(np.float32)
CASES: list[tuple[str, Callable[[], Tensor], list[tuple[Opt, ...]]]] = [
    ("matmul", lambda: Tensor(A) @ Tensor(B), [
        (Opt(U, 2, 4),), (Opt(U, 0, 4),), (Opt(U, 2, 8), Opt(U, 0, 3)), (Opt(R, 1, 4),),
        (Opt(R, 1, 20),), (Opt(U, 2, 4), Opt(U, 0, 2), Opt(R, 2, 5), Opt(T, 0, 6)),
        (Opt(T, 0, 12),), (Opt(T, 2, 2),), (Opt(S, 0, 2),), (Opt(U, 2, 4), Opt(S, 0, 2)),
        (Opt(U, 2, 4), Opt(U, 0, 2), Opt(S, 0, 3), Opt(T, 0, 2)), (Opt(P, 1, 5),),
        (Opt(U, 2, 4), Opt(U, 0, 2), Opt(P, 2, 4), Opt(R, 3, 2), Opt(T, 0, 6))]),
    ("row max, odd size", lambda: Tensor(A).max(1), [(Opt(R, 1, 5),), (Opt(U, 0, 3),),
                                                       (Opt(T, 0, 4), Opt(R, 2, 2))]),
    ("int sum", lambda: Tensor((A * 100).astype(np.int32)).sum(0, dtype=dtypes.int32),
     [(Opt(R, 0, 4),), (Opt(U, 1, 4), Opt(R, 0, 3)), (Opt(P, 0, 3), Opt(T, 2, 4))]),
    ("elementwise", lambda: (Tensor(A).exp() * 2 + Tensor(A).sum(1).reshape(12, 1)),
     [(Opt(U, 1, 4),), (Opt(T, 0, 3), Opt(U, 2, 5))]),
    ("transposed copy", lambda: Tensor(A).T.contiguous() + 1, [(Opt(S, 0, 1),),
                                                               (Opt(U, 1, 4), Opt(S, 0, 1))]),
    ("padded", lambda: Tensor(A).pad(((1, 2), (0, 3))).sum(1), [(Opt(R, 1, 23),),
                                                                (Opt(U, 0, 3),)]),
    ("float16 sum", lambda: Tensor(A.astype(np.float16)).sum(1), [(Opt(R, 1, 4),)]),
    ("bfloat16 matmul", lambda: Tensor(A).bfloat16() @ Tensor(B).bfloat16(),
     [(Opt(U, 2, 4), Opt(R, 1, 2))]),
]


@pytest.mark.parametrize("name, build, tries", CASES, ids=[c[0] for c in CASES])
def test_optimized_kernels_compute_the_same(name: str, build: Callable[[], Tensor],
                                            tries: list[tuple[Opt, ...]]) -> None:
    plain = run_with((), build)
    for opts in tries:
        got = run_with(opts, build)
        assert got.dtype == plain.dtype and got.shape == plain.shape, opts
        reordered = any(o.op in (OptOps.UNROLL, OptOps.PANEL) for o in opts) or \
            "matmul" in name  # (a sum of products: fused multiply-adds where the CPU has them)
        if reordered and plain.dtype.kind == "f" or plain.dtype == dtypes.bfloat16.np:
            np.testing.assert_allclose(got.astype(np.float64), plain.astype(np.float64),
                                       rtol=1e-2 if plain.dtype.itemsize == 2 else 1e-5,
                                       atol=1e-5, err_msg=f"{name} with {opts}")
        else:
            np.testing.assert_array_equal(got, plain, err_msg=f"{name} with {opts}")


def test_opts_that_do_not_apply_are_refused() -> None:
    """An amount that does not divide, an UPCAST of a reduce loop, an UNROLL of an output loop,
    a loop that is not there: KernelOptError, which the search skips."""
    k = kernel_of(Tensor(A) @ Tensor(B))  # loops: 12 (output), 20 (reduce), 8 (output)
    for bad in (Opt(U, 0, 5), Opt(U, 1, 4), Opt(R, 0, 2), Opt(R, 1, 3), Opt(T, 1, 2),
                Opt(U, 3, 2), Opt(U, 0, 1), Opt(S, 0, 1), Opt(S, 2, 0), Opt(S, 0, 3),
                Opt(P, 0, 2), Opt(P, 1, 3)):
        with pytest.raises(KernelOptError):
            apply_opt(k, bad)


def test_panels_only_where_the_output_can_hold_partial_sums() -> None:
    """PANEL keeps a sum's partial results in the output between panels: refused for a max,
    for a sum followed by another op (a relu, a cast), for a float16 sum (accumulated in
    float32), and a second time; a panels' loop is the kernel's outermost."""
    a = Tensor(A)
    for t in (a.max(1), (Tensor(A) @ Tensor(B)).relu(), a.half().sum(1), a.sum(1).half()):
        with pytest.raises(KernelOptError):
            apply_opt(kernel_of(t), Opt(P, 1, 4))
    k = apply_opt(kernel_of(Tensor(A) @ Tensor(B)), Opt(P, 1, 5))
    with pytest.raises(KernelOptError):
        apply_opt(k, Opt(P, 2, 2))
    prog = lower_optimized(apply_opt(k, Opt(T, 0, 12)))
    loops = [s.arg[0] for s in prog.steps if s.op.name == "LOOP"]
    assert loops == ["panel1", "core0", "gidx3", "ridx2"], loops


def test_upcast_shares_loads_and_unroll_keeps_partials() -> None:
    """A 4 x 8 tile of a matmul reads 4 + 8 values per reduce step, not 2 x 32, into 32
    accumulators; an UNROLL by 4 keeps 4 partial sums per output, added after the loop."""
    k = apply_opts(kernel_of(Tensor(A) @ Tensor(B)), (Opt(U, 2, 8), Opt(U, 0, 4)))
    prog = lower_optimized(k)
    loads = [s for s in prog.steps if s.op.name == "LOAD"]
    accs = [s for s in prog.steps if s.op.name == "ACC"]
    assert len(loads) == 12 and len(accs) == 32
    k = apply_opts(kernel_of(Tensor(A) @ Tensor(B)), (Opt(R, 1, 4),))
    prog = lower_optimized(k)
    assert sum(s.op.name == "ACC" for s in prog.steps) == 4
    assert sum(s.op.name == "UPDATE" for s in prog.steps) == 4


def test_heuristics_tile_a_matmul_and_thread_it() -> None:
    """On a 2-core CPU with 8-lane SIMD, a 256 x 256 matmul gets a tile of 4 rows by 2 vectors
    of 8 columns, its columns' vector lowered as one (vector_axis), and its outer loop is
    shared out to the cores; on NUMPY, or for a tiny matmul, nothing."""
    n = 256
    k = kernel_of(Tensor(np.ones((n, n), np.float32)) @ Tensor(np.ones((n, n), np.float32)))
    opts = hand_coded_optimizations(k, CPU_C, cores=2, lanes=8)
    assert opts[:3] == (Opt(U, 2, 8), Opt(U, 0, 4), Opt(U, 3, 2)), opts
    tiled = apply_opts(k, opts)
    assert tiled.axes[0].kind is AxisKind.THREAD
    assert [a.size for a in tiled.axes if a.kind is AxisKind.UPCAST] == [4, 2, 8]
    vector = vector_axis(tiled, max_lanes=8)
    assert vector is not None and tiled.axes[vector].size == 8
    prog = lower_optimized(tiled, vector)
    assert sum(s.op.name == "ACC" for s in prog.steps) == 8  # 4 x 2 vectors of 8
    assert hand_coded_optimizations(k, NumpyRenderer(), cores=2) == ()
    small = kernel_of(Tensor.ones(4, 4) @ Tensor.ones(4, 4))
    assert hand_coded_optimizations(small, CPU_C, cores=2) == ()


def test_a_costly_body_is_threaded_from_fewer_iterations() -> None:
    """THREAD comes past THREAD_WORK iterations of a cheap body (heuristic.work): an add over
    32 x 12 x 12 x 12 values stays on one core; an exp over as many (some 40 ops each:
    softmax's exponentials in a batch of attention) is shared out, and its sum with masked
    keys is computed in vectors of partial sums (an int32 mask compared with a constant)."""
    values = Tensor(np.ones((32, 12, 12, 12), np.float32))
    cheap = hand_coded_optimizations(kernel_of(values + 1), CPU_C, cores=2, lanes=16)
    assert not any(opt.op is T for opt in cheap), cheap
    costly = hand_coded_optimizations(kernel_of(values.exp()), CPU_C, cores=2, lanes=16)
    assert any(opt.op is T for opt in costly), costly
    keep = Tensor(np.ones((32, 1, 1, 12), np.int32)) != 0
    summed = kernel_of((keep.where(values, -np.inf) - 1).exp().sum(-1))
    opts = hand_coded_optimizations(summed, CPU_C, cores=2, lanes=16)
    assert vector_axis(apply_opts(summed, opts), max_lanes=16) is not None, opts


def test_a_big_matmul_gets_the_big_tile() -> None:
    """On an 8-lane CPU a matmul of 512 x 512 outputs and more computes 4 rows by 2 vectors of
    8 columns per pass, its reduce in panels of 64, with the values of numpy's; a reduce that
    panels of 64 do not divide keeps the tile without panels; below 1024 x 1024 outputs
    16-lane SIMD gets register_tile's (8 rows by 2 vectors here), and on 8 lanes columns that
    2 vectors do not divide get one vector."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((512, 256), np.float32), rng.standard_normal((256, 544),
                                                                            np.float32)
    k = kernel_of(Tensor(a) @ Tensor(b))
    opts = hand_coded_optimizations(k, CPU_C, cores=2, lanes=8)
    assert opts == (Opt(U, 2, 8), Opt(U, 0, 4), Opt(U, 3, 2), Opt(P, 2, 64), Opt(T, 0, 128)), \
        opts
    assert [a.size for a in apply_opts(k, opts).axes if a.kind is AxisKind.UPCAST] == [4, 2, 8]
    got = run_with(opts, lambda: Tensor(a) @ Tensor(b))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    shallow = kernel_of(Tensor(a[:, :96]) @ Tensor(b[:96]))  # 96: not panels of 64
    assert hand_coded_optimizations(shallow, CPU_C, cores=2, lanes=8) == (
        Opt(U, 2, 8), Opt(U, 0, 4), Opt(U, 3, 2), Opt(T, 0, 128))
    assert hand_coded_optimizations(k, CPU_C, cores=2, lanes=16)[:3] == (
        Opt(U, 2, 16), Opt(U, 2, 2), Opt(U, 0, 8))
    odd = kernel_of(Tensor(a[:, :90]) @ Tensor(b[:90, :520]))  # 520 columns: not 16 a pass
    assert hand_coded_optimizations(odd, CPU_C, cores=2, lanes=8) == (Opt(U, 2, 8),
                                                                      Opt(U, 0, 4),
                                                                      Opt(T, 0, 128))


def test_a_matmul_on_16_lanes_gets_a_register_tile() -> None:
    """On 16 lanes (AVX-512's 32 registers) a matmul the big tile leaves computes up to 20
    vectors of accumulators a pass: 100 rows as 5 by 4 vectors, its column tiles' loop outside
    the row tiles' where the second matrix is the bigger (SWAP), not where it is the smaller;
    a batch-1 product 8 vectors of one row, threaded from THREAD_WORK iterations on; a
    leading batch axis of 1 changes nothing (a prompt's (1, T, K) rows). Each gives numpy's
    values, a bias added too."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((100, 64), np.float32), rng.standard_normal((64, 512),
                                                                           np.float32)
    wide = rng.standard_normal((64, 2048), np.float32)
    bias = rng.standard_normal(2048, np.float32)
    cases = [(a, b, (Opt(U, 2, 16), Opt(U, 2, 4), Opt(U, 0, 5), Opt(S, 0, 3), Opt(T, 0, 8))),
             (a, b[:, :64], (Opt(U, 2, 16), Opt(U, 2, 4), Opt(U, 0, 5), Opt(T, 0, 20))),
             (a[:1], wide, (Opt(U, 2, 16), Opt(U, 2, 8), Opt(T, 2, 16))),
             (a[None], b, (Opt(U, 3, 16), Opt(U, 3, 4), Opt(U, 1, 5), Opt(S, 1, 4),
                           Opt(T, 1, 8)))]  # (a batch of 1: the same tile)
    for x, w, expected in cases:
        opts = hand_coded_optimizations(kernel_of(Tensor(x) @ Tensor(w)), CPU_C, cores=2,
                                        lanes=16)
        assert opts == expected, (x.shape, w.shape, opts)
        got = run_with(opts, lambda x=x, w=w: Tensor(x) @ Tensor(w) + Tensor(bias[:w.shape[1]]))
        want = x.astype(np.float64) @ w + bias[:w.shape[1]]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_big_batch_1_product_reads_its_matrix_in_panels() -> None:
    """A batch-1 product whose float matrix has ROW_PANEL_FROM elements or more reads it in
    panels of 8 rows (ROW_PANEL: each pass streams 8 rows whole, not 512 bytes of every row),
    its partial sums kept in the output; one with an op after the sum (which could not keep
    partial sums in its output) does not. numpy's values."""
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((1, 256), np.float32), rng.standard_normal((256, 8192), np.float32)
    opts = hand_coded_optimizations(kernel_of(Tensor(x) @ Tensor(w)), CPU_C, cores=2, lanes=16)
    assert opts == (Opt(U, 2, 16), Opt(U, 2, 8), Opt(P, 1, 8), Opt(T, 3, 64)), opts
    got = run_with(opts, lambda: Tensor(x) @ Tensor(w))
    np.testing.assert_allclose(got, x.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)
    relu = hand_coded_optimizations(kernel_of((Tensor(x) @ Tensor(w)).relu()), CPU_C, cores=2,
                                    lanes=16)
    assert relu and not any(o.op is P for o in relu), relu


def test_a_big_matmul_on_16_lanes_gets_the_big_tile_in_panels() -> None:
    """On a 16-lane (AVX-512) CPU a matmul of 1024 x 1024 outputs and more computes 8 rows by
    two vectors of 16 columns per pass, its reduce in panels of 128, with the values of
    numpy's; a reduce of one panel or less keeps the tile, without panels."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((1024, 256), np.float32), rng.standard_normal((256, 1024),
                                                                             np.float32)
    k = kernel_of(Tensor(a) @ Tensor(b))
    opts = hand_coded_optimizations(k, CPU_C, cores=2, lanes=16)
    assert opts == (Opt(U, 2, 16), Opt(U, 0, 8), Opt(U, 3, 2), Opt(P, 2, 128),
                    Opt(T, 0, 128)), opts
    got = run_with(opts, lambda: Tensor(a) @ Tensor(b))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    for depth in (22, 128):
        odd = kernel_of(Tensor(a[:, :depth]) @ Tensor(b[:depth]))
        assert hand_coded_optimizations(odd, CPU_C, cores=2, lanes=16) == (
            Opt(U, 2, 16), Opt(U, 0, 8), Opt(U, 3, 2), Opt(T, 0, 128)), depth


def test_a_dot_product_matmul_keeps_partial_sums_in_vectors() -> None:
    """`x @ w.T` (a Linear layer's forward) reads both matrices along the reduce: its tile is
    8 rows of vector partial sums (the reduce unrolled by the lanes, added up after the loop),
    not vectors of outputs, whose loads would be 8 strided reads each; the values are numpy's,
    also for a width of 10 and where the rows or the reduce do not divide."""
    rng = np.random.default_rng(2)
    for m, k, n in ((128, 784, 128), (128, 128, 10), (12, 40, 16), (24, 20, 9)):
        x, w = rng.standard_normal((m, k), np.float32), rng.standard_normal((n, k), np.float32)
        kernel = kernel_of(Tensor(x) @ Tensor(w).T)
        opts = hand_coded_optimizations(kernel, CPU_C, cores=1, lanes=8)
        if m % 8 == 0 and k % 8 == 0 and k > 8:
            assert opts == (Opt(R, 1, 8), Opt(U, 0, 8)), (m, k, n, opts)
            tiled = apply_opts(kernel, opts)
            vector = vector_axis(tiled, max_lanes=8)
            assert vector is not None and tiled.axes[vector].kind is AxisKind.UNROLL
            prog = lower_optimized(tiled, vector)
            accs = [s for s in prog.steps if s.op.name == "ACC"]
            assert len(accs) == 8 and all(isinstance(s.dtype, VectorDType) for s in accs)
        got = run_with(None, lambda x=x, w=w: Tensor(x) @ Tensor(w).T)
        np.testing.assert_allclose(got, x.astype(np.float64) @ w.T.astype(np.float64),
                                   rtol=1e-4, atol=1e-4, err_msg=f"{m}x{k}x{n} with {opts}")


@pytest.mark.parametrize("lanes", [8, 16])
def test_a_repeated_heads_keys_are_read_as_vectors(lanes: int) -> None:
    """Grouped-query attention's scores: q times each key of a key head repeated 3 times
    (repeat_interleave, a reshape of an expand: two views). Along the reduce the keys' 64
    numbers are consecutive (their index simplifies to the reduce's variable plus the rest),
    so the reduce becomes vector lanes of partial sums, not 16 scalar outputs; the values are
    numpy's."""
    q = RNG.standard_normal((1, 9, 1, 64)).astype(np.float32)
    k = RNG.standard_normal((1, 3, 256, 64)).astype(np.float32)

    def scores() -> Tensor:
        return Tensor(q) @ Tensor(k).repeat_interleave(3, dim=1).transpose(-2, -1)
    kernel = kernel_of(scores())
    opts = hand_coded_optimizations(kernel, CPU_C, cores=1, lanes=lanes)
    assert opts[0] == Opt(R, 3, lanes), opts
    tiled = apply_opts(kernel, opts)
    vector = vector_axis(tiled, max_lanes=lanes)
    assert vector is not None and tiled.axes[vector].kind is AxisKind.UNROLL
    got = run_with(opts, scores)
    want = q.astype(np.float64) @ np.repeat(k, 3, axis=1).transpose(0, 1, 3, 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_an_elementwise_kernel_reading_a_transposed_matrix_is_tiled() -> None:
    """An elementwise kernel that reads a matrix transposed (Adam's update of a weight whose
    gradient a matmul stored the other way round) has the loop along which that read is
    contiguous upcast by the lanes; the values are the same bits, odd sizes left alone."""
    rng = np.random.default_rng(3)
    m, g = rng.standard_normal((128, 784), np.float32), rng.standard_normal((784, 128), np.float32)
    build = lambda: 0.9 * Tensor(m) + 0.1 * Tensor(g).T  # noqa: E731
    opts = hand_coded_optimizations(kernel_of(build()), CPU_C, cores=1, lanes=8)
    assert opts == (Opt(U, 0, 8),), opts
    np.testing.assert_array_equal(run_with(None, build), run_with((), build))
    odd = kernel_of(0.9 * Tensor(m[:127]) + 0.1 * Tensor(g[:, :127]).T)
    assert hand_coded_optimizations(odd, CPU_C, cores=1, lanes=8) == ()


def test_a_convolution_upcasts_its_channels() -> None:
    """A convolution has no vector tile (3 x 3 windows, 11 x 11 images): its output channels
    are upcast whole, so each load of the image serves all 16; the weight gradient's tile stays
    scalar, so it holds at most 64 accumulators (16 channels x 3 taps, not 16 x 8); the input
    gradient (a convolution of its own, conv_gradient.py) reads 8 channels as a vector, so its
    tile holds 13 columns of them (104 floats in 13 registers). Values as the plain kernels',
    forward and backward."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 8, 13, 13), np.float32)
    w = rng.standard_normal((16, 8, 3, 3), np.float32)
    forward = kernel_of(Tensor(x).conv2d(Tensor(w)))
    opts = hand_coded_optimizations(forward, CPU_C, cores=1, lanes=8)
    channels = next(i for i, a in enumerate(forward.axes) if a.size == 16)
    assert opts[0] == Opt(U, channels, 16), opts

    def weight_grad() -> Tensor:
        wt = Tensor(w, requires_grad=True)
        Tensor(x).conv2d(wt).relu().sum().backward()
        assert wt.grad is not None
        return wt.grad

    grad = kernel_of(weight_grad())
    upcast = [a.size for a in apply_opts(grad, hand_coded_optimizations(grad, CPU_C, lanes=8))
              .axes if a.kind is AxisKind.UPCAST]
    assert sorted(upcast) == [3, 16], upcast

    def input_grad() -> Tensor:
        xt = Tensor(x, requires_grad=True)
        xt.conv2d(Tensor(w)).relu().sum().backward()
        assert xt.grad is not None
        return xt.grad

    grad = kernel_of(input_grad())
    tiled = apply_opts(grad, hand_coded_optimizations(grad, CPU_C, lanes=8))
    assert sorted(a.size for a in tiled.axes if a.kind is AxisKind.UPCAST) == [8, 13]
    assert vector_axis(tiled, 8) is not None
    for build in (lambda: Tensor(x).conv2d(Tensor(w)), weight_grad, input_grad):
        np.testing.assert_allclose(run_with(None, build), run_with((), build), rtol=1e-4,
                                   atol=1e-4)


GPU_CASES: list[tuple[str, Callable[[str], Tensor]]] = [
    ("matmul 64", lambda d: Tensor(A[:8].repeat(8, 0)[:64], device=d) @
     Tensor(B.repeat(8, 1), device=d)),
    ("matmul odd", lambda d: Tensor(A, device=d)[:, :7] @ Tensor(B, device=d)[:7, :5]),
    ("int matmul", lambda d: Tensor((A[:8] * 10).astype(np.int32), device=d) @
     Tensor((B * 10).astype(np.int32), device=d)),
    ("row sum", lambda d: Tensor(A, device=d).sum(1)),
    ("where sum", lambda d: (Tensor(A, device=d) < 0.5).where(Tensor(A, device=d), -0.0).sum(1)),
    ("padded", lambda d: Tensor(A, device=d).pad(((1, 2), (0, 3))).sum(1)),
    ("row max", lambda d: Tensor(A, device=d).max(1)),
]


@pytest.mark.parametrize("device", ["CL", "WEBGPU", "CUDAEMU"])
def test_gpu_heuristics_compute_the_same(device: str) -> None:
    """On a GPU device each thread computes a 4 x 4 tile of a matmul (on CL, the tile's rows
    as float4 vectors) and a reduce is unrolled into 4 partial sums: every kernel gives the
    values of the plain one (a float sum within rounding), odd sizes included."""
    if not probe(device)[0]:
        pytest.skip(f"not graded here: no {device}")
    for name, build in GPU_CASES:
        plain = run_with((), functools.partial(build, device))
        got = run_with(None, functools.partial(build, device))
        assert got.dtype == plain.dtype and got.shape == plain.shape, name
        np.testing.assert_allclose(got, plain, rtol=1e-6, atol=1e-6, err_msg=name)
    a = Tensor(np.ones((64, 64), np.float32), device=device)
    k = kernel_of(a @ a)
    assert hand_coded_optimizations(k, Device[device].renderer) == (Opt(U, 2, 4), Opt(U, 0, 4))
    assert hand_coded_optimizations(kernel_of(a.sum(1)), Device[device].renderer) == (Opt(R, 1, 4),)
    source = get_program((a @ a).schedule()[-1]).source or ""
    if device == "CL":  # a row of 4 outputs is one float4: 4 accumulators, vector loads/stores
        assert source.count("float4 acc") == 4 and "vload4" in source and "vstore4" in source
    else:
        assert source.count(" acc") >= 16


def test_vectors_compute_what_scalars_do() -> None:
    """A matmul, a row sum and elementwise kernels with an UPCAST or UNROLL lowered as vectors
    give the values of the kernel without (relu's and where's masks with nan, inf and -0.0
    included; a maximum, a truncation and exp's polynomial, whose 2**k goes through int32
    bits, too); a kernel vectors cannot express (a column walk) has no vector axis."""
    a, b = RNG.random((32, 24), np.float32), RNG.random((24, 16), np.float32)
    got = run_with((Opt(U, 2, 8), Opt(U, 0, 4)), lambda: Tensor(a) @ Tensor(b))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5)
    got = run_with((Opt(U, 1, 8),), lambda: Tensor(a) * 2 + Tensor(a))
    np.testing.assert_array_equal(got, a * 2 + a)
    k = apply_opts(kernel_of(Tensor(a) @ Tensor(b)), (Opt(U, 2, 8),))
    assert vector_axis(k) == 3 and vector_axis(k, max_lanes=4) is None
    assert any(isinstance(s.dtype, VectorDType) for s in lower_optimized(k, 3).steps)
    edges = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, -1.0, 1.0, 2.5] * 8, np.float32)
    rows = np.concatenate([edges, RNG.standard_normal(64).astype(np.float32)]).reshape(4, 32)
    for opts in [(Opt(U, 1, 8),), (Opt(R, 1, 8),), (Opt(R, 1, 8), Opt(R, 1, 2))]:
        for build in (lambda: Tensor(rows).relu() * 3,
                      lambda: Tensor(rows).where(Tensor(rows) != 1, -0.0) / 2,
                      lambda: (Tensor(rows) * 2 + 1).relu().sum(1),
                      lambda: Tensor(rows).max(1), lambda: (Tensor(rows) * 9.75).trunc(),
                      lambda: Tensor(rows).exp(), lambda: Tensor(rows).softmax(1)):
            try:
                got = run_with(opts, build)
            except KernelOptError:
                continue  # (an UPCAST of a reduce, an UNROLL of an elementwise kernel)
            plain = run_with((), build)
            if got.ndim == 1 or opts[0].op is R:  # a sum: partial sums round differently
                np.testing.assert_allclose(got, plain, rtol=1e-6)
                continue
            np.testing.assert_array_equal(got, plain)
            numbers = ~np.isnan(plain)  # (-0.0 kept; a nan's sign bit is not a value)
            assert np.array_equal(np.signbit(got[numbers]), np.signbit(plain[numbers])), opts
    for vectors in (lambda: Tensor(rows).max(1), lambda: Tensor(rows).exp()):
        k = kernel_of(vectors())
        last = len(k.axes) - 1
        opt = Opt(R if k.reduce is not None else U, last, 8)
        assert vector_axis(apply_opts(k, (opt,))) == last + 1  # (the split's inner part)
    k = kernel_of(Tensor(a).T + 1)
    assert vector_axis(apply_opts(k, (Opt(U, len(k.axes) - 1, 4),))) is None


def test_threaded_kernel_runs_on_every_core() -> None:
    """A threaded kernel's parts cover the output once: a big matmul and a big sum, as numpy."""
    a, b = RNG.random((300, 200), np.float32), RNG.random((200, 256), np.float32)
    got = run_with(None, lambda: Tensor(a) @ Tensor(b))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5)
    x = RNG.random((1024, 512), np.float32)
    np.testing.assert_allclose(run_with(None, lambda: Tensor(x).sum(1)), x.sum(1, np.float64),
                               rtol=1e-5)


@pytest.mark.parametrize("opts", list(itertools.product([1, 2, 4], [1, 5])))
def test_sources_are_built_once(opts: tuple[int, int]) -> None:
    """The same kernel with the same optimizations is compiled once."""
    up, unroll = opts
    chosen = tuple(o for o in (Opt(U, 2, up) if up > 1 else None,
                               Opt(R, 1, unroll) if unroll > 1 else None) if o is not None)
    first = run_with(chosen, lambda: Tensor(A) @ Tensor(B))
    built = len(engine_program.cache)
    again = run_with(chosen, lambda: Tensor(A) @ Tensor(B))
    assert len(engine_program.cache) == built
    np.testing.assert_array_equal(first, again)


def test_the_program_of_an_optimized_kernel_is_found_again() -> None:
    t = Tensor(A) @ Tensor(B)
    item = t.schedule()[-1]
    assert get_program(item) is get_program(item)


def test_search_keeps_the_fastest_and_stops_when_nothing_is_faster() -> None:
    """beam_search with made-up timings (fewer loops of a kind = faster here): each round times
    every extension of the beam once, it keeps the fastest, and stops when a round finds
    nothing faster; a budget of 0 times only the kernel as it is."""
    k = kernel_of(Tensor(A) @ Tensor(B))
    timed: list[tuple[Opt, ...]] = []

    def timings(candidates: Sequence[tuple[Opt, ...]]) -> list[float]:
        timed.extend(candidates)
        return [10.0 - 3 * sum(o.op is U for o in c) - (c[-1].amount / 100 if c else 0)
                if len(c) <= 2 else 10.0 for c in candidates]
    best = beam_search(k, timings, width=2, cores=1)
    assert len(best) == 2 and all(o.op is U for o in best)
    assert () in timed and all(len(c) <= 3 for c in timed)
    timed.clear()
    clock = iter([0.0, 5.0]).__next__
    assert beam_search(k, timings, width=2, budget_s=1.0, clock=clock) == ()
    assert timed == [()]


def test_search_actions_apply() -> None:
    """Every action the search tries applies to the kernel; THREAD only with several cores."""
    k = kernel_of(Tensor(A) @ Tensor(B))
    assert all(apply_opt(k, opt) is not None for opt in actions(k, cores=2))
    assert any(o.op is T for o in actions(k, cores=2))
    assert not any(o.op is T for o in actions(k, cores=1))


def test_beam_finds_a_winner_and_keeps_it_on_disk(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """BEAM=1 on a small matmul: the result is numpy's, the winner is written to beam.json,
    and a second search of the same kernel reads it instead of timing anything."""
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    monkeypatch.setenv("BEAM", "1")
    monkeypatch.setenv("BEAM_BUDGET", "5")
    a, b = RNG.random((64, 48), np.float32), RNG.random((48, 32), np.float32)
    np.testing.assert_allclose((Tensor(a) @ Tensor(b)).numpy(), a.astype(np.float64) @ b,
                               rtol=1e-5)
    saved = json.loads((tmp_path / "beam.json").read_text())
    assert len(saved) == 1
    item = (Tensor(a) @ Tensor(b)).schedule()[-1]
    kernel = Kernel.from_ast(item.ast, item.name)
    monkeypatch.setattr(beam, "beam_search", lambda *args, **kwargs: pytest.fail("searched"))
    found = beam.searched_opts(kernel, item, Device[Device.DEFAULT], lambda *a: None)
    assert [[o.op.name, o.axis, o.amount] for o in found] == next(iter(saved.values()))


def test_a_sum_of_products_is_fused_where_the_cpu_can() -> None:
    """An optimized float32 sum of products becomes fused multiply-adds (fuse.py): each
    accumulator's update is one fma, rendered as the processor's instruction, scalar or
    vector; where the processor has it, the sum is rounded once per product: -1 + (1 + 2**-12)
    ** 2 gives 2**-11 + 2**-24 exactly (a multiply and an add give 2**-11)."""
    from tinyfw.codegen.fuse import MulAdd, fuse_multiply_adds
    from tinyfw.renderer.cstyle import CPU_C, ThreadedC

    kernel = apply_opts(kernel_of(Tensor(A) @ Tensor(B)), (Opt(U, 2, 8), Opt(U, 0, 2)))
    prog = lower_optimized(kernel, vector_axis(kernel, 8))
    fused = fuse_multiply_adds(prog, lambda dtype: True)
    updates = [s for s in fused.steps if s.op.name == "UPDATE"]
    assert len(updates) == 2 and all(isinstance(fused.steps[s.src[1]].arg, MulAdd)
                                     for s in updates)
    assert fuse_multiply_adds(prog, lambda dtype: False).steps == prog.steps
    language = ThreadedC()
    language.fma_lanes = frozenset({1, 8})
    assert language.render(fused).count("__builtin_ia32_vfmaddps256(") == 2

    x = 1 + 2.0 ** -12
    a = np.array([[1, x], [1, x]], np.float32)
    b = np.array([[-1] * 8, [x] * 8], np.float32)
    got = run_with((Opt(U, 2, 8),), lambda: Tensor(a) @ Tensor(b))
    if 8 in CPU_C.fma_lanes and Device.DEFAULT == "CPU":
        assert (got == np.float32(2.0 ** -11 + 2.0 ** -24)).all(), got
    else:  # (rounded twice: what this processor or device does without the instruction)
        np.testing.assert_allclose(got, 2.0 ** -11, rtol=1e-6)


def _q4_1_blocks(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """Q4_1 blocks (n, k / 32, 20) of random nibbles with float16 scales and minimums."""
    raw = rng.integers(0, 256, (n, k // 32, 20), dtype=np.uint8)
    scales = rng.uniform(0.001, 0.02, (n, k // 32, 2)).astype(np.float16)
    scales[..., 1] *= -1
    raw[..., 0:4] = scales.view(np.uint8).reshape(n, k // 32, 4)
    return raw


@pytest.mark.parametrize("lanes", [8, 16])
def test_quantized_weights_are_read_as_vectors_of_bytes(lanes: int) -> None:
    """A matmul of Q4_1 and Q8_0 weights (gguf.linear on the CPU: x times d * q + m) gets
    quantized_dot_tile: the bytes of a block loaded as one vector of uint8 and converted to
    float32 lane by lane, both halves of a byte (Q4_1) or of a block (Q8_0) unrolled, 4 rows
    a pass; the values are those of numpy's matmul of the dequantized weights, also where 4
    rows do not divide the output (no tile)."""
    from tinyfw.codegen.lower_opts import bytes_in_lanes
    from tinyfw.models.gguf import GGMLType, dequantize, linear

    if Device.DEFAULT != "CPU":
        pytest.skip("gguf.linear's split weights are the CPU device's")
    rng = np.random.default_rng(5)
    q4 = _q4_1_blocks(rng, 64, 96)
    q8 = rng.integers(0, 256, (64, 3, 34), dtype=np.uint8)
    q8[..., 0:2] = rng.uniform(0.001, 0.02, (64, 3, 1)).astype(np.float16).view(np.uint8)
    x = rng.standard_normal((1, 96)).astype(np.float32)
    for raw, kind in ((q4, GGMLType.Q4_1), (q8, GGMLType.Q8_0)):
        for rows in (64, 62):
            blocks = Tensor(raw[:rows])
            k = kernel_of(linear(Tensor(x), blocks, kind))
            opts = hand_coded_optimizations(k, CPU_C, cores=1, lanes=lanes)
            tiled = apply_opts(k, opts)
            ups = [a.size for a in tiled.axes if a.kind is AxisKind.UPCAST]
            if rows % 4:
                assert ups != [4], (kind, opts)
            else:
                width = min(lanes, 16)
                assert [a.size for a in tiled.axes if a.kind is AxisKind.UNROLL][-1] == width
                unroll = [a.size for a in tiled.axes if a.kind is AxisKind.UNROLL]
                assert ups == [4] and prod(unroll) == 32, (kind, opts)  # (a block: unrolled)
                vector = vector_axis(tiled, lanes, integers=True)
                assert vector is not None and bytes_in_lanes(tiled, vector)
                assert vector_axis(tiled, lanes) is None  # (not without vectors of bytes)
                prog = lower_optimized(tiled, vector)
                assert any(s.op.name == "LOAD" and s.dtype == VectorDType.of(dtypes.uint8, width)
                           for s in prog.steps), kind
            got = run_with(opts, lambda b=blocks, kind=kind: linear(Tensor(x), b, kind))
            w = dequantize(blocks, kind).numpy().reshape(rows, 96).astype(np.float64)
            np.testing.assert_allclose(got.reshape(-1), (x.astype(np.float64) @ w.T).reshape(-1),
                                       rtol=1e-5, atol=1e-5, err_msg=f"{kind.name} {rows}")


@pytest.mark.parametrize("rows, columns, blocks, tile", [(48, 96, 2, [8, 3, 16]),
                                                          (1, 96, 88, [2, 16])])
def test_turned_quantized_weights_are_outputs_in_lanes(rows: int, columns: int, blocks: int,
                                                       tile: list[int]) -> None:
    """Q4_1 weights held turned (gguf.split_blocks: the rows side by side) are multiplied by
    one kernel whose vectors are 16 outputs, each lane its own row's byte unpacked there
    (bytes_in_lanes along an UPCAST axis): a prompt's rows get register_tile's 8 rows by 3
    vectors (24 accumulators where weights are unpacked), a single row of few outputs but a
    long reduce its lone-row tile (few_outputs); numpy's values of the dequantized weights."""
    from tinyfw.codegen.lower_opts import bytes_in_lanes
    from tinyfw.models.gguf import GGMLType, dequantize, split_blocks, split_linear

    if Device.DEFAULT != "CPU":
        pytest.skip("gguf.split_linear's weights are the CPU device's")
    rng = np.random.default_rng(6)
    raw = _q4_1_blocks(rng, columns, blocks * 32)
    numbers, scales = (Tensor(a) for a in split_blocks(raw, GGMLType.Q4_1))
    x = rng.standard_normal((rows, blocks * 32)).astype(np.float32)
    k = kernel_of(split_linear(Tensor(x), numbers, scales, GGMLType.Q4_1))
    opts = hand_coded_optimizations(k, CPU_C, cores=2, lanes=16)
    tiled = apply_opts(k, opts)
    assert [a.size for a in tiled.axes if a.kind is AxisKind.UPCAST] == tile, opts
    vector = vector_axis(tiled, 16, integers=True)
    assert vector is not None and tiled.axes[vector].size == 16 and bytes_in_lanes(tiled, vector)
    assert vector_axis(tiled, 16) is None  # (not without vectors of bytes)
    got = run_with(opts, lambda: split_linear(Tensor(x), numbers, scales, GGMLType.Q4_1))
    w = dequantize(Tensor(raw), GGMLType.Q4_1).numpy().reshape(columns, -1).astype(np.float64)
    np.testing.assert_allclose(got, x.astype(np.float64) @ w.T, rtol=1e-4, atol=1e-4)


def test_bytes_in_lanes_only_what_lanes_compute_exactly() -> None:
    """Byte lanes take loads, masks, a division of uint8 by a positive constant, a choice by
    a condition the same for all lanes, and conversions to float32; not a signed division
    (floor, not C's truncation) nor a comparison of bytes (its mask would be bytes wide)."""
    from tinyfw.codegen.lower_opts import bytes_in_lanes

    raw = Tensor(np.arange(64 * 32, dtype=np.uint8).reshape(64, 32) % 251)
    x = Tensor(np.ones((1, 32), np.float32))
    fine = (x * ((raw & 15).cast(dtypes.float32) + (raw >> 4).cast(dtypes.float32))).sum(-1)
    signed = (x * (raw.bitcast(dtypes.int8) // 3).cast(dtypes.float32)).sum(-1)
    compared = (x * (raw < 9).cast(dtypes.float32)).sum(-1)
    for t, ok in ((fine, True), (signed, False), (compared, False)):
        k = apply_opt(kernel_of(t), Opt(R, len(kernel_of(t).axes) - 1, 16))
        assert bytes_in_lanes(k, len(k.axes) - 1) is ok, t
