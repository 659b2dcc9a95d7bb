"""The CL device: OpenCL through pyopencl (PoCL runs it on the CPU where there is no GPU)."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from tinyfw.device import Buffer, Runtime
from tinyfw.renderer.base import launch_size, workgroup_of
from tinyfw.dtype import DType
from tinyfw.renderer.opencl_c import BITCAST_HELPERS
from tinyfw.renderer.opencl_vector import OPENCL_VECTORS as OPENCL
from tinyfw.runtime import joined

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


def build_options(ctx: Any) -> list[str]:
    """Options for building a program: correctly rounded float division and sqrt where the
    device can give them. OpenCL C otherwise allows 2.5 ulp for a / b and 3 ulp for sqrt."""
    import pyopencl as cl
    exact = cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT
    if all(d.single_fp_config & exact for d in ctx.devices):
        return ["-cl-fp32-correctly-rounded-divide-sqrt"]
    return []


class CLAllocator:
    """Device memory: cl.Buffer objects; copies go through the queue."""

    def alloc(self, size: int, dtype: DType) -> Any:
        """A device buffer of size elements (at least one byte: OpenCL has no empty buffers)."""
        # >>> exercise 06.cl_memory #memory-on-the-device
        import pyopencl as cl
        ctx, _ = cl_context()
        return cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(size * dtype.itemsize, 1))
        # <<< exercise

    def copyin(self, dest: Any, src: np.ndarray) -> None:
        """Host to device; returns when the copy is done."""
        # >>> exercise 06.cl_memory #memory-on-the-device
        import pyopencl as cl
        _, queue = cl_context()
        if src.size:
            cl.enqueue_copy(queue, dest, np.ascontiguousarray(src.reshape(-1)))
        # <<< exercise

    def copyout(self, src: Any, size: int, dtype: DType) -> np.ndarray:
        """Device to host: a new flat array of size elements."""
        # >>> exercise 06.cl_memory #memory-on-the-device
        import pyopencl as cl
        _, queue = cl_context()
        out = np.empty(size, dtype=dtype.np)
        if size:
            cl.enqueue_copy(queue, out, src)
        return out
        # <<< exercise


class CLProgram:
    """A kernel built from OpenCL C source, launched with one work-item per output element
    (the global size), in work-groups of the driver's choice."""

    def __init__(self, name: str, source: str):
        """Builds the program for the context's device and finds the kernel called name."""
        # >>> exercise 06.cl_launch #building-and-launching
        import pyopencl as cl
        ctx, _ = cl_context()
        try:
            self.program = cl.Program(ctx, source).build(options=build_options(ctx))
        except cl.RuntimeError as error:
            raise RuntimeError(f"OpenCL build failed:\n{error}\n--- source ---\n{source}") from None
        self.kernel = getattr(self.program, name)
        # <<< exercise

    def __call__(self, buffers: list[Any], global_size: int) -> None:
        """Runs the kernel on the buffers (output first) and waits for it to finish."""
        # >>> exercise 06.cl_launch #building-and-launching
        _, queue = cl_context()
        self.kernel(queue, (global_size,), None, *buffers)
        queue.finish()
        # <<< exercise


class BuiltCLProgram(CLProgram):
    """A kernel of a program built before (for several kernels at once), ready to launch."""

    def __init__(self, program: Any, name: str):  # (it builds nothing: no CLProgram.__init__)
        self.program, self.kernel = program, getattr(program, name)


_OWN_BUILD = CLProgram.__init__  # a learner's CLProgram (chapter 06) builds each kernel itself


def joined_source(kernels: list[tuple[str, str]]) -> tuple[str, list[str]] | None:
    """One OpenCL program's source for several kernels (name, source each) and the kernels'
    names in it (tinyfw/runtime/joined.py); None if a source is not of that shape."""
    return joined.joined_source(kernels, OPENCL.prelude, BITCAST_HELPERS, "__kernel void {}(")


class CLRuntime(Runtime):
    """The CL device: kernels rendered as OpenCL C, which CLProgram hands to the platform to
    build (no compiler of tinyfw's own), run on its queue."""

    def __init__(self) -> None:
        cl_context()  # fail now, with the reason, if OpenCL is not there
        super().__init__("CL", CLAllocator(), renderer=OPENCL, compiler=None, program=CLProgram)
        from tinyfw.runtime.graph_cl import CLGraph  # (it imports this module)
        self.graph = CLGraph

    def load_many(self, kernels: list[tuple[str, Any, int]]) -> list[Any]:
        """The kernels built as one OpenCL program: PoCL took about 0.2 s to build a program of
        one kernel and 0.22 s for one of ten on this project's machine. One by one where the
        program class is a learner's, or where the joined program fails to build (each then
        says why)."""
        joined = joined_source([(name, source) for name, source, _ in kernels])
        if len(kernels) < 2 or joined is None or CLProgram.__init__ is not _OWN_BUILD:
            return super().load_many(kernels)
        import pyopencl as cl
        ctx, _ = cl_context()
        try:
            program = cl.Program(ctx, joined[0]).build(options=build_options(ctx))
        except cl.RuntimeError:
            return super().load_many(kernels)
        return [BuiltCLProgram(program, name) for name in joined[1]]

    def run(self, program: CLProgram, item: Any, out: Buffer, inputs: list[Buffer]) -> None:
        buffers = [out.ensure_allocated()] + [b.ensure_allocated() for b in inputs]
        if (workgroup := workgroup_of(program)) is None:
            program(buffers, launch_size(item))
            return
        groups, threads = workgroup  # chapter 11: exactly these work-groups, of these threads
        _, queue = cl_context()
        program.kernel(queue, (groups * threads,), (threads,), *buffers)
        queue.finish()
