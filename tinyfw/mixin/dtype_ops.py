"""What a tensor's dtype says of it (element_size, is_floating_point, nbytes) and the casts
to a dtype by torch's names (float, half, double, int, long, bool, ...), mixed into Tensor.
cast and bitcast are Tensor's own (tinyfw/tensor.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tinyfw.dtype import DType, dtypes
from tinyfw.mixin.core import TensorCore

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor


class DtypeOps(TensorCore):
    """Dtype facts and the casts by name."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---

    def cast(self, dtype: DType | str) -> Tensor:
        """This tensor in dtype; itself where it is already."""
        raise NotImplementedError

    # --- dtype facts ---

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self.dtype.itemsize

    def is_floating_point(self) -> bool:
        """Whether the dtype is a float type."""
        return self.dtype.is_float

    def nbytes(self) -> int:
        """The bytes all elements take: numel() * element_size()."""
        return self.numel() * self.element_size()

    # casts to a dtype, last in the class: a method named float, int or bool would stand for
    # the builtin type in the annotations of every method after it (as mypy reads them)
    def float(self) -> Tensor: return self.cast(dtypes.float32)
    def half(self) -> Tensor: return self.cast(dtypes.float16)
    def double(self) -> Tensor: return self.cast(dtypes.float64)
    def int(self) -> Tensor: return self.cast(dtypes.int32)
    def long(self) -> Tensor: return self.cast(dtypes.int64)
    def bool(self) -> Tensor: return self.cast(dtypes.bool)
    def short(self) -> Tensor: return self.cast(dtypes.int16)
    def bfloat16(self) -> Tensor: return self.cast(dtypes.bfloat16)
    def byte(self) -> Tensor: return self.cast(dtypes.uint8)  # torch's names
    def char(self) -> Tensor: return self.cast(dtypes.int8)
