"""UPCAST and UNROLL written out: your lower_optimized computes what the plain kernel computes,
with one accumulator per output of a tile and per partial sum, and loads shared by the tile."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from chapters.optimizing import kernel_of, value_with
from tinyfw import Tensor, dtypes
from tinyfw.codegen.lower import LOps
from tinyfw.codegen.lower_opts import lower_optimized
from tinyfw.codegen.opt import Opt, OptOps, apply_opts
from tinyfw.dtype import VectorDType

pytestmark = pytest.mark.task("11.lower_upcast")

RNG = np.random.default_rng(11)
U, R = OptOps.UPCAST, OptOps.UNROLL
A = RNG.standard_normal((12, 20)).astype(np.float32)
B = RNG.standard_normal((20, 8)).astype(np.float32)


def count(opts: tuple[Opt, ...], t: Tensor, op: LOps, vector: int | None = None) -> int:
    """How many steps of kind op your program of t's kernel, optimized by opts, has."""
    program = lower_optimized(apply_opts(kernel_of(t), opts), vector)
    return sum(step.op is op for step in program.steps)


CASES: list[tuple[str, Callable[[], Tensor], tuple[Opt, ...]]] = [
    ("matmul, a tile of 4 x 4", lambda: Tensor(A) @ Tensor(B), (Opt(U, 2, 4), Opt(U, 0, 4))),
    ("matmul, 3 rows", lambda: Tensor(A) @ Tensor(B), (Opt(U, 0, 3),)),
    ("matmul, reduce unrolled by 5", lambda: Tensor(A) @ Tensor(B), (Opt(R, 1, 5),)),
    ("matmul, both", lambda: Tensor(A) @ Tensor(B), (Opt(U, 2, 2), Opt(R, 1, 4))),
    ("row max, unrolled", lambda: Tensor(A).max(1), (Opt(R, 1, 4),)),
    ("int sum, unrolled", lambda: Tensor((A * 50).astype(np.int32)).sum(0, dtype=dtypes.int32),
     (Opt(R, 0, 4),)),
    ("elementwise, upcast", lambda: Tensor(A).exp() * 2 - Tensor(A), (Opt(U, 1, 5),)),
    ("padded rows, summed", lambda: Tensor(A).pad(((1, 2), (0, 3))).sum(1), (Opt(U, 0, 3),)),
]


@pytest.mark.parametrize("name, build, opts", CASES, ids=[c[0] for c in CASES])
def test_optimized_kernels_compute_what_plain_ones_do(name: str, build: Callable[[], Tensor],
                                                      opts: tuple[Opt, ...]) -> None:
    """The same values as without optimizations: exactly, except a float sum in partial sums,
    which may round differently."""
    plain = value_with(None, build)
    got = value_with(opts, build)
    if any(o.op is R for o in opts) and plain.dtype.kind == "f":
        expect_close(got, plain, rtol=1e-5, atol=1e-5)
    else:
        expect_equal(got, plain, what=f"{name} with {opts}")


def test_a_tile_shares_its_loads() -> None:
    """A 4 x 8 tile of a matmul: 32 accumulators, 32 updates, and 4 + 8 loads per step of the
    reduce (each value of a row of A used by 8 outputs, each of B by 4)."""
    t = Tensor(A) @ Tensor(B)
    opts = (Opt(U, 2, 8), Opt(U, 0, 4))
    expect_equal(count(opts, t, LOps.ACC), 32, what="ACC steps")
    expect_equal(count(opts, t, LOps.UPDATE), 32, what="UPDATE steps")
    expect_equal(count(opts, t, LOps.LOAD), 12, what="LOAD steps")
    expect_equal(count(opts, t, LOps.STORE), 32, what="STORE steps")


def test_unroll_keeps_partial_sums() -> None:
    """An UNROLL by 4 of a row sum: 4 accumulators, 4 updates and 4 loads in the loop, added
    together after it, and one store per output."""
    t = Tensor(A).sum(1)
    opts = (Opt(R, 1, 4),)
    expect_equal(count(opts, t, LOps.ACC), 4, what="ACC steps")
    expect_equal(count(opts, t, LOps.UPDATE), 4, what="UPDATE steps")
    expect_equal(count(opts, t, LOps.LOAD), 4, what="LOAD steps")
    expect_equal(count(opts, t, LOps.STORE), 1, what="STORE steps")


def test_vectors_stand_for_an_axis() -> None:
    """With vector=its axis, an UPCAST of 8 columns is one vector accumulator per row of the
    tile, the loads of B one vector load each; the values are numpy's."""
    t = Tensor(A) @ Tensor(B)
    opts = (Opt(U, 2, 8), Opt(U, 0, 4))  # loops: 3 rows, 4 rows, 20 (reduce), 1, 8 columns
    program = lower_optimized(apply_opts(kernel_of(t), opts), 4)
    accs = [s for s in program.steps if s.op is LOps.ACC]
    expect_equal(len(accs), 4, what="ACC steps (vectors of 8)")
    assert all(isinstance(s.dtype, VectorDType) and s.dtype.count == 8 for s in accs)
    expect_close(value_with(opts, lambda: Tensor(A) @ Tensor(B)),
                 A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)


def test_a_vector_stored_across_goes_a_lane_at_a_time() -> None:
    """The same tile of a matmul asked for transposed (stored permuted, chapter 04): its 8
    columns are still one vector in registers, but a stride apart in memory, so each row of
    the tile is stored as 8 scalars (stored_lanes), each at its own index; numpy's values."""
    t = (Tensor(A) @ Tensor(B)).T
    opts = (Opt(U, 2, 8), Opt(U, 0, 4))
    program = lower_optimized(apply_opts(kernel_of(t), opts), 4)
    stores = [s for s in program.steps if s.op is LOps.STORE]
    expect_equal(len(stores), 32, what="STORE steps (8 lanes of 4 vectors)")
    assert not any(isinstance(s.dtype, VectorDType) for s in stores), "scalar stores"
    expect_close(value_with(opts, lambda: (Tensor(A) @ Tensor(B)).T),
                 (A.astype(np.float64) @ B).T, rtol=1e-5, atol=1e-5)


def test_a_kernel_without_optimizations_lowers_as_before() -> None:
    """No UPCAST or UNROLL: one accumulator, one update, one store, numpy's values."""
    t = Tensor(A).sum(1)
    expect_equal(count((), t, LOps.ACC), 1, what="ACC steps")
    expect_equal(count((), t, LOps.STORE), 1, what="STORE steps")
    got = value_with((Opt(U, 0, 12),), lambda: Tensor(A).sum(1))  # all 12 rows in one pass
    expect_close(got, A.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
