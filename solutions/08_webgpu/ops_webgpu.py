# Solutions of chapter 08, generated from tinyfw/runtime/ops_webgpu.py by `python -m tools.generate`.
# Edit tinyfw/runtime/ops_webgpu.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/08_webgpu --impl=solutions
# generated text id: 910ec19f8569bb1a (lets tools.generate tell your edits apart)
"""The WEBGPU device: WGSL compute shaders through wgpu (Mesa's lavapipe where there is no
GPU)."""
from __future__ import annotations

import contextlib
import copy
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from tinyfw.device import Buffer, Runtime
from tinyfw.renderer.base import workgroup_of
from tinyfw.dtype import DType, dtypes
from tinyfw.renderer.wgsl import WGSL, WIDENED, wgsl_groups, workgroup_dispatch
from tinyfw.runtime.ops_numpy import fold

FIX_WEBGPU = ("install wgpu and a Vulkan driver: `pip install -e '.[webgpu]'` and "
              "`apt-get install mesa-vulkan-drivers` (set WGPU_BACKEND_TYPE=Vulkan on Linux)")


@contextlib.contextmanager
def _runtime_dir() -> Iterator[None]:
    """A private XDG_RUNTIME_DIR while wgpu starts, where the environment has none.

    Starting Vulkan on Linux looks for a Wayland display; without XDG_RUNTIME_DIR, libwayland
    prints "error: XDG_RUNTIME_DIR is invalid or not set in the environment." to stderr (the
    adapter is found all the same). An empty 0700 folder of our own, removed afterwards, gives
    it a place to look and find nothing; every other message wgpu or the driver prints still
    shows. The environment is as before once wgpu has started.
    """
    previous = os.environ.get("XDG_RUNTIME_DIR")
    if not sys.platform.startswith("linux") or (previous and os.path.isdir(previous)):
        yield
        return
    private = tempfile.mkdtemp(prefix="tinyfw-xdg-")  # 0700, as the XDG spec asks
    os.environ["XDG_RUNTIME_DIR"] = private
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = previous
        shutil.rmtree(private, ignore_errors=True)


@functools.cache
def wgpu_device() -> Any:
    """The wgpu device of the first adapter, or a RuntimeError saying what is missing."""
    try:
        import wgpu
    except ImportError as error:
        raise RuntimeError(f"WEBGPU needs wgpu ({error}): {FIX_WEBGPU}") from None
    with _runtime_dir():
        try:
            adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        except Exception as error:  # wgpu raises its own errors when no adapter is there
            raise RuntimeError(f"WEBGPU found no adapter ({error}): {FIX_WEBGPU}") from None
        if adapter is None:
            raise RuntimeError(f"WEBGPU found no adapter: {FIX_WEBGPU}")
        limits = {"max-storage-buffers-per-shader-stage":
                  adapter.limits["max-storage-buffers-per-shader-stage"]}
        return adapter.request_device_sync(required_limits=limits)


def _usage() -> int:
    import wgpu
    return wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


