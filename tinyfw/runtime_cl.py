"""The CL device: OpenCL through pyopencl (PoCL runs it on the CPU where there is no GPU)."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from tinyfw.device import Buffer, Runtime
from tinyfw.dtype import DType

FIX_CL = ("install an OpenCL platform and pyopencl: `apt-get install pocl-opencl-icd "
          "ocl-icd-libopencl1` and `pip install -e '.[cl]'`")


@functools.cache
def cl_context() -> tuple[Any, Any]:
    """The OpenCL context and queue of the first device found, or a RuntimeError saying why."""
    try:
        import pyopencl as cl
    except ImportError as error:
        raise RuntimeError(f"CL needs pyopencl ({error}): {FIX_CL}") from None
    try:
        platforms = cl.get_platforms()
    except cl.Error as error:  # no ICD, or no platform registered
        raise RuntimeError(f"CL found no OpenCL platform ({error}): {FIX_CL}") from None
    devices = [d for p in platforms for d in p.get_devices()]
    if not devices:
        raise RuntimeError(f"CL found OpenCL platforms but no device: {FIX_CL}")
    ctx = cl.Context(devices[:1])
    return ctx, cl.CommandQueue(ctx)


class CLAllocator:
    """Device memory: cl.Buffer objects; copies go through the queue."""

    def alloc(self, size: int, dtype: DType) -> Any:
        import pyopencl as cl
        ctx, _ = cl_context()
        return cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(size * dtype.itemsize, 1))

    def copyin(self, dest: Any, src: np.ndarray) -> None:
        import pyopencl as cl
        _, queue = cl_context()
        if src.size:
            cl.enqueue_copy(queue, dest, np.ascontiguousarray(src.reshape(-1)))

    def copyout(self, src: Any, size: int, dtype: DType) -> np.ndarray:
        import pyopencl as cl
        _, queue = cl_context()
        out = np.empty(size, dtype=dtype.np)
        if size:
            cl.enqueue_copy(queue, out, src)
        return out


class CLCompiler:
    """OpenCL C source in, a built program's binary out."""

    def compile(self, source: str) -> bytes:
        import pyopencl as cl
        ctx, _ = cl_context()
        try:
            program = cl.Program(ctx, source).build()
        except cl.RuntimeError as error:
            raise RuntimeError(f"OpenCL build failed:\n{error}\n--- source ---\n{source}") from None
        return program.binaries[0]


class CLProgram:
    """A built kernel, launched with a global size (and the driver's choice of local size)."""

    def __init__(self, name: str, binary: bytes):
        import pyopencl as cl
        ctx, _ = cl_context()
        self.program = cl.Program(ctx, ctx.devices, [binary]).build()
        self.kernel = getattr(self.program, name)

    def __call__(self, buffers: list[Any], global_size: tuple[int, ...]) -> None:
        _, queue = cl_context()
        self.kernel(queue, global_size, None, *buffers)
        queue.finish()


class CLRuntime(Runtime):
    """The CL device: kernels rendered as OpenCL C, built by the platform, run on its queue."""

    def __init__(self) -> None:
        cl_context()  # fail now, with the reason, if OpenCL is not there
        super().__init__("CL", CLAllocator())
        self.compiler = CLCompiler()

    def source(self, item: Any) -> str:
        from tinyfw.renderer_gpu import OPENCL, render_gpu
        return render_gpu(item, OPENCL)

    def build(self, item: Any, source: str) -> CLProgram:
        return CLProgram(item.name, self.compiler.compile(source))

    def run(self, item: Any, out: Buffer, inputs: list[Buffer]) -> None:
        from tinyfw.renderer_gpu import launch_size
        program = self.prepare(item)
        buffers = [out.ensure_allocated()] + [b.ensure_allocated() for b in inputs]
        program(buffers, (launch_size(item),))
