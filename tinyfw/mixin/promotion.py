"""PyTorch's rules for the two operands of a binary op: the shape they broadcast to, the dtype
they promote to, and what a Python int past int64 stands for. Tensor._operands applies them;
the mixins' ops that check or compute a result type read them too."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tinyfw.dtype import DType, category, promote_types

if TYPE_CHECKING:
    from tinyfw.mixin.core import TensorCore


def _past_int64(dtype: DType, value: int) -> int | float:
    """A Python int operand past int64, as torch takes it: one of uint64 (2**63 to 2**64 - 1)
    is its float value to a float tensor and its bits to an int tensor (wrapped into the
    tensor's dtype, as every int operand is); a bool tensor cannot be promoted with uint64
    (RuntimeError), and any other int is torch's OverflowError."""
    if value < -2 ** 63:
        raise OverflowError("can't convert negative int to unsigned")
    if value >= 2 ** 64:
        raise OverflowError(f"int too big to convert: {value}")
    if dtype.is_bool:
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                           "attempted to promote Bool and UInt64")
    return float(value) if dtype.is_float else value - 2 ** 64


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The shape two shapes broadcast to, or PyTorch's RuntimeError naming the mismatch."""
    if a == b:  # (most operands: nothing to work out)
        return a
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y})"
                               f" at non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _promote_tensors(a: TensorCore, b: TensorCore) -> DType:
    """PyTorch's rule: a 0-d tensor only sets the dtype when it is of a higher category."""
    if a.dtype == b.dtype:  # (most operands: either rule gives that dtype)
        return a.dtype
    if (a.ndim == 0) != (b.ndim == 0):
        dim_t, zero_t = (a, b) if b.ndim == 0 else (b, a)
        if category(zero_t.dtype) <= category(dim_t.dtype):
            return dim_t.dtype
    return promote_types(a.dtype, b.dtype)
