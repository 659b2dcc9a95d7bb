"""exp, expm1, log, log1p, cos, tan, tanh and sigmoid accurate to a few ulp over the whole float
range, composed from the primitive ops on graph nodes (their gradients come from the primitives').

The naive compositions lose accuracy: exp(x) = exp2(x * log2(e)) amplifies the rounding of the
product by |x * log2(e)| (64 ulp near x = 88), cos(x) = sin(pi/2 - x) rounds pi/2 - x (cos(3e7)
comes out 0.16 instead of -0.265), log1p(x) = log(1 + x) loses x below 1e-8, and so on. Here
each function reduces its argument exactly (Cody-Waite for exp, an exact power of two for log,
exact doubling and halving for cos) and leaves the rest to a primitive or a short polynomial.

Where a branch is not selected its inputs are replaced by harmless values, so that its gradient
(multiplied by zero by WHERE's rule) is a finite zero and never nan. float16 computes in float32
and rounds once at the end: each float16 op rounds, and a composition of a dozen of them would
pile up their errors."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from tinyfw.dtype import dtypes
from tinyfw.uop.ops import Ops, UOp

UnaryFn = Callable[[UOp], UOp]


@dataclass(frozen=True)
class Constants:
    """The numbers the compositions need, for one float dtype."""
    ln2_hi: float         # ln 2 in few enough bits that k * ln2_hi is exact for any k used
    ln2_lo: float         # ln 2 - ln2_hi, rounded
    max_k: int            # |k| of 2**k needed to reach inf and 0 from exp's range
    exp_low: float        # e**x rounds to 0 below this
    expm1_low: float      # e**x - 1 rounds to -1 below this
    largest: float        # the largest finite value (2 * x overflows above largest / 2)
    log_terms: int        # terms of the atanh series that log's polynomial needs
    expm1_terms: int      # terms of the Taylor series of expm1 on |r| <= ln(2) / 2


# ln 2 to 40 digits: math.log(2) is rounded to float64, and float64's ln2_lo must hold the bits
# below those ln2_hi keeps, which are past float64's own
LN2 = Fraction(Decimal("0.6931471805599453094172321214581765680755"))


def _split_ln2(bits: int, dtype: np.dtype) -> tuple[float, float]:
    """ln 2 as hi + lo, with hi a multiple of 2**-bits (so it has at most `bits` bits)."""
    hi = Fraction(math.floor(LN2 * 2 ** bits), 2 ** bits)
    return float(hi), float(dtype.type(float(LN2 - hi)))


# float32: |k| <= 160 needs 8 bits, so ln2_hi keeps 12 of float32's 24 bits. float64: |k| <= 1100
# needs 11 bits, so ln2_hi keeps 32 of its 53. Then k * ln2_hi is exact in the dtype.
CONSTANTS = {
    dtypes.float32: Constants(*_split_ln2(12, np.dtype(np.float32)), max_k=160, exp_low=-104.0,
                              expm1_low=-20.0, largest=float(np.finfo(np.float32).max),
                              log_terms=5, expm1_terms=8),
    dtypes.float64: Constants(*_split_ln2(32, np.dtype(np.float64)), max_k=1100, exp_low=-746.0,
                              expm1_low=-40.0, largest=float(np.finfo(np.float64).max),
                              log_terms=11, expm1_terms=13),
}
LOG2E = 1 / math.log(2)
SQRT_HALF = math.sqrt(0.5)


def in_float32(fn: UnaryFn) -> UnaryFn:
    """fn computed in float32 for narrower floats (float16), rounded to their dtype once."""
    @functools.wraps(fn)
    def wrapper(x: UOp) -> UOp:
        if x.dtype.itemsize < 4:
            return fn(x.cast(dtypes.float32)).cast(x.dtype)
        return fn(x)
    return wrapper


def _trunc(x: UOp) -> UOp:
    """x rounded toward zero."""
    return x.alu(Ops.TRUNC)


def _round(x: UOp) -> UOp:
    """x rounded to the nearest integer, halves away from zero (ties do not matter here)."""
    return _trunc(x + (x < 0.0).where(x.const_like(-0.5), 0.5))


def _abs(x: UOp) -> UOp:
    """|x| (for comparisons: -0.0 stays -0.0)."""
    return (x < 0.0).where(-x, x)


def _polynomial(x: UOp, coefficients: list[float]) -> UOp:
    """c0 + c1 x + c2 x**2 + ..., by Horner's rule."""
    out = x.const_like(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        out = out * x + c
    return out


# a float dtype's exponent bias and mantissa bits: 2**n is the float whose bits are
# (n + bias) << mantissa bits, for n from 1 - bias to bias
FLOAT_BITS = {dtypes.float32: (127, 23, dtypes.int32), dtypes.float64: (1023, 52, dtypes.int64)}


def _pow2(n: UOp) -> UOp:
    """2**n for an integer-valued n within the normal exponents, built from its bits: exact,
    and a few integer operations where a call of exp2 would stop the C compiler from
    vectorizing the kernel (exp's was 4x slower so). nan gives 1 (its caller's value is nan
    anyway). n is a whole number (a trunc's or round's): no gradient flows through it."""
    bias, mantissa, int_dtype = FLOAT_BITS[n.dtype]
    n = n.ne(n).where(0.0, n)
    return ((n + float(bias)) * float(2 ** mantissa)).cast(int_dtype).bitcast(n.dtype).detach()


def _exponent(x: UOp) -> UOp:
    """For a finite x > 0, the whole number e with x = 2**e m and m in [sqrt(1/2), sqrt(2)),
    from x's bits (a subnormal x scaled up by 2**(mantissa + 1) first): its exponent field,
    plus one where the mantissa is past sqrt(2)'s. Integer operations only, so that the kernel
    vectorizes (log2 was a libm call), and exact (lavapipe's log2 is not, near 1)."""
    bias, mantissa, int_dtype = FLOAT_BITS[x.dtype]
    scale = mantissa + 1
    subnormal = x < 2.0 ** (1 - bias)
    bits = subnormal.where(x * float(2 ** scale), x).bitcast(int_dtype)
    one = 2 ** mantissa
    sqrt2 = int(np.array(math.sqrt(2), x.dtype.np).view(int_dtype.np)) % one  # its mantissa
    field = bits.alu(Ops.IDIV, bits.const_like(one))
    upper = (bits.alu(Ops.MOD, bits.const_like(one)) < sqrt2).where(bits.const_like(0), 1)
    e = (field + upper).cast(x.dtype) - subnormal.where(x.const_like(bias + scale), float(bias))
    return e.detach()


def _pow2_halves(k: UOp) -> tuple[UOp, UOp]:
    """2**k for an integer-valued k as two factors, 2**(k//2) and 2**(k - k//2), each far from
    overflow: scaling by one and then the other rounds at most once (the second time)."""
    half = _trunc(k * 0.5)
    return _pow2(half), _pow2(k - half)


def _reduce_ln2(x: UOp, low: float, c: Constants) -> tuple[UOp, UOp]:
    """(k, r) with x = k ln 2 + r, k an integer and |r| <= ln(2) / 2 (Cody-Waite: k * ln2_hi is
    exact and x - k * ln2_hi cancels exactly, so r is off by one rounding of the small part).
    x is first raised to low (below which the caller's result no longer changes: r would be
    -inf there, and the polynomial of it nan), and k stops at max_k, so that 2**k's halves are
    finite: past it r is large, or inf, and the polynomial overflows, as e**x does. nan stays
    nan (comparisons with it are false)."""
    xs = (x < low).where(x.const_like(low), x)
    k = _round(xs * LOG2E)
    k = (k > c.max_k).where(float(c.max_k), k)
    return k, (xs - k * c.ln2_hi) - k * c.ln2_lo


def _expm1_reduced(r: UOp, c: Constants) -> UOp:
    """e**r - 1 for |r| <= ln(2) / 2: r + r**2 (1/2! + r/3! + ...), the Taylor series cut where
    its terms fall below the dtype's precision (the leading r is exact)."""
    taylor = [1 / math.factorial(n) for n in range(2, c.expm1_terms + 1)]
    return r + r * r * _polynomial(r, taylor)


@in_float32
def exp(x: UOp) -> UOp:
    """e**x = 2**k (1 + expm1(r)), with x = k ln 2 + r reduced exactly. The polynomial, not
    exp2(r log2 e): WGSL compilers (lavapipe) fold exp2(a) * exp2(b) into exp2(a + b), which
    undoes the reduction, and their exp2 is only good to a few ulp."""
    c = CONSTANTS[x.dtype]
    k, r = _reduce_ln2(x, c.exp_low, c)
    lo, hi = _pow2_halves(k)
    return (_expm1_reduced(r, c) + 1.0) * lo * hi


@in_float32
def expm1(x: UOp) -> UOp:
    """e**x - 1 = 2**k (expm1(r) + 1 - 2**-k): the only rounding that matters is that of one
    sum, whatever k."""
    c = CONSTANTS[x.dtype]
    k, r = _reduce_ln2(x, c.expm1_low, c)
    lo, hi = _pow2_halves(k)
    inv_lo, inv_hi = _pow2_halves(-k)
    out = (_expm1_reduced(r, c) + (1.0 - inv_lo * inv_hi)) * lo * hi
    # below expm1_low the value is -1, but the gradient e**x is not 0: -1 + exp2(x log2 e) has
    # both (the product's rounding hardly matters for a number below 1e-8 added to -1)
    below = x < c.expm1_low
    out = below.where((below.where(x, c.expm1_low) * LOG2E).exp2() - 1.0, out)
    return (x.eq(0.0)).where(x, out)  # expm1(-0.0) is -0.0


def _log_special(x: UOp) -> UOp:
    """log x where x is not a finite positive number: -inf at +-0, inf at inf, else nan."""
    return x.eq(0.0).where(-math.inf, x.eq(math.inf).where(x.const_like(math.inf), math.nan))


def _finite_positive(x: UOp) -> UOp:
    """True where 0 < x < inf (false for nan)."""
    return (x > 0.0).alu(Ops.AND, x < math.inf)


@in_float32
def log(x: UOp) -> UOp:
    """ln x = e ln 2 + ln m, with x = 2**e m exactly (m in [0.7, 1.42]) and ln m from the atanh
    series; e read from x's bits (_exponent)."""
    c = CONSTANTS[x.dtype]
    ok = _finite_positive(x)
    xs = ok.where(x, 1.0)
    e = _exponent(xs)
    lo, hi = _pow2_halves(-e)
    m = xs * lo * hi
    f = m - 1.0  # exact: m is within a factor 2 of 1
    # ln(1 + f) = 2 atanh(s) = 2s + 2s**3/3 + ..., s = f / (2 + f); written as in fdlibm, as
    # f - (f*f/2 - s (f*f/2 + R)), so that s's rounding error is multiplied by small numbers
    s = f / (f + 2.0)
    z = s * s
    series = [2 / (2 * n + 1) for n in range(1, c.log_terms + 1)]
    big_r = z * _polynomial(z, series)
    half_f2 = 0.5 * f * f
    log_m = f - (half_f2 - s * (half_f2 + big_r))
    out = e * c.ln2_hi + (log_m + e * c.ln2_lo)
    return ok.where(out, _log_special(x))


@in_float32
def log1p(x: UOp) -> UOp:
    """ln(1 + x) = ln u + (x - (u - 1)) / u with u = 1 + x rounded: the second term is the
    first-order correction for the rounding of u (and it keeps the gradient 1 / (1 + x))."""
    u = x + 1.0
    ok = _finite_positive(u)
    us, xs = ok.where(u, 1.0), ok.where(x, 0.0)
    out = log(us) + (xs - (us - 1.0)) / us
    return u.eq(1.0).where(x, ok.where(out, _log_special(u)))


@in_float32
def tanh(x: UOp) -> UOp:
    """tanh x = e / (e + 2) with e = expm1(2x) for |x| < 0.55 (accurate near 0, unlike
    2 sigmoid(2x) - 1), else +-(1 - 2q / (1 + q)) with q = e**-2|x|, which cannot overflow: there
    e / (e + 2), whose gradient is a difference of two nearly equal terms, would lose it."""
    small = _abs(x) < 0.55
    e = expm1(small.where(x, 0.0) * 2.0)
    near_zero = e / (e + 2.0)
    q = exp(_abs(small.where(x.const_like(1.0), x)) * -2.0)
    far = 1.0 - q / (q + 1.0) * 2.0
    return small.where(near_zero, (x < 0.0).where(-far, far))


@in_float32
def sigmoid(x: UOp) -> UOp:
    """1 / (1 + e**-x), from exp(-|x|), which cannot overflow."""
    positive = (x < 0.0).alu(Ops.XOR, UOp.true_like(x))  # x >= 0 (false for nan)
    e = exp(positive.where(-x, x))  # exp(-|x|), with a gradient at 0 from the x >= 0 side
    s = (e + 1.0).reciprocal()
    return positive.where(s, e / (e + 1.0))  # e * s would round twice


@dataclass(frozen=True)
class _CosParts:
    """The pieces cos and tan are made of (see cos)."""
    s: UOp            # sin x
    quotient_ok: UOp  # where sin(2x) / (2 sin x) is used
    sin_2x: UOp       # sin(2x) there (0 elsewhere)
    s_safe: UOp       # sin x there (1 elsewhere)
    other: UOp        # cos x elsewhere


def _cos_parts(x: UOp) -> _CosParts:
    """sin x, and cos x where it is not made of sin(2x) / (2 sin x)."""
    largest = CONSTANTS[x.dtype].largest
    s, h = x.sin(), (x * 0.5).sin()
    near_zero = _abs(s) > SQRT_HALF
    huge = _abs(x) > largest / 2
    quotient_ok = near_zero.alu(Ops.AND, huge.alu(Ops.XOR, UOp.true_like(x)))
    sin_2x = (quotient_ok.where(x, 0.0) * 2.0).sin()
    s_far = near_zero.where(0.0, s)  # keeps 1 - s**2 >= 0.75 under the square root
    sign = (h * h < 0.5).where(x.const_like(1.0), -1.0)
    root = sign * (1.0 - s_far * s_far).sqrt()
    half_angle = 1.0 - 2.0 * h * h
    return _CosParts(s, quotient_ok, sin_2x, quotient_ok.where(s, 1.0),
                     near_zero.where(half_angle, root))


@in_float32
def cos(x: UOp) -> UOp:
    """cos x from the SIN primitive alone, accurate wherever sin is:
    - near a zero of cos (|sin x| > 1/2): sin(2x) / (2 sin x), a quotient of two accurate sines
      (2x is exact);
    - elsewhere (|cos x| >= 0.87): +-sqrt(1 - sin(x)**2), the sign that of 1 - 2 sin(x/2)**2;
    - beyond half the largest float, where 2x overflows: 1 - 2 sin(x/2)**2 (accurate to an ulp
      of 1, not relatively, near the zeros of cos there)."""
    p = _cos_parts(x)
    return p.quotient_ok.where(p.sin_2x / (p.s_safe * 2.0), p.other)


@in_float32
def tan(x: UOp) -> UOp:
    """sin x / cos x with the accurate cos; near the poles 2 sin(x)**2 / sin(2x), the same
    quotient with one rounding fewer."""
    p = _cos_parts(x)
    sin_2x_safe = p.quotient_ok.where(p.sin_2x, 1.0)  # no division by 0 where it is not used
    return p.quotient_ok.where(p.s_safe * p.s_safe * 2.0 / sin_2x_safe, p.s / p.other)


# --- inverse trigonometric, hyperbolic and error functions ---
TAN_PI_8 = math.tan(math.pi / 8)
LN2_FLOAT = math.log(2)
BIG = 2.0 ** 28  # past it sqrt(1 + x**2) is |x| in float32 and float64: asinh x = ln 2|x|


@dataclass(frozen=True)
class SpecialTerms:
    """How many terms the series below need, for one float dtype. (float32's erf_* entries
    go unused: erf of a float32 takes the rational fit, _erf_float32.)"""
    atan: int         # of atan's Taylor series on |t| <= tan(pi/8)
    erf_taylor: int   # of erf's Taylor series on |x| < 1
    erf_series: int   # of erf's series with positive terms on 1 <= |x| < erf_one
    erf_one: float    # erf rounds to 1 from here on
    split: float      # 2**s + 1 splits a float in two halves of s bits (Dekker)


SPECIAL = {
    dtypes.float32: SpecialTerms(atan=10, erf_taylor=12, erf_series=44, erf_one=4.0,
                                 split=2.0 ** 12 + 1),
    dtypes.float64: SpecialTerms(atan=22, erf_taylor=19, erf_series=98, erf_one=6.0,
                                 split=2.0 ** 27 + 1),
}


def _not(x: UOp) -> UOp:
    """Logical not of a bool node."""
    return x.alu(Ops.XOR, UOp.true_like(x))


def _odd(x: UOp, fn: UnaryFn) -> UOp:
    """fn(|x|) with x's sign, for an odd fn; |x| as a where, so its gradient at 0 is 1."""
    out = fn(_abs(x))
    return (x < 0.0).where(-out, out)


def _atan_positive(a: UOp) -> UOp:
    """atan a for a >= 0: atan a = pi/2 - atan(1/a) above 1, atan u = pi/4 + atan((u-1)/(u+1))
    above tan(pi/8), then the Taylor series on |v| <= tan(pi/8)."""
    terms = SPECIAL[a.dtype].atan
    big = a > 1.0
    a_safe = big.where(a, 1.0)
    u = big.where(a.const_like(1.0) / a_safe, a)
    mid = u > TAN_PI_8
    u_safe = mid.where(u, 1.0)
    v = mid.where((u_safe - 1.0) / (u_safe + 1.0), u)
    r = v * _polynomial(v * v, [(-1) ** n / (2 * n + 1) for n in range(terms)])
    r = mid.where(r + math.pi / 4, r)
    return big.where(math.pi / 2 - r, r)


@in_float32
def atan(x: UOp) -> UOp:
    """atan x, odd, from atan of |x|."""
    return _odd(x, _atan_positive)


def _asin_edge(x: UOp) -> UOp:
    """x pi/2 - x sqrt(1 - x**2): asin's value at x = +-1, with its infinite gradient there (the
    compositions, on harmless inputs at the edges, would give nan or 0)."""
    return x * (math.pi / 2) - x * (1.0 - x * x).sqrt()


@in_float32
def asin(x: UOp) -> UOp:
    """asin x = atan(x / sqrt((1 - x)(1 + x))): 1 - x is exact near 1, where it matters."""
    edge = _abs(x).eq(1.0)
    xs = edge.where(0.0, x)
    return edge.where(_asin_edge(x), atan(xs / ((1.0 - xs) * (xs + 1.0)).sqrt()))


@in_float32
def acos(x: UOp) -> UOp:
    """acos x = 2 atan(sqrt((1 - x) / (1 + x))), accurate near 1 where acos x is small."""
    edge = _abs(x).eq(1.0)
    xs = edge.where(0.0, x)
    inside = atan(((1.0 - xs) / (xs + 1.0)).sqrt()) * 2.0
    return edge.where(math.pi / 2 - _asin_edge(x), inside)


def _sinh_positive(a: UOp) -> UOp:
    """sinh a for a >= 0: from expm1 below 1, else h h / 2 - 1 / (2 h h) with h = e**(a/2),
    which does not overflow where sinh does not."""
    small = a < 1.0
    e = expm1(small.where(a, 0.0))
    near = (e + e / (e + 1.0)) * 0.5
    h = exp(small.where(a.const_like(1.0), a) * 0.5)
    return small.where(near, h * 0.5 * h - 0.5 / h / h)


@in_float32
def sinh(x: UOp) -> UOp:
    """sinh x, odd, from sinh of |x|."""
    return _odd(x, _sinh_positive)


@in_float32
def cosh(x: UOp) -> UOp:
    """cosh x = h h / 2 + 1 / (2 h h) with h = e**(|x|/2) (no cancellation, no overflow)."""
    h = exp(_abs(x) * 0.5)
    return h * 0.5 * h + 0.5 / h / h


def _asinh_positive(a: UOp) -> UOp:
    """asinh a for a >= 0: log1p(a + a**2 / (1 + sqrt(1 + a**2))), or ln a + ln 2 past BIG."""
    huge = a > BIG
    s = huge.where(a.const_like(1.0), a)
    near = log1p(s + s * s / ((s * s + 1.0).sqrt() + 1.0))
    return huge.where(log(huge.where(a, 1.0)) + LN2_FLOAT, near)


@in_float32
def asinh(x: UOp) -> UOp:
    """asinh x, odd, from asinh of |x|."""
    return _odd(x, _asinh_positive)


@in_float32
def acosh(x: UOp) -> UOp:
    """acosh x = log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact near 1), ln x + ln 2 past
    BIG, nan below 1."""
    ok, huge = x > 1.0, x > BIG  # (false for nan)
    t = ok.alu(Ops.AND, _not(huge)).where(x, 2.0) - 1.0
    near = log1p(t + (t * (t + 2.0)).sqrt())
    out = huge.where(log(huge.where(x, 2.0)) + LN2_FLOAT, near)
    # at 1: sqrt(x**2 - 1), 0 with acosh's infinite gradient; below: sqrt(x - 1), nan with a
    # nan gradient (each on 2.0 where it is not used, so that its gradient there is 0)
    one = x.eq(1.0)
    edge = one.where(x, 2.0)
    below = ok.alu(Ops.OR, one).where(x.const_like(2.0), x)
    return ok.where(out, one.where((edge * edge - 1.0).sqrt(), (below - 1.0).sqrt()))


def _atanh_positive(a: UOp) -> UOp:
    """atanh a for a >= 0: log1p(2a / (1 - a)) / 2 (1 - a is exact near 1); inf at 1."""
    ok = a < 1.0
    s = ok.where(a, 0.0)
    out = log1p(s * 2.0 / (1.0 - s)) * 0.5
    # at 1: a / (1 - a**2), inf with atanh's infinite gradient
    return ok.where(out, a.eq(1.0).where(a / (1.0 - a * a), math.nan))


@in_float32
def atanh(x: UOp) -> UOp:
    """atanh x, odd, from atanh of |x|."""
    return _odd(x, _atanh_positive)


# erf x = x P(x**2) / Q(x**2) for |x| <= 4, a rational fit of least maximum relative error
# (tools/fit_erf.py: 1.7e-8 exact, 3.4e-7 with every step rounded to float32)
ERF_P = [1.1283791476528875, 0.14603009855962662, 0.044790028914974814, 0.0017609556459877152,
         0.00013592356171661488, -3.5248012411106313e-06, 7.545631888428686e-08,
         -7.569755534259874e-10]
ERF_Q = [1.0, 0.4627486303447348, 0.09394638979167276, 0.010404887700142213,
         0.0005890153250776431]
ERF_LIMIT = 4.0        # erfc 4 is 1.5e-8: erf is 1 in float32 from there
ERF_ONE = 0.9999999    # values above it are taken as 1 (erf exceeds it from x = 3.7 on)


def _erf_float32(x: UOp) -> UOp:
    """erf x in float32, about 20 operations and no branch: the fit on x clamped to [-4, 4],
    odd as it stands, then values within 1e-7 of +-1 made +-1 (so erf of 4 and beyond is 1
    exactly, as torch's). A nan passes every comparison as false and stays nan."""
    c = (x < -ERF_LIMIT).where(-ERF_LIMIT, (x > ERF_LIMIT).where(ERF_LIMIT, x))
    t = c * c
    out = c * _polynomial(t, ERF_P) / _polynomial(t, ERF_Q)
    return (out < -ERF_ONE).where(-1.0, (out > ERF_ONE).where(1.0, out))


def _erf_positive(a: UOp) -> UOp:
    """erf a for a >= 0: its Taylor series below 1 (terms shrink from the first, so there is
    no cancellation); up to erf_one, 2/sqrt(pi) a e**-a**2 sum (2a**2)**n / (2n+1)!!, a series
    of positive terms, with e**-a**2 = e**-hi e**-lo for a**2 = hi + lo split exactly (Dekker);
    then 1."""
    st = SPECIAL[a.dtype]
    two_over_sqrt_pi = 2 / math.sqrt(math.pi)
    small = a < 1.0
    s = small.where(a, 0.0)
    taylor = [(-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(st.erf_taylor)]
    near = s * _polynomial(s * s, taylor) * two_over_sqrt_pi
    mid = small.alu(Ops.XOR, a < st.erf_one)  # 1 <= a < erf_one (false for nan)
    m = mid.where(a, 1.0)
    c = m * st.split
    m_hi = c - (c - m)
    hi, lo = m_hi * m_hi, (m - m_hi) * (m + m_hi)
    # 1 + y/3 (1 + y/5 (1 + y/7 (...))), y = 2a**2: the coefficients 1 / (2n+1)!! themselves
    # would underflow float32
    y = m * m * 2.0
    series = m.const_like(1.0)
    for n in range(st.erf_series - 1, 0, -1):
        series = series * y * (1 / (2 * n + 1)) + 1.0
    middle = m * exp(-hi) * exp(-lo) * series * two_over_sqrt_pi
    far = a.ne(a).where(a, a.const_like(1.0))  # nan stays nan
    return small.where(near, mid.where(middle, far))


@in_float32
def log10(x: UOp) -> UOp:
    """log x / ln 10."""
    return log(x) / math.log(10)


@in_float32
def erf(x: UOp) -> UOp:
    """erf x: in float32 from a rational fit (fast), in float64, odd, from series of |x|."""
    return _erf_float32(x) if x.dtype == dtypes.float32 else _odd(x, _erf_positive)
