"""Memory on the device: your CLAllocator allocates OpenCL buffers and copies to and from them;
pyopencl, used directly here, checks what actually landed in device memory."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_equal
from tinyfw import Tensor, dtypes
from tinyfw.dtype import DType
from tinyfw.runtime.ops_cl import CLAllocator, cl_context

pytestmark = pytest.mark.task("06.cl_memory")

DTYPES = [dtypes.float32, dtypes.int32, dtypes.int8, dtypes.float16, dtypes.int64]


def host(dtype: DType, n: int) -> np.ndarray:
    return (np.arange(n) * 3 - n).astype(dtype.np)


def read_directly(buffer: object, n: int, dtype: DType) -> np.ndarray:
    """The first n elements of an OpenCL buffer, read with pyopencl itself."""
    import pyopencl as cl
    out = np.empty(n, dtype=dtype.np)
    cl.enqueue_copy(cl_context()[1], out, buffer)
    return out


def test_alloc_makes_a_buffer_of_the_right_size() -> None:
    import pyopencl as cl
    buffer = CLAllocator().alloc(10, dtypes.float32)
    assert isinstance(buffer, cl.Buffer), \
        f"alloc() should return a pyopencl.Buffer, got {type(buffer).__name__}"
    assert buffer.size >= 40, f"10 float32 need 40 bytes, the buffer has {buffer.size}"


def test_alloc_of_nothing_still_makes_a_buffer() -> None:
    """OpenCL refuses buffers of 0 bytes; a tensor with no elements still needs one."""
    buffer = CLAllocator().alloc(0, dtypes.float32)
    assert buffer.size >= 1


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_copyin_puts_the_data_on_the_device(dtype: DType) -> None:
    allocator = CLAllocator()
    data = host(dtype, 37)
    buffer = allocator.alloc(37, dtype)
    allocator.copyin(buffer, data)
    expect_equal(read_directly(buffer, 37, dtype), data, what=f"device memory after copyin "
                 f"of {dtype.name}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_copyout_reads_the_device_memory(dtype: DType) -> None:
    import pyopencl as cl
    allocator = CLAllocator()
    data = host(dtype, 23)
    buffer = allocator.alloc(23, dtype)
    cl.enqueue_copy(cl_context()[1], buffer, data)
    out = allocator.copyout(buffer, 23, dtype)
    expect_equal(out, data, what=f"copyout of {dtype.name}", dtype=dtype.np)


def test_copies_of_nothing_do_nothing() -> None:
    allocator = CLAllocator()
    buffer = allocator.alloc(0, dtypes.int32)
    allocator.copyin(buffer, np.zeros(0, np.int32))
    out = allocator.copyout(buffer, 0, dtypes.int32)
    expect_equal(out, np.zeros(0, np.int32), what="copyout of 0 elements")


def test_tensors_move_between_devices() -> None:
    """.to() copies out of one device's memory and into another's."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    on_cl = Tensor(x).to("CL")
    assert on_cl.device == "CL"
    expect_equal(on_cl.numpy(), x, what="Tensor(x).to('CL').numpy()")
    back = on_cl.to("NUMPY")
    expect_equal(back.numpy(), x, what="a tensor copied CPU -> CL -> NUMPY")
