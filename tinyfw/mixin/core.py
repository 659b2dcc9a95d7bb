"""What every mixin reads of the tensor it is mixed into: its shape, dtype and device."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from tinyfw.dtype import DType, dtypes

Method = TypeVar("Method", bound=Callable[..., Any])

NO_INT64 = frozenset({"WEBGPU"})  # devices without 64-bit ints (WGSL has none)


def index_dtype(device: str | tuple[str, ...]) -> DType:
    """The dtype of the indices an op returns (argmax, sort, topk, nonzero...): torch's int64,
    or int32 on a device without 64-bit ints (WEBGPU; site/correctness.md)."""
    names = device if isinstance(device, tuple) else (device,)
    return dtypes.int32 if any(n.partition(":")[0] in NO_INT64 for n in names) else dtypes.int64


def float32_inside(method: Method) -> Method:
    """A method of one tensor that, given a float16 or bfloat16 tensor, computes in float32 and
    rounds its result to that dtype once, as torch's fused kernels do (softmax, layer norm,
    GELU...): rounding each of its steps would lose most of a 16-bit float's few digits."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.dtype.is_float and self.dtype.itemsize < 4:
            return method(self.cast(dtypes.float32), *args, **kwargs).cast(self.dtype)
        return method(self, *args, **kwargs)
    return wrapper  # type: ignore[return-value]


class TensorCore:
    """The facts of a tensor that every mixin of tinyfw/mixin/ reads. Tensor defines each one
    itself; these stubs only say what the mixins need."""
    __slots__ = ()

    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dimension."""
        raise NotImplementedError

    @property
    def dtype(self) -> DType:
        """The type of the elements."""
        raise NotImplementedError

    @property
    def device(self) -> str:
        """The device holding the elements ("CPU", "CL", ...)."""
        raise NotImplementedError

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        raise NotImplementedError

    def numel(self) -> int:
        """The number of elements."""
        raise NotImplementedError
