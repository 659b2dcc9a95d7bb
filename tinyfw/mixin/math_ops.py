"""Elementwise math (mixed into Tensor): neg, reciprocal, sqrt, exp, sin, cos, the inverse and
hyperbolic functions, rounding (trunc, floor, ceil, round), sign and abs, the float tests
(isnan, isinf, isfinite, isclose) and clip, clamp and lerp. The primitives (EXP2, LOG2, SIN,
SQRT, RECIPROCAL, TRUNC) are one op each; the rest are the accurate compositions of
tinyfw/uop/elementwise_math.py, or compositions of tensor ops with torch's values at the
edges. exp, log, log1p, log10, acosh, atanh, erf and fmod take torch's gradient by hand (a
gradient override): the composite's own ops would give another one at the edges."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from tinyfw.mixin.core import TensorCore
from tinyfw.uop import elementwise_math
from tinyfw.uop.ops import Ops, UOp

if TYPE_CHECKING:
    from tinyfw.tensor import Scalar, Tensor


class MathOps(TensorCore):
    """The elementwise math functions."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: the arithmetic and comparisons (+, -, *, %, <, ==, &, |, where,
    # maximum, _divided), detach and _with_gradient.

    def _floating(self) -> Tensor:
        """Self, cast to the default float if it is an int or bool."""
        raise NotImplementedError

    def _unary(self, op: Ops) -> Tensor:
        """The unary primitive op of this tensor."""
        raise NotImplementedError

    def _result(self, uop: UOp, *sources: Tensor) -> Tensor:
        """A new tensor for uop, requiring grad when a source does."""
        raise NotImplementedError

    # --- unary math ---

    def _math(self: Tensor, fn: Callable[[UOp], UOp]) -> Tensor:
        """fn (a function of graph nodes, from tinyfw/uop/elementwise_math.py) of this tensor,
        cast to the default float if it is an int or bool."""
        x = self._floating()
        return x._result(fn(x.uop), x)

    def _math_with_derivative(self: Tensor, fn: Callable[[UOp], UOp],
                              slope: Callable[[Tensor], Tensor]) -> Tensor:
        """_math(fn), its gradient grad * slope(x): torch's formula for the derivative, whose
        value it keeps outside fn's domain too (the gradient of log at -1 is -1, of atanh at 2
        is -1/3), where the ops fn is made of would give 0 or nan."""
        x = self._floating()
        out = x._math(fn)
        return out._with_gradient(_slope_gradient, (x,), (slope, type(out)))

    def neg(self: Tensor) -> Tensor:
        if self.dtype.is_bool:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.")
        return self._unary(Ops.NEG)

    def reciprocal(self: Tensor) -> Tensor: return self._floating()._unary(Ops.RECIPROCAL)
    def sqrt(self: Tensor) -> Tensor: return self._floating()._unary(Ops.SQRT)
    def rsqrt(self: Tensor) -> Tensor: return self.sqrt().reciprocal()
    def exp2(self: Tensor) -> Tensor: return self._floating()._unary(Ops.EXP2)
    def log2(self: Tensor) -> Tensor: return self._floating()._unary(Ops.LOG2)
    # accurate compositions of the primitives, in tinyfw/uop/elementwise_math.py
    def exp(self: Tensor) -> Tensor:
        """e**x (tinyfw/uop/elementwise_math.py), its gradient grad * e**x as torch's: the
        clamp inside the composite would send a nan gradient at -inf nowhere."""
        x = self._floating()
        return x._math(elementwise_math.exp)._with_gradient(_exp_gradient, (x,))
    def expm1(self: Tensor) -> Tensor: return self._math(elementwise_math.expm1)
    def log(self: Tensor) -> Tensor:
        return self._math_with_derivative(elementwise_math.log, _log_slope)
    def log1p(self: Tensor) -> Tensor:
        return self._math_with_derivative(elementwise_math.log1p, _log1p_slope)

    def sin(self: Tensor) -> Tensor: return self._floating()._unary(Ops.SIN)
    def cos(self: Tensor) -> Tensor: return self._math(elementwise_math.cos)
    def tan(self: Tensor) -> Tensor: return self._math(elementwise_math.tan)
    def square(self: Tensor) -> Tensor: return self * self
    def erf(self: Tensor) -> Tensor:
        """erf (tinyfw/uop/elementwise_math.py), its gradient 2/sqrt(pi) e**-x**2 exactly,
        not that of the approximation."""
        x = self._floating()
        out = x._math(elementwise_math.erf)
        return out._with_gradient(_erf_gradient, (x,), (type(out),))

    def atan(self: Tensor) -> Tensor: return self._math(elementwise_math.atan)
    def asin(self: Tensor) -> Tensor: return self._math(elementwise_math.asin)
    def acos(self: Tensor) -> Tensor: return self._math(elementwise_math.acos)
    def sinh(self: Tensor) -> Tensor: return self._math(elementwise_math.sinh)
    def cosh(self: Tensor) -> Tensor: return self._math(elementwise_math.cosh)
    def asinh(self: Tensor) -> Tensor: return self._math(elementwise_math.asinh)
    def acosh(self: Tensor) -> Tensor:
        return self._math_with_derivative(elementwise_math.acosh, _acosh_slope)
    def atanh(self: Tensor) -> Tensor:
        return self._math_with_derivative(elementwise_math.atanh, _atanh_slope)
    def log10(self: Tensor) -> Tensor:
        return self._math_with_derivative(elementwise_math.log10, _log10_slope)

    def copysign(self: Tensor, x: Tensor | Scalar) -> Tensor:
        """|self| with the sign of x (-0.0 counts as negative); ints give floats, as torch."""
        a, b = self._operands(x)
        a, b = a._floating(), b._floating()
        negative = (b < 0) | ((b == 0) & (b.reciprocal() < 0))
        magnitude = a.abs()
        return negative.where(-magnitude, magnitude)

    def fmod(self: Tensor, x: Tensor | Scalar) -> Tensor:
        """The remainder with the sign of the dividend (C's fmod, exact), as torch.fmod."""
        a, b = self._operands(x)
        if a.dtype.is_bool:
            raise NotImplementedError('"fmod_cpu" not implemented for \'Bool\'')
        r = a._result(a.uop.alu(Ops.MOD, b.uop), b)
        if not a.dtype.is_float:
            return a._divided(b, r)
        # the value is C's fmod (-0.0 kept); the gradient torch's: 1 and -trunc(a / b)
        return r._with_gradient(_fmod_gradient, (a, b), (type(r),))

    def logaddexp(self: Tensor, x: Tensor | Scalar) -> Tensor:
        """log(e**self + e**x), from the larger plus log1p(e**-|difference|)."""
        a, b = self._operands(x)
        if not a.dtype.is_float:
            raise NotImplementedError(f'"logaddexp" not implemented for {a.dtype.name}')
        m, same = a.maximum(b), a == b  # equal (infinities too): the larger plus ln 2
        d = same.where(0.0, a - b).abs()
        return same.where(m + math.log(2), m + (-d).exp().log1p())

    def isfinite(self: Tensor) -> Tensor:
        """True where the value is neither inf nor nan."""
        return (self == self) & self.isinf().logical_not()

    def isclose(self: Tensor, other: Tensor | Scalar, rtol: float = 1e-05, atol: float = 1e-08,
                equal_nan: bool = False) -> Tensor:
        """|self - other| <= atol + rtol |other|, or equal (infinities), as torch.isclose."""
        if isinstance(other, TensorCore) and other.dtype != self.dtype:  # (a Tensor)
            raise RuntimeError(f"{other.dtype.name} did not match {self.dtype.name}")
        a, b = self._operands(other)
        a, b = a._floating(), b._floating()
        both_finite = a.isfinite() & b.isfinite()
        close = (a == b) | (both_finite & ((a - b).abs() <= atol + rtol * b.abs()))
        return close | (a.isnan() & b.isnan()) if equal_nan else close

    def allclose(self: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
                 equal_nan: bool = False) -> bool:
        """Whether every element is close to other's (isclose), a Python bool as torch's."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def trunc(self: Tensor) -> Tensor:
        return self._unary(Ops.TRUNC) if self.dtype.is_float else self

    def floor(self: Tensor) -> Tensor:
        t = self.trunc()  # a where, not t - (x < t): t - 0.0 would turn -0.0 into 0.0
        return (self < t).where(t - 1, t) if self.dtype.is_float else t

    def ceil(self: Tensor) -> Tensor:
        t = self.trunc()  # ceil(-0.5) is -0.0, as trunc(-0.5)
        return (self > t).where(t + 1, t) if self.dtype.is_float else t

    def round(self: Tensor) -> Tensor:
        """Round to the nearest integer, halves to even (as torch.round)."""
        if not self.dtype.is_float:
            return self
        down = self.floor()
        frac = self - down
        up_on_tie = (down % 2) == 1
        out = (frac > 0.5).where(down + 1, (frac < 0.5).where(down, up_on_tie.where(down + 1,
                                                                                    down)))
        return (out == 0).where(self * 0, out)  # a zero keeps x's sign: round(-0.4) is -0.0

    def sign(self: Tensor) -> Tensor:
        """-1, 0 or 1 (its gradient is zero, but it is part of the graph, as in torch)."""
        out = (self > 0).cast(self.dtype) - (self < 0).cast(self.dtype)
        return self._result(out.uop, self)

    def abs(self: Tensor) -> Tensor:
        """|x|, as x * sign(x) (gradient 0 at 0, as torch); + 0 turns -0.0 into 0.0."""
        if self.dtype.is_bool:
            return self
        out = self * self.sign()
        return out + 0.0 if self.dtype.is_float else out

    def isnan(self: Tensor) -> Tensor: return self != self
    def isinf(self: Tensor, detect_positive: bool = True, detect_negative: bool = True) -> Tensor:
        """True where the value is inf (when detect_positive) or -inf (when detect_negative)."""
        positive = (self == math.inf) & detect_positive
        return positive | ((self == -math.inf) & detect_negative)

    def clip(self: Tensor, min_: Scalar | None = None, max_: Scalar | None = None) -> Tensor:
        """Values limited to [min_, max_]."""
        if min_ is None and max_ is None:
            raise RuntimeError("At least one of 'min' or 'max' must not be None")
        # where, not maximum/minimum: at a bound the gradient passes whole, as in torch.clamp
        out = self if min_ is None else (self < min_).where(min_, self)
        out = out if max_ is None else (out > max_).where(max_, out)
        if not self.dtype.is_float:
            return out
        # torch's gradient: where min_ <= x <= max_, so none at NaN
        inside = (self >= min_) if min_ is not None else None
        if max_ is not None:
            inside = (self <= max_) if inside is None else inside & (self <= max_)
        assert inside is not None
        return inside.where(out, out.detach())

    def clamp(self: Tensor, min: Scalar | None = None, max: Scalar | None = None) -> Tensor:
        """torch's name and keywords (min=, max=) for clip."""
        return self.clip(min, max)

    def lerp(self: Tensor, end: Tensor, weight: Tensor | float) -> Tensor:
        """self + weight (end - self), written as torch computes it: from end for a weight of
        1/2 and more (so lerp(inf, 1, 0.5) is inf and lerp(1, inf, 0.5) nan, as torch's)."""
        low = self + weight * (end - self)
        high = end - (end - self) * (1 - weight)
        if isinstance(weight, (int, float)):
            return low if abs(weight) < 0.5 else high
        return (weight.abs() < 0.5).where(low, high)


