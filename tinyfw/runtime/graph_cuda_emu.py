"""CUDAEMU's graph: the CPU's graph (graph_cpu.py), whose one generated C function calls each
captured kernel's grid launcher (cuda_emu.h) with its buffers' addresses, its grid and block
(the CUDA device's launch_dims, chapter 07) and whether the block's threads run as threads."""
from __future__ import annotations

import ctypes

from tinyfw.device import Buffer
from tinyfw.renderer.base import launch_size, workgroup_of
from tinyfw.runtime.c_library import CPUProgram
from tinyfw.runtime.graph import GraphKernel
from tinyfw.runtime.graph_cpu import CPUGraph, buffer_address
from tinyfw.runtime.ops_cuda import launch_dims


class CUDAEmulatorGraph(CPUGraph):
    """CUDAEMU's graph: tf_graph calls each kernel's grid launcher (EmulatedCUDAProgram), whose
    arguments are an array of its buffers' addresses, the grid, the block and whether the
    block's threads run as real threads."""

    def function_of(self, kernel: GraphKernel) -> CPUProgram:
        return kernel.program.program  # (tf_launch_<name>: it runs the grid)

    def arguments(self) -> list[int]:
        """One argument per kernel: its own array of buffer addresses, which bind changes."""
        self.pointers = [(ctypes.c_void_p * len(k.buffers))(
            *[buffer_address(b.ensure_allocated()) for b in k.buffers]) for k in self.kernels]
        return [ctypes.addressof(p) for p in self.pointers]

    def source(self) -> str:
        calls = []
        for i, kernel in enumerate(self.kernels):
            grid, block = workgroup_of(kernel.program) or launch_dims(launch_size(kernel.item))
            calls.append(f"  ((void (*)(void **, int, int, int))fn[{i}])((void **)arg[{i}], "
                         f"{grid}, {block}, {kernel.program.threads});")
        return "void tf_graph(void **fn, void **arg) {\n" + "\n".join(calls) + "\n}\n"

    def bind(self, kernel: int, argument: int, buf: Buffer) -> None:
        self.pointers[kernel][argument] = buffer_address(buf.ensure_allocated())

