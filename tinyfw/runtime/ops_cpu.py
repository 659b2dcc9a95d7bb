"""The CPU device: kernels rendered as C, compiled by the system's C compiler, run with ctypes."""
from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

from concurrent.futures import ThreadPoolExecutor

from tinyfw.device import Buffer, Runtime
from tinyfw.renderer.cstyle import CPU_C
from tinyfw.uop.ops import find_reduce
from tinyfw.runtime.c_compiler import REDUCE_FLAGS, ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram, address_of
from tinyfw.runtime.ops_numpy import NumpyAllocator


class CPURuntime(Runtime):
    """The compiled CPU device: memory is numpy arrays; kernels are rendered as C, compiled by
    the system's C compiler (cached on disk) and called through ctypes."""

    def __init__(self) -> None:
        super().__init__("CPU", NumpyAllocator(), renderer=CPU_C, compiler=ClangStyleCompiler(),
                         program=CPUProgram)
        self.reduce_compiler = ClangStyleCompiler(REDUCE_FLAGS)  # see REDUCE_FLAGS: gcc's bug
        self.cores = cores()
        from tinyfw.runtime.graph_cpu import CPUGraph  # (it imports this module)
        self.graph = CPUGraph

    def parts(self) -> tuple[Any, ...]:
        return (*super().parts(), self.reduce_compiler)

    def compiler_for(self, kernel: Any) -> ClangStyleCompiler:
        """Kernels with a reduce loop are compiled with REDUCE_FLAGS (gcc 12's vectorizer)."""
        reduces = find_reduce(kernel.ast) is not None
        return self.reduce_compiler if reduces else self.compiler

    def run(self, program: CPUProgram, item: Any, out: Buffer, inputs: list[Buffer]) -> None:
        # an input on another device is read through a host view: no copy where its memory is
        # a numpy array already (NUMPY), a host copy otherwise
        if not program.threaded and _all_on(out.device, inputs):
            program.call_pointers(address_of(out), *[address_of(b) for b in inputs])
            return
        arrays = [out.ensure_allocated()] + [b.ensure_allocated() if b.device == out.device
                                             else b.host_view() for b in inputs]
        if not program.threaded:
            program(*arrays)
            return
        from tinyfw.runtime import cpu_workers  # (it imports this module)
        if workers_enabled() and len(arrays) <= cpu_workers.MAX_BUFFERS:
            cpu_workers.run_parts(program, arrays, cores())  # (C threads: cpu_workers.py)
            return
        # >>> exercise 11.threads #threads
        pointers = [ctypes.c_void_p(a.ctypes.data) for a in arrays]
        count = cores()
        parts = [pool().submit(program.call, *pointers, ctypes.c_int(core), ctypes.c_int(count))
                 for core in range(1, count)]
        program.call(*pointers, ctypes.c_int(0), ctypes.c_int(count))  # this thread: core 0
        for part in parts:
            part.result()  # (raises what the part raised)
        # <<< exercise


def _all_on(device: str, buffers: list[Buffer]) -> bool:
    """Whether every buffer is on device."""
    for buffer in buffers:
        if buffer.device != device:
            return False
    return True


def cores() -> int:
    """How many cores this process may run on ($TINYFW_CORES caps it)."""
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    return max(1, min(available, int(os.getenv("TINYFW_CORES", available))))


def workers_enabled() -> bool:
    """Whether threaded kernels run their parts on the C workers (cpu_workers.py; CPU_WORKERS,
    default 1), else on pool()'s Python threads (chapter 11's 11.threads)."""
    return os.getenv("CPU_WORKERS", "1") not in ("", "0")


@functools.cache
def pool() -> ThreadPoolExecutor:
    """The threads that run the other cores' parts of a threaded kernel (ctypes lets go of
    Python's lock during the call, so they run at once)."""
    return ThreadPoolExecutor(max_workers=max(cores() - 1, 1), thread_name_prefix="tinyfw-core")
