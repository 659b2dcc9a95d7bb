# Exercises of chapter 09, generated from tinyfw/runtime/graph_cpu.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/09_jit
# generated text id: 24f4b57c0476ff80 (lets tools.generate tell your edits apart)
"""The CPU's graph: one generated C function calls every captured kernel, one ctypes call a step.

Each kernel is already a C function in a loaded library. The graph's function gets two arrays
from Python, set up at the capture: the kernels' function pointers and every kernel's
arguments (buffer addresses) one after the other. It calls the kernels in order:

    void tf_graph(void **fn, void **arg) {
      ((void (*)(void *, void *))fn[0])(arg[0], arg[1]);
      ((void (*)(void *, void *, void *))fn[1])(arg[2], arg[3], arg[1]);
    }

A replay writes the new inputs' and outputs' addresses into `arg` and makes the one call: no
Python between the kernels. (Every buffer is passed as `void *`; a kernel takes `float *` or
`int *`: on the x86-64 and AArch64 calling conventions every data pointer travels the same way.)

A kernel split across the cores (chapter 11's THREAD) is in the graph too, called through the
CPU workers (cpu_workers.py): its line in tf_graph calls `tf_parts_<n>` with its n buffers, the
kernel's address and the number of cores, and tf_parts runs the kernel's parts at once on
persistent C threads, core 0 on the caller's. (An earlier graph that started a POSIX thread per
other core at each launch was no faster on an idle machine and much slower on a busy one, where
a new thread waits for a core; so those kernels ran alone, through Python's pool, until a
decode step of a hundred of them showed what that hand-off cost.)

CUDAEMU's graph (graph_cuda_emu.py) is this one, calling each kernel's grid launcher instead.
"""
from __future__ import annotations

import ctypes
import weakref
from typing import Any

from tinyfw.device import Buffer, Runtime
from tinyfw.runtime.graph import DeviceGraph, GraphKernel
from tinyfw.runtime.cpu_workers import parts_entry
from tinyfw.runtime.c_compiler import COMPILE_FLAGS, ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram
from tinyfw.runtime.ops_cpu import cores

GRAPH_FLAGS = COMPILE_FLAGS


def render_graph(arities: list[int]) -> str:
    """The C source of tf_graph for kernels taking arities[i] buffers each, whose arguments
    follow one another in `arg`."""
    # TODO 09.graph: write this part. The chapter explains it:
    #   chapters/09_jit/README.md#graph-execution
    raise NotImplementedError("not done yet: 09.graph")


def buffer_address(memory: Any) -> int:
    """The address of a buffer's memory (a numpy array on CPU and CUDAEMU)."""
    return int(memory.ctypes.data)


class CPUGraph(DeviceGraph):
    """The CPU's graph: tf_graph (render_graph) compiled like a kernel and called once."""

    def __init__(self, device: Runtime, kernels: list[GraphKernel], variable: set[Buffer]):
        super().__init__(device, kernels, variable)
        self.programs = [self.function_of(k) for k in kernels]
        for program in self.programs:
            program.hold()  # its library stays loaded while the graph may call it
        weakref.finalize(self, _release, self.programs)
        self.cores = cores()  # (a threaded kernel's parts: as many as when captured)
        self._last_bound: tuple[Buffer | None, int] = (None, 0)
        self.fn = (ctypes.c_void_p * len(kernels))(*[self.entry(i) for i in range(len(kernels))])
        arguments = self.arguments()
        self.arg = (ctypes.c_void_p * len(arguments))(*arguments)
        source = self.source()
        compiler = ClangStyleCompiler(GRAPH_FLAGS)
        self.graph = CPUProgram("tf_graph", compiler.compile(source), source, compiler)

    def function_of(self, kernel: GraphKernel) -> CPUProgram:
        """The C function that runs a kernel."""
        return kernel.program

    def threaded(self, i: int) -> bool:
        """Whether kernel i is split across the cores (called through the workers)."""
        return bool(self.programs[i].threaded)

    def entry(self, i: int) -> int:
        """The function tf_graph calls for kernel i: the kernel's own, or for a threaded kernel
        the workers' tf_parts_<n>."""
        if self.threaded(i):
            return parts_entry(len(self.kernels[i].buffers))
        return self.programs[i].address()

    def extra(self, i: int) -> list[int]:
        """What kernel i's call takes after its buffers: a threaded kernel's address and the
        number of cores (tf_parts_<n>'s last two arguments)."""
        return [self.programs[i].address(), self.cores] if self.threaded(i) else []

    def arguments(self) -> list[int]:
        """The `arg` array tf_graph reads: every kernel's buffers' addresses in turn (and
        extra's after a threaded kernel's)."""
        arities = self.arities()
        self.offsets = [sum(arities[:i]) for i in range(len(self.kernels))]
        return [value for i, k in enumerate(self.kernels)
                for value in [buffer_address(b.ensure_allocated()) for b in k.buffers]
                + self.extra(i)]

    def arities(self) -> list[int]:
        """How many arguments tf_graph passes each kernel's function."""
        return [len(k.buffers) + len(self.extra(i)) for i, k in enumerate(self.kernels)]

    def source(self) -> str:
        """tf_graph's C source."""
        return render_graph(self.arities())

    def bind(self, kernel: int, argument: int, buf: Buffer) -> None:
        # (a buffer's places are bound one after another: a decode step's position is an
        # argument of 270 kernels, and its address is looked up once)
        if self._last_bound[0] is not buf:
            self._last_bound = (buf, buffer_address(buf.ensure_allocated()))
        self.arg[self.offsets[kernel] + argument] = self._last_bound[1]

    def launch(self) -> None:
        self._last_bound = (None, 0)  # (looked up again at the next replay's binding)
        self.graph.call(self.fn, self.arg)


def _release(programs: list[CPUProgram]) -> None:
    """The graph is gone: its kernels' libraries may be unloaded again."""
    for program in programs:
        program.unhold()
