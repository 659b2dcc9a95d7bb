"""Reading results back: your copyout copies a storage buffer into a staging buffer, maps it and
returns the values. The data is put on the device with wgpu directly."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw import Tensor, dtypes
from tinyfw.dtype import DType
from tinyfw.runtime.ops_webgpu import WebGPUAllocator, WebGPUProgram, wgpu_device

pytestmark = pytest.mark.task("08.readback")


def storage_with(data: bytes) -> object:
    """A storage buffer holding data, made with wgpu itself."""
    import wgpu
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    return wgpu_device().create_buffer_with_data(data=data, usage=usage)


@pytest.mark.parametrize("n", [1, 5, 64, 1000])
def test_copyout_returns_the_buffer_contents(n: int) -> None:
    values = np.linspace(-3, 3, n, dtype=np.float32)
    out = WebGPUAllocator().copyout(storage_with(values.tobytes()), n, dtypes.float32)
    expect_equal(out, values, what=f"copyout of {n} float32", dtype=np.float32)


@pytest.mark.parametrize("dtype", [dtypes.int8, dtypes.int16, dtypes.bool],
                         ids=lambda d: d.name)
def test_narrow_types_come_back_from_i32(dtype: DType) -> None:
    """WGSL stores these as i32: four bytes per element in the buffer, dtype in the result."""
    values = np.array([1, 0, -3, 7, 0], np.int32)
    expected = (values != 0) if dtype.is_bool else values.astype(dtype.np)
    out = WebGPUAllocator().copyout(storage_with(values.tobytes()), 5, dtype)
    expect_equal(out, expected, what=f"copyout of 5 {dtype.name}", dtype=dtype.np)


def test_a_tensor_round_trip() -> None:
    x = np.arange(10, dtype=np.float32) / 4
    expect_equal(Tensor(x, device="WEBGPU").numpy(), x, what="Tensor(x, device='WEBGPU')",
                 dtype=np.float32)


def test_copyout_sees_the_work_queued_before_it() -> None:
    """A shader's writes are queued; the read must wait for them (mapping does)."""
    source = """@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn fill(@builtin(global_invocation_id) id: vec3<u32>) { out[id.x] = f32(id.x) * 0.5f; }
"""
    buffer = storage_with(np.zeros(256, np.float32).tobytes())
    with reference("08.pipeline"):
        WebGPUProgram("fill", source, 1)([buffer], (4, 1))
    out = WebGPUAllocator().copyout(buffer, 256, dtypes.float32)
    expect_close(out, np.arange(256, dtype=np.float32) * 0.5, what="after a dispatch")
