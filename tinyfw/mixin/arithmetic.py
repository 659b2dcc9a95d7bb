"""Arithmetic (mixed into Tensor): +, -, *, /, //, % and their methods (add, sub, mul, div,
floordiv, mod, idiv), maximum and minimum, with PyTorch's type promotion and broadcasting
(Tensor._operands), its integer division by zero and its values at the edges, and pow, with
torch's gradients given by hand (gradient overrides)."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tinyfw.device import Device
from tinyfw.dtype import DType, dtypes, round_float, scalar_result_type
from tinyfw.engine import realize
from tinyfw.helpers import shape_str
from tinyfw.mixin.core import TensorCore
from tinyfw.mixin.promotion import _past_int64
from tinyfw.uop.ops import Ops, UOp

if TYPE_CHECKING:
    from tinyfw.tensor import Scalar, Tensor


def scalar_first(swaps: bool) -> Callable[[Callable[..., Tensor]], Callable[..., Tensor]]:
    """For a binary method called as Tensor.f(2, t), as torch.f(2, t) can be: computed as
    t.f(2, reverse=True) where torch computes it (swaps), else torch's TypeError."""
    def wrap(method: Callable[..., Tensor]) -> Callable[..., Tensor]:
        @functools.wraps(method)
        def call(self: Any, x: Any, *args: Any, **kwargs: Any) -> Tensor:
            if isinstance(self, TensorCore):  # (a Tensor)
                return method(self, x, *args, **kwargs)
            if swaps and isinstance(x, TensorCore) and isinstance(self, (bool, int, float)) \
                    and not args and not kwargs.pop("reverse", False):
                return method(x, self, True, **kwargs)
            raise TypeError(f"{method.__name__}(): argument 'input' (position 1) must be "
                            f"Tensor, not {type(self).__name__}")
        return call
    return wrap


