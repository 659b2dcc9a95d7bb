"""WEBGPU's graph: one command encoder holding every dispatch of the step, one submit.

Launched one by one (WebGPUProgram), each kernel makes a bind group, a command encoder and a
compute pass, and submits them: a round trip through wgpu per kernel. Here the bind groups are
made at the capture (again at a replay only for a kernel whose buffers changed), and a replay
records every dispatch into one compute pass (the copies between them into the encoder) and
submits it once. Within a compute pass each
dispatch is its own usage scope: WebGPU orders one dispatch's writes before the next one's
reads, as separate submits would.
"""
from __future__ import annotations

from typing import Any

from tinyfw.device import Buffer, Runtime
from tinyfw.renderer.base import workgroup_of
from tinyfw.renderer.wgsl import wgsl_groups, workgroup_dispatch
from tinyfw.runtime.graph import DeviceGraph, GraphKernel, NotSupportedError
from tinyfw.runtime.ops_webgpu import wgpu_device


class WebGPUGraph(DeviceGraph):
    """Every dispatch of the step in one compute pass, one submit (module docstring). A copy
    between two of its buffers (a state kept by a copy: WebGPU writes no buffer in place) is
    one more command of the encoder."""

    copies = True

    def __init__(self, device: Runtime, kernels: list[GraphKernel], variable: set[Buffer]):
        super().__init__(device, kernels, variable)
        for k in kernels:
            if k.is_copy:
                continue
            if not hasattr(k.program, "layout") or not hasattr(k.program, "pipeline"):
                raise NotSupportedError("WEBGPU graphs need WebGPUProgram's layout and pipeline")
        self.buffers = [[b.ensure_allocated() for b in k.buffers] for k in kernels]
        self.groups = [(0, 0) if k.is_copy else wgsl_groups(k.item)
                       if (w := workgroup_of(k.program)) is None else workgroup_dispatch(w[0])
                       for k in kernels]
        self.binds: list[Any] = [None if k.is_copy else self._bind_group(i)
                                 for i, k in enumerate(kernels)]

    def _bind_group(self, i: int) -> Any:
        """Kernel i's buffers bound as its program's layout says."""
        return wgpu_device().create_bind_group(layout=self.kernels[i].program.layout, entries=[
            {"binding": j, "resource": {"buffer": b, "offset": 0, "size": b.size}}
            for j, b in enumerate(self.buffers[i])])

    def bind(self, kernel: int, argument: int, buf: Buffer) -> None:
        self.buffers[kernel][argument] = buf.ensure_allocated()
        self.binds[kernel] = None  # made again at the launch, once for all its changes

    def launch(self) -> None:
        device = wgpu_device()
        encoder = device.create_command_encoder()
        compute = None
        for i, kernel in enumerate(self.kernels):
            if kernel.is_copy:  # between compute passes: the encoder copies
                if compute is not None:
                    compute.end()
                    compute = None
                dest, src = self.buffers[i]
                encoder.copy_buffer_to_buffer(src, 0, dest, 0, min(src.size, dest.size))
                continue
            if compute is None:
                compute = encoder.begin_compute_pass()
            if self.binds[i] is None:
                self.binds[i] = self._bind_group(i)
            compute.set_pipeline(kernel.program.pipeline)
            compute.set_bind_group(0, self.binds[i])
            compute.dispatch_workgroups(*self.groups[i], 1)
        if compute is not None:
            compute.end()
        device.queue.submit([encoder.finish()])