def _padded(nbytes: int) -> int:
    """WebGPU copies move multiples of 4 bytes."""
    return max(-(-nbytes // 4) * 4, 4)


def _stored(dtype: DType) -> np.dtype:
    """How an element is kept in a storage buffer: WGSL has no 8- or 16-bit integers and no
    bool arrays, so those are widened to 32-bit ints; so are bfloat16's 16 bits (kernels read
    them as uint16: tinyfw/codegen/emulate.py)."""
    return np.dtype(np.int32) if dtype in WIDENED or dtype == dtypes.bfloat16 else dtype.np


def _unwidened(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Elements read back from a storage buffer, as dtype again (see _stored)."""
    if dtype.is_bool:
        return values != 0
    if dtype == dtypes.bfloat16:
        return values.astype(np.uint16).view(dtype.np)
    return values.astype(dtype.np)


class WebGPUAllocator:
    """Storage buffers; reads go through a staging buffer mapped for reading."""

    def alloc(self, size: int, dtype: DType) -> Any:
        nbytes = _padded(size * _stored(dtype).itemsize)
        return wgpu_device().create_buffer(size=nbytes, usage=_usage())

    def copyin(self, dest: Any, src: np.ndarray) -> None:
        flat = np.ascontiguousarray(src.reshape(-1))
        if flat.dtype == dtypes.bfloat16.np:
            flat = flat.view(np.uint16)
        if flat.dtype.kind in "biu" and flat.dtype.itemsize < 4:
            flat = flat.astype(np.int32)
        data = flat.tobytes()
        if data:
            wgpu_device().queue.write_buffer(dest, 0, data + b"\0" * (_padded(len(data)) -
                                                                    len(data)))

    def copyout(self, src: Any, size: int, dtype: DType) -> np.ndarray:
        """A storage buffer cannot be mapped: copy it into a staging buffer that can (MAP_READ
        | COPY_DST), map that for reading (which waits for the queue), copy the bytes out."""
        # >>> exercise 08.readback #reading-results-back
        import wgpu
        device = wgpu_device()
        stored = _stored(dtype)
        nbytes = _padded(size * stored.itemsize)
        staging = device.create_buffer(size=nbytes, usage=wgpu.BufferUsage.MAP_READ |
                                       wgpu.BufferUsage.COPY_DST)
        encoder = device.create_command_encoder()
        encoder.copy_buffer_to_buffer(src, 0, staging, 0, nbytes)
        device.queue.submit([encoder.finish()])
        staging.map_sync(wgpu.MapMode.READ)  # waits for the queue, then maps
        data = bytes(staging.read_mapped())
        staging.unmap()
        staging.destroy()
        values = np.frombuffer(data, dtype=stored, count=size)
        return _unwidened(values, dtype)
        # <<< exercise


class WebGPUProgram:
    """A compute pipeline, built once per kernel and reused by every launch."""

    def __init__(self, name: str, source: str, n_buffers: int):
        """Shader module, bind group layout (binding 0 the output, read-write; the inputs
        read-only), pipeline layout, compute pipeline with entry point name."""
        # >>> exercise 08.pipeline #running-a-shader
        import wgpu
        device = wgpu_device()
        module = device.create_shader_module(code=source)
        entries = [{"binding": i, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": wgpu.BufferBindingType.storage if i == 0 else
                               wgpu.BufferBindingType.read_only_storage}}
                   for i in range(n_buffers)]
        self.layout = device.create_bind_group_layout(entries=entries)
        pipeline_layout = device.create_pipeline_layout(bind_group_layouts=[self.layout])
        self.pipeline = device.create_compute_pipeline(
            layout=pipeline_layout, compute={"module": module, "entry_point": name})
        # <<< exercise

    def __call__(self, buffers: list[Any], groups: tuple[int, int]) -> None:
        """A bind group of the buffers, one compute pass dispatching the workgroups, submitted
        to the queue (not waited for: a later read waits)."""
        # >>> exercise 08.pipeline #running-a-shader
        device = wgpu_device()
        bind = device.create_bind_group(layout=self.layout, entries=[
            {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
            for i, b in enumerate(buffers)])
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, bind)
        compute.dispatch_workgroups(*groups, 1)
        compute.end()
        device.queue.submit([encoder.finish()])
        # <<< exercise


class WebGPURuntime(Runtime):
    """The WEBGPU device: kernels rendered as WGSL, which wgpu compiles into one pipeline per
    kernel (WebGPUProgram; no compiler of tinyfw's own)."""

    def __init__(self) -> None:
        device = wgpu_device()
        # a kernel binds its output and every input as a storage buffer: the scheduler keeps
        # each kernel within this adapter's limit (tinyfw/engine/schedule.py, max_buffers),
        # which this device's copy of WGSL says (its other fields are WGSL's: renderer/wgsl.py)
        renderer = copy.copy(WGSL)
        renderer.max_buffers = device.limits["max-storage-buffers-per-shader-stage"]
        renderer.fold = fold  # WGSL's constants computed by the NUMPY device's rules
        super().__init__("WEBGPU", WebGPUAllocator(), renderer=renderer, compiler=None,
                         program=WebGPUProgram)
        from tinyfw.runtime.graph_webgpu import WebGPUGraph  # (it imports this module)
        self.graph = WebGPUGraph

    def load(self, name: str, binary: Any, buffers: int) -> WebGPUProgram:
        """The pipeline of a WGSL source (the binary: wgpu compiles it) binding `buffers`."""
        return WebGPUProgram(name, binary, buffers)

    def run(self, program: WebGPUProgram, item: Any, out: Buffer, inputs: list[Buffer]) -> None:
        workgroup = workgroup_of(program)  # (chapter 11's work-groups: exactly these)
        program([out.ensure_allocated()] + [b.ensure_allocated() for b in inputs],
                wgsl_groups(item) if workgroup is None else workgroup_dispatch(workgroup[0]))

    def synchronize(self) -> None:
        """Reads 4 bytes back: mapping a buffer waits for the queue (wgpu 0.32's
        on_submitted_work_done_sync does not work)."""
        import wgpu
        device = wgpu_device()
        probe = device.create_buffer(size=4, usage=wgpu.BufferUsage.MAP_READ |
                                     wgpu.BufferUsage.COPY_DST)
        device.queue.submit([])
        probe.map_sync(wgpu.MapMode.READ)
        probe.unmap()
        probe.destroy()
