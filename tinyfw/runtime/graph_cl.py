"""CL's graph: every kernel's arguments set once, all enqueued back to back, one wait.

Launched one by one (CLRuntime.run), each kernel sets its arguments, is enqueued, and the host
waits for it to finish before Python goes on to the next. Here each launch has its own
cl.Kernel (two launches of one program would otherwise share one set of arguments), whose
arguments are set at the capture; a replay sets only those that changed (the inputs and
outputs), enqueues every kernel on the in-order queue, and waits once.

OpenCL 3.0 has a closer match to a CUDA graph, the `cl_khr_command_buffer` extension: commands
recorded once and enqueued as one. PoCL 3.1 (Debian 12) offers it, but not
`cl_khr_command_buffer_mutable_dispatch`, without which a recorded kernel's arguments cannot
change: a replay's new inputs and outputs would need a copy in and out. pyopencl has no
binding for it either. So this graph does not use it.
"""
from __future__ import annotations

from typing import Any

from tinyfw.device import Buffer, Runtime
from tinyfw.renderer.base import launch_size, workgroup_of
from tinyfw.runtime.graph import DeviceGraph, GraphKernel, NotSupportedError
from tinyfw.runtime.ops_cl import cl_context


class CLGraph(DeviceGraph):
    """One cl.Kernel per launch, arguments set once, enqueued together (module docstring);
    a copy between two of its buffers is enqueued among them."""

    copies = True

    def __init__(self, device: Runtime, kernels: list[GraphKernel], variable: set[Buffer]):
        import pyopencl as cl
        super().__init__(device, kernels, variable)
        self.launches: list[tuple[Any, tuple[int], tuple[int] | None]] = []
        for k in kernels:
            if k.is_copy:
                self.launches.append((None, (0,), None))
                continue
            program = getattr(k.program, "program", None)
            kernel = getattr(k.program, "kernel", None)
            if program is None or kernel is None:  # a learner's program class (chapter 06)
                raise NotSupportedError("CL graphs need CLProgram's .program and .kernel")
            own = cl.Kernel(program, kernel.function_name)
            own.set_args(*[b.ensure_allocated() for b in k.buffers])
            workgroup = workgroup_of(k.program)
            if workgroup is None:
                self.launches.append((own, (launch_size(k.item),), None))
            else:  # chapter 11's work-groups: exactly these
                groups, threads = workgroup
                self.launches.append((own, (groups * threads,), (threads,)))

    def bind(self, kernel: int, argument: int, buf: Buffer) -> None:
        if not self.kernels[kernel].is_copy:
            self.launches[kernel][0].set_arg(argument, buf.ensure_allocated())

    def launch(self) -> None:
        import pyopencl as cl
        _, queue = cl_context()
        for i, (kernel, global_size, local_size) in enumerate(self.launches):
            if kernel is None:  # a copy on the device, in the queue's order like the kernels
                dest, src = self.bound_buffers(i)
                cl.enqueue_copy(queue, dest.ensure_allocated(), src.ensure_allocated(),
                                byte_count=dest.size * dest.dtype.itemsize)
            else:
                cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size)
        queue.finish()
