"""What Python and numpy ask of a tensor (mixed into Tensor): its value on the host (numpy,
data, tolist, item), repr, bool and len, and its sizes (size, max_shape, max_numel). Each read
goes through Tensor._read (tinyfw/tensor.py), which computes the tensor first."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tinyfw.dtype import dtypes
from tinyfw.helpers import normalize_axis, prod
from tinyfw.mixin.core import TensorCore

if TYPE_CHECKING:
    from tinyfw.tensor import Scalar


class ProtocolOps(TensorCore):
    """The host value of a tensor, and Python's protocol (repr, bool, len)."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---

    @property
    def requires_grad(self) -> bool | None: raise NotImplementedError

    def _read(self, copy: bool) -> np.ndarray:
        """The value on the host, in this tensor's shape (a copy of the caller's own if copy)."""
        raise NotImplementedError

    # --- sizes ---

    @property
    def max_shape(self) -> tuple[int, ...]:
        """The largest shape this tensor can take: its shape (tinyfw's shapes are not symbolic,
        tinygrad's may be)."""
        return self.shape

    def max_numel(self) -> int:
        """The number of elements of max_shape."""
        return prod(self.max_shape)

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        return self.shape if dim is None else self.shape[normalize_axis(dim, self.ndim)]

    # --- Python's protocol ---

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        body = np.array2string(self.numpy(), separator=", ", prefix="Tensor(")
        return f"Tensor({body}, dtype={self.dtype.name}, device={self.device}{grad})"

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {self.numel()} values is ambiguous")
        return bool(self.item())

    # --- the value on the host ---

    def numpy(self) -> np.ndarray:
        """The value as a numpy array (a copy)."""
        return self._read(copy=True)

    def data(self) -> memoryview:
        """The value's bytes as a memoryview (a copy) in the tensor's shape, typed by its dtype
        (bfloat16: as 2-byte unsigned ints, which Python's buffer formats lack)."""
        arr = self.numpy().copy(order="C")  # (ascontiguousarray makes a 0-d array 1-d)
        if self.dtype == dtypes.bfloat16:
            arr = arr.view(np.uint16)
        return memoryview(arr)

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def item(self) -> Scalar:
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(
                f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.numpy().reshape(()).item()
