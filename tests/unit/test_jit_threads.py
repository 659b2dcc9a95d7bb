"""TinyJit and threads: a capture belongs to the thread that runs it. Another thread meanwhile
reads data, realizes its own tensors and runs its own TinyJit as if no capture were under way."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.jit.jit import TinyJit

TIMEOUT = 30  # seconds a thread may wait for the other before the test gives up


def run_threads(*targets: Callable[[], None]) -> list[BaseException]:
    """Run each target in a thread of its own; the exceptions they raised."""
    errors: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a thread hung"
    return errors


def arange(n: int, scale: float = 1.0) -> Tensor:
    """0..n-1 times scale, on the CPU."""
    return Tensor(np.arange(n, dtype=np.float32) * scale, device="CPU")


@pytest.mark.parametrize("b_jits", [False, True], ids=["reads", "jits"])
def test_another_thread_runs_freely_while_one_captures(b_jits: bool) -> None:
    """Thread A captures (its call 2) while thread B realizes unrelated tensors and calls .item()
    (or runs a TinyJit of its own): B sees no JitError, A's capture holds only A's kernels, and
    A's replays are right."""
    capturing, b_done = threading.Event(), threading.Event()
    calls = {"a": 0}
    results: dict[str, Any] = {}

    def f(x: Tensor) -> Tensor:
        calls["a"] += 1
        y = (x * 2 + 1).realize()
        if calls["a"] == 2:  # mid-capture: let B run, and wait for it
            capturing.set()
            assert b_done.wait(TIMEOUT), "thread B did not finish"
        return (y * y).sum()

    jit_a = TinyJit(f)

    def thread_a() -> None:
        results["a"] = [jit_a(arange(8, scale=s)).item() for s in (1.0, 2.0, 3.0, 4.0)]

    def thread_b() -> None:
        try:
            assert capturing.wait(TIMEOUT), "thread A never captured"
            z = (arange(5) * 7 - 3).realize()
            results["b_item"] = (z.sum()).item()
            results["b_list"] = z.tolist()
            if b_jits:
                jit_b = TinyJit(lambda t: (t + 100).sum())
                results["b_jit"] = [jit_b(arange(4, scale=s)).item() for s in (1.0, 2.0, 3.0)]
        finally:
            b_done.set()

    errors = run_threads(thread_a, thread_b)
    assert errors == [], f"a thread raised: {errors!r}"
    want_a = [float((((np.arange(8, dtype=np.float32) * s) * 2 + 1) ** 2).sum())
              for s in (1.0, 2.0, 3.0, 4.0)]
    assert results["a"] == want_a
    assert results["b_item"] == float((np.arange(5) * 7 - 3).sum())
    assert results["b_list"] == (np.arange(5) * 7 - 3).tolist()
    if b_jits:
        assert results["b_jit"] == [float((np.arange(4) * s + 100).sum()) for s in (1, 2, 3)]
    # A's capture: exactly the kernels its function launches, as captured on its own
    alone = TinyJit(f)
    calls["a"] = 10  # no waiting this time
    for s in (1.0, 2.0):
        alone(arange(8, scale=s))
    assert [launch.item.ast for launch in jit_a.jit_cache] == \
        [launch.item.ast for launch in alone.jit_cache]
    assert calls["a"] == 12 and len(jit_a.jit_cache) == 2


def test_two_threads_capture_at_once() -> None:
    """Two TinyJits captured at the same time, one per thread, each keeps its own kernels."""
    both_capturing = threading.Barrier(2, timeout=TIMEOUT)
    calls: dict[str, int] = {"p": 0, "q": 0}
    results: dict[str, list[float]] = {}

    def make(name: str, k: float) -> TinyJit:
        def fn(x: Tensor) -> Tensor:
            calls[name] += 1
            y = (x * k).realize()
            if calls[name] == 2:
                both_capturing.wait()  # each is mid-capture while the other is too
            return (y + k).sum()
        return TinyJit(fn)

    jits = {"p": make("p", 2.0), "q": make("q", 5.0)}

    def runner(name: str) -> Callable[[], None]:
        def run() -> None:
            try:
                results[name] = [jits[name](arange(6, scale=s)).item() for s in (1.0, 2.0, 3.0)]
            except BaseException:
                both_capturing.abort()  # the other thread must not wait for this one
                raise
        return run

    assert run_threads(runner("p"), runner("q")) == []
    for name, k in (("p", 2.0), ("q", 5.0)):
        assert results[name] == [float((np.arange(6) * s * k + k).sum()) for s in (1, 2, 3)]
        assert len(jits[name].jit_cache) == 2
