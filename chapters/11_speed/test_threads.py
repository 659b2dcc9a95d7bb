"""Threads: your CPURuntime.run calls a threaded kernel once per core, each call with its core's
number and the number of cores, at once, and returns when all are done."""
from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from chapters.optimizing import optimized_with
from tinyfw import Tensor
from tinyfw.codegen.opt import Opt, OptOps
from tinyfw.engine.program import get_program

pytestmark = pytest.mark.task("11.threads")

RNG = np.random.default_rng(12)
U, T = OptOps.UPCAST, OptOps.THREAD
A = RNG.standard_normal((24, 16)).astype(np.float32)
B = RNG.standard_normal((16, 10)).astype(np.float32)


@pytest.fixture(autouse=True)
def tinyfw_lowering() -> Iterator[None]:
    """tinyfw's own lower_optimized (11.lower_upcast), whatever the state of yours."""
    with reference("11.lower_upcast"):
        yield


def calls_of(t: Tensor, opts: tuple[Opt, ...]) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """t's value with opts, and each call of its program: (thread, core, cores)."""
    seen: list[tuple[int, int, int]] = []
    with optimized_with(opts):
        runner = get_program(t.schedule()[-1]).runner
        assert runner.threaded, "the kernel should be threaded"
        call = runner.call

        def recorded(*args: Any) -> None:
            seen.append((threading.get_ident(), args[-2].value, args[-1].value))
            call(*args)
        runner.call = recorded
        try:
            value = t.numpy()
        finally:
            del runner.call
    return value, seen


@pytest.mark.parametrize("cores", [1, 2])
def test_every_core_runs_its_part(cores: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """With TINYFW_CORES=cores, the program is called once per core, numbered 0 to cores - 1,
    each told the number of cores, core 0 on the calling thread; the output is complete."""
    monkeypatch.setenv("TINYFW_CORES", str(cores))
    value, seen = calls_of(Tensor(A) @ Tensor(B), (Opt(T, 0, 24),))
    expect_close(value, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    expect_equal(sorted(core for _, core, _ in seen), list(range(cores)), what="cores called")
    expect_equal([n for _, _, n in seen], [cores] * cores, what="the number of cores passed")
    main = [thread for thread, core, _ in seen if core == 0]
    assert main == [threading.get_ident()], "core 0's part should run on the calling thread"
    if cores > 1:
        assert len({thread for thread, _, _ in seen}) == cores, "each part on its own thread"


def test_threads_with_a_tile() -> None:
    """THREAD after UPCASTs: the parts of a tiled matmul together are numpy's matmul."""
    value, seen = calls_of(Tensor(A) @ Tensor(B),
                           (Opt(U, 2, 5), Opt(U, 0, 4), Opt(T, 0, 6)))
    assert seen, "the threaded program was never called"
    expect_close(value, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)


def test_a_failing_part_raises() -> None:
    """An exception in another core's part is raised by run, not lost."""
    t = Tensor(A) @ Tensor(B)
    with optimized_with((Opt(T, 0, 24),)):
        runner = get_program(t.schedule()[-1]).runner
        call = runner.call

        def failing(*args: Any) -> None:
            if args[-2].value == 1:
                raise RuntimeError("part 1 failed")
            call(*args)
        runner.call = failing
        try:
            if int(os.getenv("TINYFW_CORES", "2")) < 2 or len(os.sched_getaffinity(0)) < 2:
                pytest.skip("not graded here: one core")
            with pytest.raises(RuntimeError, match="part 1 failed"):
                t.numpy()
        finally:
            del runner.call
