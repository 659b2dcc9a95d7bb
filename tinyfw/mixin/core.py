"""What every mixin reads of the tensor it is mixed into: its shape, dtype and device."""
from __future__ import annotations

from tinyfw.dtype import DType


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
