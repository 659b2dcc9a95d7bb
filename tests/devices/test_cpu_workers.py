"""The CPU workers (tinyfw/runtime/cpu_workers.c): every part of a threaded kernel runs once,
at once, on its own thread; launches in a row, from two Python threads at once, and after a
fork all complete with every part run."""
from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

from tinyfw.renderer.base import NotSupportedError
from tinyfw.runtime import c_compiler, cpu_workers
from tinyfw.runtime.c_compiler import ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram

# Each part adds (core + 1) to out[core] and writes the number of cores and its thread's id.
SOURCE = """#include <pthread.h>
const int tf_threaded = 1;
void parts(long long *out, int tf_core, int tf_cores) {
  out[tf_core] += tf_core + 1;
  out[64 + tf_core] = tf_cores;
  out[128 + tf_core] = (long long)pthread_self();
}
"""


def program() -> CPUProgram:
    """The test kernel, compiled like any CPU kernel."""
    compiler = ClangStyleCompiler(c_compiler.COMPILE_FLAGS)
    made = CPUProgram("parts", compiler.compile(SOURCE), SOURCE, compiler)
    assert made.threaded
    return made


def launched(cores: int, times: int = 1) -> np.ndarray:
    """out after `times` launches of the parts on `cores` cores."""
    out, kernel = np.zeros(192, np.int64), program()
    for _ in range(times):
        cpu_workers.run_parts(kernel, [out], cores)
    return out


@pytest.mark.parametrize("cores", [1, 2, 5])
def test_every_part_runs_once_on_its_own_thread(cores: int) -> None:
    """Parts 0..cores-1 each run once, each told the number of cores, each on another thread
    (part 0 on the caller's): more parts than the machine's cores too."""
    out = launched(cores)
    assert out[:cores].tolist() == list(range(1, cores + 1)) and not out[cores:64].any()
    assert out[64:64 + cores].tolist() == [cores] * cores
    assert len(set(out[128:128 + cores].tolist())) == cores


def test_launches_in_a_row_each_run_every_part() -> None:
    """Two thousand launches back to back: no part lost or run twice."""
    out = launched(3, times=2000)
    assert out[:3].tolist() == [2000, 4000, 6000]


def test_two_python_threads_at_once() -> None:
    """Two threads launching at once each get all their parts run (one of them runs its own
    parts one after another while the other's job holds the workers)."""
    outs = [np.zeros(192, np.int64) for _ in range(2)]
    kernel = program()

    def launch(out: np.ndarray) -> None:
        for _ in range(500):
            cpu_workers.run_parts(kernel, [out], 2)
    threads = [threading.Thread(target=launch, args=(out,)) for out in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(out[:2].tolist() == [500, 1000] for out in outs)


def _child(queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    queue.put(launched(2)[:2].tolist())


def test_a_forked_child_starts_its_own_workers() -> None:
    """After a fork (the parent's workers started), the child's launches complete."""
    launched(2)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0, "the forked child hung or failed"
    assert queue.get(timeout=5) == [1, 2]


def test_too_many_buffers_are_refused() -> None:
    """A kernel of more buffers than any tf_parts_<n> takes is not put in a graph."""
    with pytest.raises(NotSupportedError, match="at most 64"):
        cpu_workers.parts_entry(cpu_workers.MAX_BUFFERS + 1)