class ArithmeticOps(TensorCore):
    """The arithmetic operators and their methods."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: the comparisons and logic (<, ==, !=, &, |, where), the math
    # (neg, abs, sqrt, rsqrt, reciprocal, exp2, log2, trunc, floor, fmod, isinf, isfinite),
    # cast and _with_gradient.

    def _operands(self, other: Tensor | Scalar, reverse: bool = False,
                  dtype: DType | None = None) -> tuple[Tensor, Tensor]:
        """Both operands as tensors of one dtype (PyTorch promotion) and one shape (broadcast)."""
        raise NotImplementedError

    def _binary(self, op: Ops, other: Tensor | Scalar, reverse: bool = False) -> Tensor:
        """op of this tensor and other, promoted and broadcast (reverse: other op self)."""
        raise NotImplementedError

    def _floating(self) -> Tensor:
        """Self, cast to the default float if it is an int or bool."""
        raise NotImplementedError

    # --- the arithmetic ---

    @scalar_first(swaps=True)
    def add(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        return self._binary(Ops.ADD, x, reverse)

    @scalar_first(swaps=True)
    def mul(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        return self._binary(Ops.MUL, x, reverse)

    @scalar_first(swaps=True)
    def sub(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        a, b = self._operands(x, reverse)
        if a.dtype.is_bool:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        return a.add(b.neg())

    @scalar_first(swaps=True)
    def div(self: Tensor, x: Tensor | Scalar, reverse: bool = False,
            rounding_mode: str | None = None) -> Tensor:
        """True division (ints and bools divide as floats), or rounded toward zero ("trunc") or
        down ("floor"), which keep an integer dtype, as torch.div. A Python number divides an
        int tensor as its own value, not wrapped into the tensor's dtype (as torch: a uint8
        tensor / 300 is a third of a hundredth)."""
        if rounding_mode is None and not self.dtype.is_float and not isinstance(x, TensorCore):
            x = x.item() if isinstance(x, np.generic) else x
            if not reverse and type(x) is int and not -2 ** 63 <= x < 2 ** 63:
                _past_int64(self.dtype, x)  # (torch's errors: a bool tensor, past uint64)
            return self._floating().div(x, reverse)
        a, b = self._operands(x, reverse)
        if rounding_mode == "trunc":
            return a.div(b).trunc() if a.dtype.is_float else a.idiv(b)
        if rounding_mode == "floor":
            return a.floordiv(b)
        if rounding_mode is not None:
            raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                               f"but found '{rounding_mode}'")
        a, b = a._floating(), b._floating()
        return a._binary(Ops.FDIV, b)

    def idiv(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        """Integer division rounding toward zero (C)."""
        a, b = self._operands(x, reverse)
        return a._divided(b, a._result(a.uop.alu(Ops.IDIV, b.uop), b))

    def _divided(self: Tensor, divisor: Tensor, out: Tensor) -> Tensor:
        """out, a division of self by divisor, raising torch's error for an integer division by
        zero: at once for a constant divisor, else when out is computed (a deferred check)."""
        if self.dtype.is_float:
            return out
        below = divisor.uop
        while below.op in (Ops.RESHAPE, Ops.EXPAND):
            below = below.src[0]
        if below.op is Ops.CONST:  # a Python number
            if below.arg == 0:
                raise RuntimeError("ZeroDivisionError: integer division (// or %) by the number 0")
            return out
        realize.attach_check(out.uop, realize.Check(
            (divisor == 0).any().uop, RuntimeError,
            f"ZeroDivisionError: integer division (// or %) of tensors of shape "
            f"{shape_str(out.shape)} by a divisor holding 0"))
        return out

    @scalar_first(swaps=True)
    def floordiv(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        """Division rounding down, as Python's // (and torch's)."""
        a, b = self._operands(x, reverse)
        if a.dtype.is_float:
            return a.div(b).floor()
        q = a.idiv(b)
        inexact = (a._binary(Ops.MOD, b) != 0) & ((a < 0) != (b < 0))
        return a._divided(b, q - inexact.cast(q.dtype))

    @scalar_first(swaps=True)
    def mod(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        """Remainder with the sign of the divisor, as Python's % (and torch's), as torch
        computes it: C's fmod (exact), plus the divisor where the two signs differ, so that
        1 % inf is 1 and -1 % inf is inf. On a device without an exact fmod (WEBGPU),
        a - floor(a / b) * b, which rounds (a large quotient loses the remainder), with torch's
        signs of zero and values by an infinite divisor."""
        a, b = self._operands(x, reverse)
        if a.dtype.is_bool:
            raise NotImplementedError('"remainder_cpu" not implemented for \'Bool\'')
        devices = a.device if isinstance(a.device, tuple) else (a.device,)
        if not a.dtype.is_float or all(Device[d].has_fmod for d in devices):
            r = a.fmod(b)  # (ints too: r + b cannot overflow where a - (a // b) * b can)
            return ((r != 0) & ((r < 0) != (b < 0))).where(r + b, r)
        r = a - a.floordiv(b) * b
        r = (r == 0).where(a * 0, r)  # a zero with the dividend's sign, as fmod's
        by_inf = ((a == 0) | ((a < 0) == (b < 0))).where(a, b)
        return (b.isinf() & a.isfinite()).where(by_inf, r)

    @scalar_first(swaps=False)
    def maximum(self: Tensor, x: Tensor | Scalar) -> Tensor:
        return self._binary(Ops.MAX, x)

    @scalar_first(swaps=False)
    def minimum(self: Tensor, x: Tensor | Scalar) -> Tensor:
        a, b = self._operands(x)
        if not a.dtype.is_float:
            return (a < b).where(a, b)
        return -((-a).maximum(-b))  # ties share the gradient, as torch.minimum

    # --- pow ---
    @scalar_first(swaps=True)
    def pow(self: Tensor, x: Tensor | Scalar, reverse: bool = False) -> Tensor:
        """self ** x, with torch's values at the edges, which are C's pow's: 1 ** nan and
        (-1) ** inf are 1, (-inf) ** 1.5 is inf, (-0.0) ** -1 is -inf. Integer powers square and
        multiply (exact; ints stay ints); a float32 or float64 to the power 0.5 or -0.5 is sqrt
        or 1 / sqrt, as in torch; other powers go through exp2 and log2 of the magnitude, with
        the sign and the edges handled apart."""
        x = x.item() if isinstance(x, np.generic) else x
        if type(x) is int and not -2 ** 63 <= x < 2 ** 63:  # torch's: an exponent is an int64
            if not reverse and not self.dtype.is_float and 0 < x < 2 ** 64:
                raise RuntimeError("value cannot be converted to type int64_t without overflow")
            x = _past_int64(self.dtype, x)
        if not reverse and self.dtype == dtypes.float16 and isinstance(x, (int, float)) and \
                math.isfinite(x) and abs(x) > dtypes.finite_max(dtypes.float16):
            raise RuntimeError("value cannot be converted to type c10::Half without overflow")
        if not reverse and isinstance(x, (int, float)) and not isinstance(x, bool):
            return self._scalar_power(x)
        a, b = self._operands(x, reverse)
        if not a.dtype.is_float:
            return a._power_by_bits(b)
        if reverse and isinstance(x, (int, float)):
            base = round_float(x, a.dtype)  # x as a's dtype holds it
            power = a._positive_base_power(base, b) if 0 < base < math.inf and base != 1 \
                else a._float_power(b)
            return power._with_gradient(_scalar_base_power_gradient, (b,), (x, type(power)))
        power = a._float_power(b)
        return power._with_gradient(_power_gradient, (a, b), (type(power),))

    def _scalar_power(self: Tensor, c: int | float) -> Tensor:
        """self ** c for a Python number c, in torch's dtype (an int tensor to the power 2.0 is
        a float one)."""
        a = self.cast(scalar_result_type(self.dtype, c))
        if isinstance(c, int) or c.is_integer():
            if c >= 0:  # products, whose gradient (by the product rule) is torch's already
                return a._integer_power(int(c))
            out = a._integer_power(int(c))  # a reciprocal: at 0 its gradient would be inf * 0
        elif abs(c) == 0.5 and a.dtype in (dtypes.float32, dtypes.float64):
            out = a.sqrt() if c > 0 else a.rsqrt()  # torch's own (so (-0.0) ** 0.5 is -0.0)
        else:
            exponent = a._operands(c)[1]  # c as a tensor of a's dtype and shape
            out = a._float_power(exponent)
        return out._with_gradient(_scalar_power_gradient, (a,), (c, type(out)))

    def _positive_base_power(self: Tensor, base: float, b: Tensor) -> Tensor:
        """base ** b for a number 0 < base < inf, base != 1, already rounded to self's dtype
        (self: base as a tensor like b; a base that rounds to 0, 1 or inf takes _float_power's
        edges): the few ops of exp2(b * log2 base), log2 base computed here once. No edge needs
        handling apart: b = 0 gives 1, nan gives nan, +-inf gives 0 or inf, as C's pow (an
        optimizer's `b1 ** t`, built for every parameter at every step, was 40 ops)."""
        if self.dtype.itemsize <= 4 and Device[self.device].has_float64:
            return (b.double() * math.log2(base)).exp2().cast(self.dtype)  # see _float_power
        return (b * math.log2(base)).exp2()

    def _float_power(self: Tensor, b: Tensor) -> Tensor:
        """self ** b for floats of one dtype and shape, as C's pow: the magnitude from exp2 and
        log2; 1 ** b and self ** 0 are 1 (even for nan); +-0 and -inf to an odd integer power keep
        their sign; only a finite negative number to a non-integer power is nan."""
        a = self
        zero = a == 0
        sign_bit = (a < 0) | (zero & (a.reciprocal() < 0))  # -0.0 included
        base = zero.where(1.0, a.abs())
        if a.dtype.itemsize <= 4 and Device[a.device].has_float64:
            # exp2 multiplies the rounding error of b * log2|a| by |b log2 a| ln 2 (up to ~60
            # ulp of a float32 result); in float64 that product is exact enough to round once
            magnitude = (b.double() * base.double().log2()).exp2().cast(a.dtype)
        else:  # (float64 itself, and WEBGPU, which has no float64: the error grows as above)
            magnitude = (b * base.log2()).exp2()
        # nan in, nan out (said here: some OpenCL compilers' exp2 of a nan is not nan), but
        # 1 ** b is 1, even 1 ** nan and 1 ** inf (exp2(inf * 0) is nan)
        magnitude = (base.isnan() | b.isnan()).where(math.nan, magnitude)
        magnitude = (base == 1).where(1.0, magnitude)
        at_zero = (b > 0).where(0.0, (b < 0).where(math.inf, math.nan)).cast(a.dtype)
        magnitude = zero.where(at_zero, magnitude)
        integer = b.trunc() == b  # +-inf too: C counts them even
        odd = integer & ((b.abs() % 2) == 1)
        signed = (sign_bit & odd).where(-magnitude, magnitude)
        undefined = (a < 0) & (a > -math.inf) & integer.logical_not()
        return (b == 0).where(1.0, undefined.where(math.nan, signed))

    def _integer_power(self: Tensor, n: int) -> Tensor:
        """self ** n for a Python int n, by squaring and multiplying."""
        if n < 0 and not self.dtype.is_float:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if n == 0:  # ones made from self, so that self's gradient is zeros (as in torch)
            ones = ((self == self) | (self != self)).cast(self.dtype)
            return self._result(ones.uop, self)
        out, base, k = None, self, abs(n)
        while k:
            if k & 1:
                out = base if out is None else out * base
            k >>= 1
            if k:
                base = base * base
        assert out is not None
        return out.reciprocal() if n < 0 else out

    def _power_by_bits(self: Tensor, exponent: Tensor) -> Tensor:
        """Integer self ** an integer tensor: multiply in self**(2**i) for each set bit. A
        negative exponent gives what torch gives: 1 for a base of 1, +-1 for -1, else 0."""
        out, base, rest = self.ones_like(), self, exponent
        for _ in range(exponent.dtype.itemsize * 8 - 1):
            out = (rest % 2 == 1).where(out * base, out)
            base, rest = base * base, rest // 2
        # chosen at the end (the loop's result is dropped there): a loop on where(e < 0, 0, e)
        # instead makes gcc 12 -O2 take minutes to compile the kernel
        negative, odd = exponent < 0, (exponent % 2) != 0
        of_negative = (self == 1).where(1, (self == -1).where(odd.where(-1, 1), 0))
        return negative.where(of_negative.cast(out.dtype), out)

    # arithmetic operators
    def __add__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self.add(x)
    def __radd__(self: Tensor, x: Scalar) -> Tensor: return self.add(x, True)
    def __sub__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self.sub(x)
    def __rsub__(self: Tensor, x: Scalar) -> Tensor: return self.sub(x, True)
    def __mul__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self.mul(x)
    def __rmul__(self: Tensor, x: Scalar) -> Tensor: return self.mul(x, True)
    def __truediv__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self.div(x)
    def __rtruediv__(self: Tensor, x: Scalar) -> Tensor: return self.div(x, True)
    def __floordiv__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self.floordiv(x)
    def __rfloordiv__(self: Tensor, x: Scalar) -> Tensor: return self.floordiv(x, True)
    def __mod__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self.mod(x)
    def __rmod__(self: Tensor, x: Scalar) -> Tensor: return self.mod(x, True)
    def __pow__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self.pow(x)
    def __rpow__(self: Tensor, x: Scalar) -> Tensor: return self.pow(x, True)
    def __neg__(self: Tensor) -> Tensor: return self.neg()
    def __abs__(self: Tensor) -> Tensor: return self.abs()

    # tinygrad's small helpers on several operands (ufix: in tinyfw/tensor.py)
    def usum(self: Tensor, *others: Tensor | Scalar) -> Tensor:
        """self + each of others (| for bool), left to right."""
        out = self
        for x in others:
            out = out | x if self.dtype.is_bool else out + x
        return out

    def uprod(self: Tensor, *others: Tensor | Scalar) -> Tensor:
        """self * each of others (& for bool), left to right."""
        out = self
        for x in others:
            out = out & x if self.dtype.is_bool else out * x
        return out


