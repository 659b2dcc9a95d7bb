# Exercises of chapter 09, generated from tinyfw/runtime/graph_cpu.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/09_jit
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

A kernel split across the cores (chapter 11's THREAD) is not in a graph: it runs on its own,
through the CPU device's pool of threads, between two graphs. (A graph that started a POSIX
thread per other core for it was no faster on an idle machine, and much slower on a busy one,
where a new thread waits for a core; a kernel big enough to be split pays little for one call
from Python.)

CUDAEMU's graph is the same function calling each kernel's grid launcher (cuda_emu.h) with its
arguments, grid and block.
"""
from __future__ import annotations

import ctypes
import weakref
from typing import Any

from tinyfw.device import Buffer, Runtime, launch_size, workgroup_of
from tinyfw.runtime.graph import DeviceGraph, GraphKernel
from tinyfw.runtime.ops_cpu import COMPILE_FLAGS, ClangStyleCompiler, CPUProgram

GRAPH_FLAGS = COMPILE_FLAGS


def render_graph(arities: list[int]) -> str:
    """The C source of tf_graph for kernels taking arities[i] buffers each, whose arguments
    follow one another in `arg`."""
    # TODO 09.graph: write this part. The chapter explains it:
    #   chapters/09_jit/README.md#graph-execution
    raise NotImplementedError("not done yet: 09.graph")


def _address(memory: Any) -> int:
    """The address of a buffer's memory (a numpy array on CPU and CUDAEMU)."""
    return int(memory.ctypes.data)


class CPUGraph(DeviceGraph):
    """The CPU's graph: tf_graph (render_graph) compiled like a kernel and called once."""

    @classmethod
    def accepts(cls, program: Any) -> bool:
        """Not a kernel split across the cores (see the module docstring)."""
        return not program.threaded

    def __init__(self, device: Runtime, kernels: list[GraphKernel], variable: set[Buffer]):
        super().__init__(device, kernels, variable)
        self.programs = [self.function_of(k) for k in kernels]
        for program in self.programs:
            program.hold()  # its library stays loaded while the graph may call it
        weakref.finalize(self, _release, self.programs)
        self.fn = (ctypes.c_void_p * len(kernels))(*[p.address() for p in self.programs])
        arguments = self.arguments()
        self.arg = (ctypes.c_void_p * len(arguments))(*arguments)
        source = self.source()
        compiler = ClangStyleCompiler(GRAPH_FLAGS)
        self.graph = CPUProgram("tf_graph", compiler.compile(source), source, compiler)

    def function_of(self, kernel: GraphKernel) -> CPUProgram:
        """The C function that runs a kernel."""
        return kernel.program

    def arguments(self) -> list[int]:
        """The `arg` array tf_graph reads: every kernel's buffers' addresses in turn."""
        self.offsets = [sum(len(k.buffers) for k in self.kernels[:i])
                        for i in range(len(self.kernels))]
        return [_address(b.ensure_allocated()) for k in self.kernels for b in k.buffers]

    def source(self) -> str:
        """tf_graph's C source."""
        return render_graph([len(k.buffers) for k in self.kernels])

    def bind(self, kernel: int, argument: int, buf: Buffer) -> None:
        self.arg[self.offsets[kernel] + argument] = _address(buf.ensure_allocated())

    def launch(self) -> None:
        self.graph.call(self.fn, self.arg)


def _release(programs: list[CPUProgram]) -> None:
    """The graph is gone: its kernels' libraries may be unloaded again."""
    for program in programs:
        program.unhold()


class CUDAEmulatorGraph(CPUGraph):
    """CUDAEMU's graph: tf_graph calls each kernel's grid launcher (EmulatedCUDAProgram), whose
    arguments are an array of its buffers' addresses, the grid, the block and whether the
    block's threads run as real threads."""

    @classmethod
    def accepts(cls, program: Any) -> bool:
        return True  # (its kernels are never split across the cores)

    def function_of(self, kernel: GraphKernel) -> CPUProgram:
        return kernel.program.program  # (tf_launch_<name>: it runs the grid)

    def arguments(self) -> list[int]:
        """One argument per kernel: its own array of buffer addresses, which bind changes."""
        self.pointers = [(ctypes.c_void_p * len(k.buffers))(
            *[_address(b.ensure_allocated()) for b in k.buffers]) for k in self.kernels]
        return [ctypes.addressof(p) for p in self.pointers]

    def source(self) -> str:
        calls = []
        for i, kernel in enumerate(self.kernels):
            grid, block = workgroup_of(kernel.program) or _launch_dims(kernel.item)
            calls.append(f"  ((void (*)(void **, int, int, int))fn[{i}])((void **)arg[{i}], "
                         f"{grid}, {block}, {kernel.program.threads});")
        return "void tf_graph(void **fn, void **arg) {\n" + "\n".join(calls) + "\n}\n"

    def bind(self, kernel: int, argument: int, buf: Buffer) -> None:
        self.pointers[kernel][argument] = _address(buf.ensure_allocated())


def _launch_dims(item: Any) -> tuple[int, int]:
    """A grid of one thread per output element (the CUDA device's launch_dims)."""
    from tinyfw.runtime.ops_cuda import launch_dims
    return launch_dims(launch_size(item))
