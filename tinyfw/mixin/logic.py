"""Comparisons, logic and bit operations (mixed into Tensor): <, >, <=, >=, ==, != (eq, ne),
logical_not, &, |, ^, ~ (bitwise_and, bitwise_or, bitwise_xor, bitwise_not) and the shifts
<< and >> (lshift, rshift), with torch's dtypes and its results for shift counts past a
dtype's bits. Only CMPLT and CMPNE are primitives: == is not !=, <= is < or ==."""
from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from tinyfw.dtype import DType, promote_types, wrap_int
from tinyfw.mixin.core import TensorCore
from tinyfw.mixin.promotion import _past_int64, broadcast_shape
from tinyfw.uop.ops import Ops

if TYPE_CHECKING:
    from tinyfw.tensor import Scalar, Tensor


class LogicOps(TensorCore):
    """The comparisons, logical and bitwise operators, and the shifts."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: the arithmetic (*, idiv, floordiv, pow), cast, bool, full_like
    # and where.

    def _operands(self, other: Tensor | Scalar, reverse: bool = False,
                  dtype: DType | None = None) -> tuple[Tensor, Tensor]:
        """Both operands as tensors of one dtype (PyTorch promotion) and one shape (broadcast)."""
        raise NotImplementedError

    def _binary(self, op: Ops, other: Tensor | Scalar, reverse: bool = False) -> Tensor:
        """op of this tensor and other, promoted and broadcast (reverse: other op self)."""
        raise NotImplementedError

    def _broadcast_to(self, shape: tuple[int, ...]) -> Tensor:
        """This tensor broadcast to shape (leading axes of size 1 added, then expanded)."""
        raise NotImplementedError

    # --- comparisons and logic ---

    def __lt__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._binary(Ops.CMPLT, x)
    def __gt__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._binary(Ops.CMPLT, x, True)
    def __ne__(self: Tensor, x: Tensor | Scalar) -> Tensor:  # type: ignore[override]
        return self._binary(Ops.CMPNE, x)

    def __eq__(self: Tensor, x: Tensor | Scalar) -> Tensor:  # type: ignore[override]
        return (self != x).logical_not()

    def eq(self: Tensor, x: Tensor | Scalar) -> Tensor:
        """self == x elementwise, as torch.eq."""
        return self == x

    def ne(self: Tensor, x: Tensor | Scalar) -> Tensor:
        """self != x elementwise, as torch.ne."""
        return self != x

    def __le__(self: Tensor, x: Tensor | Scalar) -> Tensor: return (self < x) | (self == x)
    def __ge__(self: Tensor, x: Tensor | Scalar) -> Tensor: return (self > x) | (self == x)

    def logical_not(self: Tensor) -> Tensor:
        return self.bool()._binary(Ops.CMPNE, True)

    def _bitwise(self: Tensor, op: Ops, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        a, b = self._operands(x, reverse)
        if a.dtype.is_float:  # torch raises NotImplementedError here too
            raise NotImplementedError(f"bitwise {op.name.lower()} is only defined for bool and "
                                      f"integer tensors, not {a.dtype.name}")
        return a._result(a.uop.alu(op, b.uop), b)

    def __and__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._bitwise(Ops.AND, x)
    def __or__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._bitwise(Ops.OR, x)
    def __xor__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._bitwise(Ops.XOR, x)
    def __rand__(self: Tensor, x: Scalar) -> Tensor: return self._bitwise(Ops.AND, x, True)
    def __ror__(self: Tensor, x: Scalar) -> Tensor: return self._bitwise(Ops.OR, x, True)
    def __rxor__(self: Tensor, x: Scalar) -> Tensor: return self._bitwise(Ops.XOR, x, True)

    def bitwise_and(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        """self & x for bool and integer tensors (x & self when reverse)."""
        return self._bitwise(Ops.AND, x, reverse)

    def bitwise_or(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        """self | x for bool and integer tensors (x | self when reverse)."""
        return self._bitwise(Ops.OR, x, reverse)

    def bitwise_xor(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        """self ^ x for bool and integer tensors (x ^ self when reverse)."""
        return self._bitwise(Ops.XOR, x, reverse)

    def __invert__(self: Tensor) -> Tensor:
        if self.dtype.is_float:
            raise TypeError("~ (bitwise not) is only defined for bool and integer tensors")
        return self.logical_not() if self.dtype.is_bool else self ^ -1

    def bitwise_not(self: Tensor) -> Tensor:
        """~x for bool and integer tensors."""
        if self.dtype.is_float:
            raise NotImplementedError(f'"bitwise_not" not implemented for {self.dtype.name}')
        return ~self

    def _shift(self: Tensor, x: int, left: bool) -> Tensor:
        """self << x or self >> x (arithmetic: rounds down) for an int tensor and a Python int,
        the count taken in the tensor's dtype as torch takes it (int8 << 260 shifts by 4); a
        negative count, or one past the dtype's bits, shifts every bit out."""
        name = "lshift" if left else "rshift"
        if isinstance(x, np.integer):  # a numpy int is a Python int to torch
            x = int(x)
        if type(x) is int and not -2 ** 63 <= x < 2 ** 63:
            _past_int64(self.dtype, x)  # (torch's errors past uint64; uint64's range wraps)
        if self.dtype.is_float or self.dtype.is_bool:
            raise NotImplementedError(f'"{name}" not implemented for {self.dtype.name}')
        if isinstance(x, TensorCore):  # (a Tensor)
            return self._shift_by_tensor(cast("Tensor", x), left)
        if not isinstance(x, int) or isinstance(x, bool):
            raise NotImplementedError(f"{name} of a {self.dtype.name} tensor by a "
                                      f"{type(x).__name__}: tinyfw shifts by an int or an int "
                                      "tensor only")
        x = wrap_int(x, self.dtype)  # torch's count: in the tensor's dtype
        bits = self.dtype.itemsize * 8 - (0 if self.dtype.is_unsigned else 1)  # value bits
        if x < 0:  # every bit shifted out, as torch (C leaves it undefined)
            x = bits + 1
        if left and x > bits:  # every bit shifted out (torch's result; C leaves it undefined)
            return self * 0
        if left:  # 2**bits does not fit the dtype: its last doubling apart
            return self * (1 << x) if x < bits else self * (1 << (bits - 1)) * 2
        if self.dtype.is_unsigned and x < bits:  # no sign: C's division is already the floor
            return self.idiv(1 << x)
        return self.floordiv(1 << x) if x < bits else (self < 0).where(-1, 0).cast(self.dtype)

    def _shift_by_tensor(self: Tensor, counts: Tensor, left: bool) -> Tensor:
        """self << counts or self >> counts elementwise, in the two int dtypes' promotion, as
        torch: a count below 0 or past the dtype's bits shifts everything out (0, or -1 for a
        negative value shifted right); shifts by 1, 2, 4, ... picked by the count's bits."""
        name = "lshift" if left else "rshift"
        for t in (self, counts):
            if t.dtype.is_float or t.dtype.is_bool:
                raise NotImplementedError(f'"{name}" not implemented for {t.dtype.name}')
        dtype = promote_types(self.dtype, counts.dtype)
        x, n = self.cast(dtype), counts.cast(dtype)
        x, n = x._broadcast_to(broadcast_shape(x.shape, n.shape)), \
            n._broadcast_to(broadcast_shape(x.shape, n.shape))
        bits = dtype.itemsize * 8
        in_range = (n >= 0) & (n < bits)
        n = in_range.where(n, 0)
        out = x
        for k in range(bits.bit_length() - 1):  # 1, 2, 4, ... bits / 2
            out = (n & (1 << k) != 0).where(out._shift(1 << k, left), out)
        gone = x * 0 if left or dtype.is_unsigned else (x < 0).where(-1, 0).cast(dtype)
        return in_range.where(out, gone)

    def lshift(self: Tensor, x: int) -> Tensor: return self._shift(x, True)
    def rshift(self: Tensor, x: int) -> Tensor: return self._shift(x, False)
    def __lshift__(self: Tensor, x: int) -> Tensor: return self._shift(x, True)
    def __rshift__(self: Tensor, x: int) -> Tensor: return self._shift(x, False)

    def _shifted_scalar(self: Tensor, x: int, left: bool) -> Tensor:
        """x << self or x >> self: a Python int shifted by each element of an int tensor.
        A count past the dtype's bits shifts every bit out, as torch: 0 (or -1 for x >> n of a
        negative x); a negative count gives torch's 0 too."""
        name = "lshift" if left else "rshift"
        if self.dtype.is_float or self.dtype.is_bool or not isinstance(x, int) \
                or isinstance(x, bool):
            raise NotImplementedError(f'"{name}" not implemented for {type(x).__name__} and '
                                      f"{self.dtype.name}")
        bits = self.dtype.itemsize * 8
        base = self.full_like(x)
        in_range = (self >= 0) & (self < bits)
        count = in_range.where(self, 0)
        if left:  # x * 2**count, the last doubling apart so that 2**count fits the dtype
            half = (count > 0).where(count - 1, 0)
            power = base.full_like(2).pow(half) * (count > 0).where(2, 1).cast(self.dtype)
            return in_range.where(base * power, 0).cast(self.dtype)
        out = base
        for k in range(bits.bit_length()):  # out >> count, one bit of count at a time
            bit = (count // (1 << k)) % 2 == 1
            out = bit.where(out._shift(1 << k, False) if (1 << k) < bits else out, out)
        gone = (self >= bits).where(-1 if x < 0 else 0, 0).cast(self.dtype)
        return in_range.where(out, gone).cast(self.dtype)

    def __rlshift__(self: Tensor, x: int) -> Tensor: return self._shifted_scalar(x, True)
    def __rrshift__(self: Tensor, x: int) -> Tensor: return self._shifted_scalar(x, False)