# torch's gradients, given by hand (GradientOverride rules). Those computed with tensor ops take
# the class of the op's result (Tensor) as their last parameter, to make tensors of the UOps.
def _exp_gradient(grad: UOp, node: UOp, x: UOp) -> tuple[UOp]:
    """d e**x/dx = e**x, the value itself (node)."""
    return (grad * node,)


def _erf_gradient(grad: UOp, node: UOp, x: UOp, tensor: type[Tensor]) -> tuple[UOp]:
    """d erf(x)/dx = 2/sqrt(pi) e**-x**2."""
    g, a = tensor(grad), tensor(x)
    return ((g * ((-(a * a)).exp() * (2 / math.sqrt(math.pi)))).uop,)


def _slope_gradient(grad: UOp, node: UOp, x: UOp, slope: Callable[[Tensor], Tensor],
                    tensor: type[Tensor]) -> tuple[UOp]:
    """_math_with_derivative's gradient: grad * slope(x), differentiable in turn."""
    return ((tensor(grad) * slope(tensor(x))).uop,)


def _log_slope(x: Tensor) -> Tensor: return x.reciprocal()
def _log10_slope(x: Tensor) -> Tensor: return (x * math.log(10)).reciprocal()
def _log1p_slope(x: Tensor) -> Tensor: return (x + 1).reciprocal()
def _acosh_slope(x: Tensor) -> Tensor: return (x * x - 1).rsqrt()
def _atanh_slope(x: Tensor) -> Tensor: return (1 - x * x).reciprocal()


def _fmod_gradient(grad: UOp, node: UOp, a: UOp, b: UOp, tensor: type[Tensor]
                   ) -> tuple[UOp, UOp]:
    """torch's gradients of fmod(a, b): grad to a, and -grad * trunc(a / b) to b."""
    g, x, y = tensor(grad), tensor(a), tensor(b)
    return g.uop, (-(g * x.div(y).trunc())).uop
