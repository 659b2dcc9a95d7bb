"""CUDA's graph: a CUDA graph of kernel nodes, instantiated once, launched once per replay.

Launched one by one (CUDAProgram), each kernel costs a cuLaunchKernel and a synchronization.
A CUDA graph is the driver's own list of work: built here from explicit kernel nodes, each
depending on the one before (the kernels' order), instantiated into an executable graph at the
capture. A replay whose inputs or outputs are other buffers patches the nodes that use them
(cuGraphExecKernelNodeSetParams: the driver copies the argument values then), launches the
whole graph with one cuGraphLaunch and waits once.

Run only on a machine with an NVIDIA GPU (scripts/test_cuda.sh); CUDAEMU, which runs the same
CUDA source on the CPU, replays its kernels with the CPU's kind of graph (graph_cpu.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tinyfw.device import Buffer, Runtime
from tinyfw.renderer.base import launch_size, workgroup_of
from tinyfw.runtime.graph import DeviceGraph, GraphKernel
from tinyfw.runtime.ops_cuda import _check, cuda_context, kernel_args, launch_dims


class CUDAGraph(DeviceGraph):
    """Kernel nodes in a chain, one executable graph (module docstring)."""

    def __init__(self, device: Runtime, kernels: list[GraphKernel], variable: set[Buffer]):
        import cuda.bindings.driver as drv
        super().__init__(device, kernels, variable)
        _check(drv.cuCtxSetCurrent(cuda_context()), "cuCtxSetCurrent")
        self.graph = _check(drv.cuGraphCreate(0), "cuGraphCreate")
        # each kernel's argument values (device pointers) and the array of their addresses,
        # kept alive as long as the graph: the driver reads them when a node's params are set
        self.values: list[list[np.ndarray]] = []
        self.params: list[Any] = []
        self.nodes: list[Any] = []
        for k in kernels:
            grid, block = workgroup_of(k.program) or launch_dims(launch_size(k.item))
            addresses, values = kernel_args([int(b.ensure_allocated()) for b in k.buffers])
            params = drv.CUDA_KERNEL_NODE_PARAMS()
            params.func = k.program.fn
            params.gridDimX, params.gridDimY, params.gridDimZ = grid, 1, 1
            params.blockDimX, params.blockDimY, params.blockDimZ = block, 1, 1
            params.sharedMemBytes = 0
            params.kernelParams = addresses.ctypes.data
            after = self.nodes[-1:]
            self.nodes.append(_check(drv.cuGraphAddKernelNode(self.graph, after, len(after),
                                                              params), "cuGraphAddKernelNode"))
            self.values.append([addresses, *values])
            self.params.append(params)
        self.exec = _check(drv.cuGraphInstantiate(self.graph, 0), "cuGraphInstantiate")
        self.changed: set[int] = set()

    def __del__(self) -> None:
        try:
            import cuda.bindings.driver as drv
            drv.cuGraphExecDestroy(self.exec)
            drv.cuGraphDestroy(self.graph)
        except Exception:  # (at exit the driver may be gone already)
            pass

    def bind(self, kernel: int, argument: int, buf: Buffer) -> None:
        self.values[kernel][1 + argument][0] = int(buf.ensure_allocated())
        self.changed.add(kernel)

    def launch(self) -> None:
        import cuda.bindings.driver as drv
        for kernel in sorted(self.changed):
            _check(drv.cuGraphExecKernelNodeSetParams(self.exec, self.nodes[kernel],
                                                      self.params[kernel]),
                   "cuGraphExecKernelNodeSetParams")
        self.changed.clear()
        _check(drv.cuGraphLaunch(self.exec, 0), "cuGraphLaunch")
        _check(drv.cuCtxSynchronize(), "cuCtxSynchronize")