# torch's gradients of pow (its derivatives.yaml), as GradientOverride rules: each is computed
# with pow itself, so the edges (0, inf, negative bases) come out as torch's do. Each takes the
# class of pow's result (Tensor) as its last parameter, to make tensors of the UOps it is given.
def _scalar_power_gradient(grad: UOp, node: UOp, base: UOp, c: float, tensor: type[Tensor]
                           ) -> tuple[UOp]:
    """d(base ** c)/d base for a Python number c: c * base ** (c - 1) (zeros for c = 0)."""
    g, a = tensor(grad), tensor(base)
    if c == 0:
        return (a.zeros_like().uop,)
    return ((g * (a.pow(c - 1) * c)).uop,)


def _power_gradient(grad: UOp, node: UOp, base: UOp, exponent: UOp, tensor: type[Tensor]
                    ) -> tuple[UOp, UOp]:
    """The gradients of base ** exponent: exponent * base ** (exponent - 1) (0 where the
    exponent is 0) and base ** exponent * ln(base) (0 where base is 0 and the exponent is not
    negative)."""
    g, out, a, b = tensor(grad), tensor(node), tensor(base), tensor(exponent)
    to_base = (b == 0).where(0.0, g * (b * a.pow(b - 1)))
    to_exponent = g * ((a == 0) & (b >= 0)).where(0.0, out * a.log())
    return to_base.uop, to_exponent.uop


def _scalar_base_power_gradient(grad: UOp, node: UOp, exponent: UOp, c: float,
                                tensor: type[Tensor]) -> tuple[UOp]:
    """d(c ** exponent)/d exponent for a Python number c: c ** exponent * ln(c) (0 where c is 0
    and the exponent is not negative)."""
    g, out, b = tensor(grad), tensor(node), tensor(exponent)
    ln_c = math.log(c) if c > 0 else -math.inf if c == 0 else math.nan
    scaled = out * ln_c
    if c == 0:
        scaled = (b >= 0).where(0.0, scaled)
    return ((g * scaled).uop,)
