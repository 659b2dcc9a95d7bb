"""The CPU's workers: C threads that run a threaded kernel's other parts inside a CPU graph.

Launched eagerly, a threaded kernel (chapter 11's THREAD) hands its other cores' parts to
Python's thread pool (CPURuntime.run): a submit and a wait per part, tens of microseconds, paid
by every launch. A TinyJit replay of a decode step launches about a hundred such kernels of a
few hundred microseconds each, and that hand-off cost more than the second core gave. Inside a
CPU graph, a threaded kernel is called instead through `tf_parts_<n>` of the library built here
from cpu_workers.c: persistent threads that wait for the next part spinning for a moment, so a
part starts within a microsecond or so of the call. (Measured: bench/llm.py `--kernels` and
its decode rows; see bench/README.md.)
"""
from __future__ import annotations

import ctypes
import functools
from pathlib import Path

import numpy as np

from tinyfw.renderer.base import NotSupportedError
from tinyfw.runtime.c_compiler import COMPILE_FLAGS, ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram, _open_library

SOURCE = Path(__file__).with_name("cpu_workers.c")
MAX_BUFFERS = 64  # the most buffers a threaded kernel in a graph may take


def render_entries(max_buffers: int = MAX_BUFFERS) -> str:
    """C for tf_call (a kernel called with n buffers, then core and cores) and, for each n,
    tf_parts_<n>(b0, ..., b<n-1>, kernel, cores): tf_parallel of that kernel on those buffers."""
    cases, entries = [], []
    for n in range(1, max_buffers + 1):
        params = ", ".join(["void *"] * n + ["int", "int"])
        args = ", ".join([f"a[{i}]" for i in range(n)] + ["core", "cores"])
        cases.append(f"  case {n}: ((void (*)({params}))kernel)({args}); break;")
        buffers = ", ".join(f"void *b{i}" for i in range(n))
        listed = ", ".join(f"b{i}" for i in range(n))
        entries.append(f"void tf_parts_{n}({buffers}, void *kernel, void *cores) {{\n"
                       f"  void *a[{n}] = {{{listed}}};\n"
                       f"  tf_parallel(tf_call, kernel, a, {n}, (int)(intptr_t)cores);\n}}")
    switch = "\n".join(cases)
    return ("static void tf_call(void *kernel, void **a, int nargs, int core, int cores) {\n"
            f"  switch (nargs) {{\n{switch}\n  }}\n}}\n\n" + "\n".join(entries) + "\n")


@functools.cache
def library() -> ctypes.CDLL:
    """The workers' library, compiled (once, cached like a kernel) and loaded for good."""
    source = SOURCE.read_text() + "\n" + render_entries()
    compiler = ClangStyleCompiler(COMPILE_FLAGS)
    path = compiler.compile(source)
    return _open_library(compiler.library_bytes(path, source), path.parent)


def run_parts(program: CPUProgram, arrays: list[np.ndarray], cores: int) -> None:
    """Run a threaded program on these buffers (numpy arrays, the output first) on every core
    at once, through tf_parts_<n>: one call from Python."""
    entry = getattr(library(), f"tf_parts_{_checked(len(arrays))}")
    program.hold()  # (loaded until the call is done)
    try:
        entry(*[ctypes.c_void_p(a.ctypes.data) for a in arrays],
              ctypes.c_void_p(program.address()), ctypes.c_void_p(cores))
    finally:
        program.unhold()


def parts_entry(buffers: int) -> int:
    """The address of tf_parts_<buffers>, which a graph calls with a threaded kernel's buffers,
    the kernel's address and the number of cores."""
    entry = getattr(library(), f"tf_parts_{_checked(buffers)}")
    return int(ctypes.cast(entry, ctypes.c_void_p).value or 0)


def _checked(buffers: int) -> int:
    """buffers, if a tf_parts_<buffers> exists."""
    if not 1 <= buffers <= MAX_BUFFERS:
        raise NotSupportedError(f"a threaded kernel of {buffers} buffers on the CPU workers "
                                f"(at most {MAX_BUFFERS})")
    return buffers
