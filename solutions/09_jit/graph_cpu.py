# Solutions of chapter 09, generated from tinyfw/runtime/graph_cpu.py by `python -m tools.generate`.
# Edit tinyfw/runtime/graph_cpu.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/09_jit --impl=solutions
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

A kernel split across the cores (chapter 11's THREAD: it takes its core's number and the number
of cores after the buffers) runs on one POSIX thread per other core, as the CPU device's pool
does in Python, joined before the next kernel.

CUDAEMU's graph is the same function calling each kernel's grid launcher (cuda_emu.h) with its
arguments, grid and block.
"""
from __future__ import annotations

import ctypes
import weakref
from typing import Any

from tinyfw.device import Buffer, Runtime, launch_size, workgroup_of
from tinyfw.runtime.graph import DeviceGraph, GraphKernel
from tinyfw.runtime.ops_cpu import COMPILE_FLAGS, ClangStyleCompiler, CPUProgram, cores

GRAPH_FLAGS = [*COMPILE_FLAGS, "-pthread"]


def render_graph(arities: list[int], threaded: list[bool], cores: int) -> str:
    """The C source of tf_graph for kernels taking arities[i] buffers each (their arguments
    follow one another in `arg`), kernel i split over `cores` cores where threaded[i]."""
    # >>> exercise 09.graph #graph-execution
    lines, parts, offset = [], [], 0
    for i, (arity, split) in enumerate(zip(arities, threaded)):
        args = ", ".join(f"arg[{offset + j}]" for j in range(arity))
        params = ", ".join(["void *"] * arity)
        if not split:
            lines.append(f"  ((void (*)({params}))fn[{i}])({args});")
        else:
            parts.append(f"static void *tf_part{i}(void *p) {{\n"
                         "  struct tf_part *part = p; void **fn = part->fn, **arg = part->arg;\n"
                         f"  ((void (*)({params}, int, int))fn[{i}])({args}, part->core, "
                         f"{cores});\n  return 0;\n}}\n")
            lines.append(f"  tf_on_every_core(tf_part{i}, fn, arg);")
        offset += arity
    body = "\n".join(lines)
    return (PRELUDE.replace("CORES", str(cores)) + "".join(parts) +
            f"void tf_graph(void **fn, void **arg) {{\n{body}\n}}\n")
    # <<< exercise


# What a graph with a threaded kernel needs: a part runs one core's share; tf_on_every_core
# starts a thread per other core, runs core 0 itself and waits for the others. A thread that
# cannot be started has its share run here, after core 0's: never skipped.
PRELUDE = """#include <pthread.h>
struct tf_part { void **fn, **arg; int core; };
static void tf_on_every_core(void *(*part)(void *), void **fn, void **arg) {
  pthread_t thread[CORES];
  struct tf_part parts[CORES];
  int started[CORES];
  for (int c = 1; c < CORES; c++) {
    parts[c] = (struct tf_part){fn, arg, c};
    started[c] = pthread_create(&thread[c], 0, part, &parts[c]) == 0;
  }
  parts[0] = (struct tf_part){fn, arg, 0};
  part(&parts[0]);
  for (int c = 1; c < CORES; c++) {
    if (started[c]) pthread_join(thread[c], 0);
    else part(&parts[c]);
  }
}
"""


def _address(memory: Any) -> int:
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
        return render_graph([len(k.buffers) for k in self.kernels],
                            [p.threaded for p in self.programs], cores())

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
