"""ONNX's elementwise operators, reductions, products and casts as tinyfw Tensor ops."""
from __future__ import annotations

import functools
import math

from tinyfw.dtype import DType, dtypes
from tinyfw.onnx import lowbit, rules
from tinyfw.onnx.types import dtype_of
from tinyfw.onnx.registry import Call, NodeInfo, op
from tinyfw.tensor import Tensor

# --- unary elementwise ---
_UNARY = {
    "Abs": Tensor.abs, "Neg": Tensor.neg, "Sqrt": Tensor.sqrt, "Exp": Tensor.exp,
    "Log": Tensor.log, "Sin": Tensor.sin, "Cos": Tensor.cos, "Tan": Tensor.tan,
    "Asin": Tensor.asin, "Acos": Tensor.acos, "Atan": Tensor.atan, "Sinh": Tensor.sinh,
    "Cosh": Tensor.cosh, "Asinh": Tensor.asinh, "Acosh": Tensor.acosh, "Atanh": Tensor.atanh,
    "Erf": Tensor.erf, "Floor": Tensor.floor, "Ceil": Tensor.ceil, "Round": Tensor.round,
    "Sign": Tensor.sign, "Relu": Tensor.relu, "Sigmoid": Tensor.sigmoid, "Tanh": Tensor.tanh,
    "Softsign": Tensor.softsign, "IsNaN": Tensor.isnan, "Not": Tensor.logical_not,
    "BitwiseNot": Tensor.bitwise_not, "Mish": Tensor.mish,
}


def _unary(name: str):
    fn = _UNARY[name]
    return lambda n, x: fn(x)


for _name in _UNARY:
    op(_name)(_unary(_name))


@op("Identity")
def identity(n: Call, x: Tensor) -> Tensor:
    return x


@op("Reciprocal")
def reciprocal(n: Call, x: Tensor) -> Tensor:
    return x.reciprocal()


@op("Softplus")
def softplus(n: Call, x: Tensor) -> Tensor:
    return (x.exp() + 1).log() if x.dtype == dtypes.float64 else x.softplus()


@op("IsInf")
def isinf(n: Call, x: Tensor) -> Tensor:
    return x.isinf(bool(n.attr("detect_positive", 1)), bool(n.attr("detect_negative", 1)))


@op("HardSigmoid")
def hard_sigmoid(n: Call, x: Tensor) -> Tensor:
    return (x * n.attr("alpha", 0.2) + n.attr("beta", 0.5)).clip(0, 1)


@op("HardSwish")
def hard_swish(n: Call, x: Tensor) -> Tensor:
    return x * (x / 6 + 0.5).clip(0, 1)


@op("LeakyRelu")
def leaky_relu(n: Call, x: Tensor) -> Tensor:
    return (x < 0).where(x * n.attr("alpha", 0.01), x)


@op("Elu")
def elu(n: Call, x: Tensor) -> Tensor:
    return (x < 0).where((x.exp() - 1) * n.attr("alpha", 1.0), x)


def _wide(x: Tensor) -> Tensor:
    """x in float32 where it is a 16-bit float: computed there, rounded once at the end, as
    ONNX's reference does."""
    return x.cast(dtypes.float32) if x.dtype in (dtypes.float16, dtypes.bfloat16) else x


@op("Celu")
def celu(n: Call, x: Tensor) -> Tensor:
    alpha, xf = n.attr("alpha", 1.0), _wide(x)
    return (xf.maximum(0) + ((xf / alpha).exp() - 1).minimum(0) * alpha).cast(x.dtype)


@op("Selu")
def selu(n: Call, x: Tensor) -> Tensor:
    alpha, gamma = n.attr("alpha", 1.67326319217681884765625), n.attr("gamma",
                                                                      1.05070102214813232421875)
    return (x <= 0).where((x.exp() - 1) * alpha, x) * gamma


@op("ThresholdedRelu")
def thresholded_relu(n: Call, x: Tensor) -> Tensor:
    return (x > n.attr("alpha", 1.0)).where(x, 0)


@op("Shrink")
def shrink(n: Call, x: Tensor) -> Tensor:
    bias, lambd = n.attr("bias", 0.0), n.attr("lambd", 0.5)
    return (x < -lambd).where(x + bias, (x > lambd).where(x - bias, 0)).cast(x.dtype)


@op("Gelu")
def gelu(n: Call, x: Tensor) -> Tensor:
    if n.attr("approximate", "none") == "tanh":
        return x * 0.5 * (1 + ((x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)).tanh())
    return x * 0.5 * (1 + (x / math.sqrt(2)).erf())


@op("PRelu")
def prelu(n: Call, x: Tensor, slope: Tensor) -> Tensor:
    return (x < 0).where(x * slope, x)


@op("Swish")
def swish(n: Call, x: Tensor) -> Tensor:
    return x * (x * n.attr("alpha", 1.0)).sigmoid()


@op("Clip")
def clip(n: Call, x: Tensor, lo: Tensor | None = None, hi: Tensor | None = None) -> Tensor:
    if n.opset < 11:
        lo_v, hi_v = n.attr("min", None), n.attr("max", None)
        out = x if lo_v is None else x.maximum(lo_v)
        return out if hi_v is None else out.minimum(hi_v)
    out = x if lo is None else x.maximum(lo.cast(x.dtype))
    return out if hi is None else out.minimum(hi.cast(x.dtype))


# --- binary and variadic elementwise ---
@op("Add")
def add(n: Call, a: Tensor, b: Tensor) -> Tensor:
    return (a + b).cast(a.dtype)


@op("Sub")
def sub(n: Call, a: Tensor, b: Tensor) -> Tensor:
    return (a - b).cast(a.dtype)


@op("Mul")
def mul(n: Call, a: Tensor, b: Tensor) -> Tensor:
    return (a * b).cast(a.dtype)


@op("Div")
def div(n: Call, a: Tensor, b: Tensor) -> Tensor:
    if a.dtype.is_int or a.dtype.is_bool:
        return a.div(b, rounding_mode="trunc").cast(a.dtype)
    return (a / b).cast(a.dtype)


@op("Pow")
def pow_(n: Call, a: Tensor, b: Tensor) -> Tensor:
    if a.dtype.is_int and b.dtype.is_float:  # the result keeps the base's int type
        return a.cast(b.dtype).pow(b).cast(a.dtype)
    if a.dtype.is_float and b.dtype != a.dtype:
        return a.pow(b.cast(a.dtype))
    return a.pow(b).cast(a.dtype)


@op("Mod")
def mod(n: Call, a: Tensor, b: Tensor) -> Tensor:
    if n.attr("fmod", 0):
        return a.fmod(b)
    return a.mod(b)


def _variadic(fn):
    return lambda n, *xs: functools.reduce(fn, xs[1:], xs[0])


op("Max")(_variadic(Tensor.maximum))
op("Min")(_variadic(Tensor.minimum))
op("Sum")(_variadic(Tensor.add))


@op("Mean")
def mean(n: Call, *xs: Tensor) -> Tensor:
    return functools.reduce(Tensor.add, xs[1:], xs[0]) / len(xs)


for _name, _fn in {"Equal": Tensor.eq, "Less": Tensor.__lt__, "LessOrEqual": Tensor.__le__,
                   "Greater": Tensor.__gt__, "GreaterOrEqual": Tensor.__ge__,
                   "And": Tensor.bitwise_and, "Or": Tensor.bitwise_or,
                   "Xor": Tensor.bitwise_xor, "BitwiseAnd": Tensor.bitwise_and,
                   "BitwiseOr": Tensor.bitwise_or, "BitwiseXor": Tensor.bitwise_xor}.items():
    op(_name)((lambda f: lambda n, a, b: f(a, b))(_fn))


@op("BitShift")
def bit_shift(n: Call, x: Tensor, y: Tensor) -> Tensor:
    # x << y is x * 2**y (wrapping), x >> y a floor division (arithmetic for signed types);
    # a shift count is unsigned: negative or at least the width shifts every bit out
    bits, left = x.dtype.itemsize * 8, n.attr("direction") == "LEFT"
    limit = bits if left or x.dtype.is_unsigned else bits - 1
    out_of_range = (y >= limit) if y.dtype.is_unsigned else (y < 0) | (y >= limit)
    ys = out_of_range.where(0, y).cast(x.dtype)
    two = Tensor.full(ys.shape, 2, dtype=x.dtype, device=x.device).pow(ys)
    if left:
        return out_of_range.where(0, (x * two).cast(x.dtype)).cast(x.dtype)
    fill = (x < 0).where(-1, 0).cast(x.dtype) if not x.dtype.is_unsigned else 0
    return out_of_range.where(fill, x.div(two, rounding_mode="floor")).cast(x.dtype)


@op("Where")
def where(n: Call, cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
    return cond.where(a, b).cast(a.dtype)


# --- casts ---
def _check_cast(info: NodeInfo) -> str | None:
    if "to" in info.attrs and info.attrs["to"] not in lowbit.CARRIED:
        try:
            dtype_of(info.attrs["to"], "Cast")
        except NotImplementedError as e:
            return str(e)
    return None


def _cast(x: Tensor, dtype: DType) -> Tensor:
    if x.dtype.is_float and dtype.is_int:  # ONNX (C's) conversion truncates
        return x.trunc().cast(dtype) if dtype != dtypes.bool else x.cast(dtype)
    return x.cast(dtype)


@op("Cast", check=_check_cast)
def cast(n: Call, x: Tensor) -> Tensor:
    to = n.attr("to")
    if to in lowbit.CARRIED:  # float8, int4...: rounded or wrapped to it, in its carrier
        return lowbit.cast_to(x, to, bool(n.attr("saturate", 1)))
    return _cast(x, dtype_of(to, "Cast"))


@op("CastLike")
def cast_like(n: Call, x: Tensor, like: Tensor) -> Tensor:
    if (to := n.carried[1]) is not None:
        return lowbit.cast_to(x, to, bool(n.attr("saturate", 1)))
    return _cast(x, like.dtype)


# --- reductions ---
def _reduce_axes(n: Call, x: Tensor, axes_input: Tensor | None) -> tuple[int, ...] | None:
    """The axes to reduce: an attribute before the opset that made them an input (13 for
    ReduceSum, 18 for the others); None means every axis, () none."""
    if axes_input is not None:
        axes = n.ints(axes_input)
    else:
        axes = n.attr("axes", None)
    if not axes:
        return () if n.attr("noop_with_empty_axes", 0) else None
    return tuple(a + x.ndim if a < 0 else a for a in axes)


def _reducer(fn):
    def run(n: Call, x: Tensor, axes_input: Tensor | None = None) -> Tensor:
        axes = _reduce_axes(n, x, axes_input)
        keep = bool(n.attr("keepdims", 1))
        if axes == ():
            return fn(x, None, True, identity=True)
        return fn(x, axes, keep)
    return run


def _sum(x: Tensor, axes, keep, identity=False):
    return x if identity else x.sum(axes, keepdim=keep, dtype=x.dtype)


def _mean(x, axes, keep, identity=False):
    return x if identity else x.mean(axes, keepdim=keep).cast(x.dtype)


def _max(x, axes, keep, identity=False):
    if identity:
        return x
    if x.numel() == 0:
        shape = _reduced_shape(x, axes, keep)
        lo = -math.inf if x.dtype.is_float else dtypes.min(x.dtype)
        return Tensor.full(shape, lo, dtype=x.dtype, device=x.device)
    return x.max(axes, keepdim=keep)


def _min(x, axes, keep, identity=False):
    if identity:
        return x
    if x.numel() == 0:
        shape = _reduced_shape(x, axes, keep)
        hi = math.inf if x.dtype.is_float else dtypes.max(x.dtype)
        return Tensor.full(shape, hi, dtype=x.dtype, device=x.device)
    return x.min(axes, keepdim=keep)


def _reduced_shape(x: Tensor, axes, keep) -> tuple[int, ...]:
    axes = tuple(range(x.ndim)) if axes is None else axes
    return tuple(1 if i in axes else s for i, s in enumerate(x.shape) if keep or i not in axes)


def _prod(x, axes, keep, identity=False):
    return x if identity else x.prod(axes, keepdim=keep).cast(x.dtype)


def _l1(x, axes, keep, identity=False):
    return x.abs() if identity else x.abs().sum(axes, keepdim=keep, dtype=x.dtype)


def _l2(x, axes, keep, identity=False):
    sq = x * x
    out = sq if identity else sq.sum(axes, keepdim=keep, dtype=x.dtype)
    return out.cast(dtypes.float64).sqrt().cast(x.dtype) if x.dtype.is_int else out.sqrt()


def _sum_square(x, axes, keep, identity=False):
    sq = x * x
    return sq if identity else sq.sum(axes, keepdim=keep, dtype=x.dtype)


def _log_sum(x, axes, keep, identity=False):
    return (x if identity else x.sum(axes, keepdim=keep)).log()


def _log_sum_exp(x, axes, keep, identity=False):
    if identity:
        return x.exp().log()
    if x.dtype.is_int:
        return x.cast(dtypes.float64).logsumexp(axes, keepdim=keep).cast(x.dtype)
    if x.numel() == 0:
        return x.exp().sum(axes, keepdim=keep).log()
    return x.logsumexp(axes, keepdim=keep)


for _name, _reduce in {"ReduceSum": _sum, "ReduceMean": _mean, "ReduceMax": _max,
                   "ReduceMin": _min, "ReduceProd": _prod, "ReduceL1": _l1, "ReduceL2": _l2,
                   "ReduceSumSquare": _sum_square, "ReduceLogSum": _log_sum,
                   "ReduceLogSumExp": _log_sum_exp}.items():
    op(_name)(_reducer(_reduce))


def _arg(largest: bool):
    def run(n: Call, x: Tensor) -> Tensor:
        axis, keep = n.attr("axis", 0), bool(n.attr("keepdims", 1))
        axis = axis + x.ndim if axis < 0 else axis
        if n.attr("select_last_index", 0):
            flipped = x.flip(axis)
            idx = flipped.argmax(axis, keepdim=keep) if largest else \
                flipped.argmin(axis, keepdim=keep)
            return (x.shape[axis] - 1 - idx).cast(dtypes.int64)
        idx = x.argmax(axis, keepdim=keep) if largest else x.argmin(axis, keepdim=keep)
        return idx.cast(dtypes.int64)
    return run


op("ArgMax")(_arg(True))
op("ArgMin")(_arg(False))


@op("CumSum")
def cumsum(n: Call, x: Tensor, axis_t: Tensor) -> Tensor:
    axis = n.ints(axis_t)[0]
    axis = axis + x.ndim if axis < 0 else axis
    if n.attr("reverse", 0):
        x = x.flip(axis)
    out = x.cumsum(axis, dtype=x.dtype)
    if n.attr("exclusive", 0):
        out = out - x
    return out.flip(axis) if n.attr("reverse", 0) else out


# --- products ---
@op("Det")
def det(n: Call, x: Tensor) -> Tensor:
    return x.det()


@op("MatMul")
def matmul(n: Call, a: Tensor, b: Tensor) -> Tensor:
    return a.matmul(b)


@op("Gemm")
def gemm(n: Call, a: Tensor, b: Tensor, c: Tensor | None = None) -> Tensor:
    return rules.gemm(a, b, c, bool(n.attr("transA", 0)), bool(n.attr("transB", 0)),
                      n.attr("alpha", 1.0), n.attr("beta", 1.0))


@op("Einsum")
def einsum(n: Call, *xs: Tensor) -> Tensor:
    return Tensor.einsum(n.attr("equation").replace(" ", ""), *xs)


@op("MatMulInteger")
def matmul_integer(n: Call, a: Tensor, b: Tensor, a_zero: Tensor | None = None,
                   b_zero: Tensor | None = None) -> Tensor:
    a32 = a.cast(dtypes.int32) - (a_zero.cast(dtypes.int32) if a_zero is not None else 0)
    if b_zero is not None and b_zero.ndim == 1 and b.ndim >= 2:
        b32 = b.cast(dtypes.int32) - b_zero.cast(dtypes.int32)
    else:
        b32 = b.cast(dtypes.int32) - (b_zero.cast(dtypes.int32) if b_zero is not None else 0)
    if a_zero is not None and a_zero.ndim == 1 and a.ndim >= 2:
        a32 = a.cast(dtypes.int32) - a_zero.cast(dtypes.int32).reshape(-1, 1)
    return a32.matmul(b32)




def _dft_matrices(rows: int, cols: int, length: int, like: Tensor) -> tuple[Tensor, Tensor]:
    """cos and sin of 2 pi r c / length for r < rows, c < cols, in like's dtype: the angle
    from r c mod length (exact integers) so that large products lose nothing, and exact zeros
    at the multiples of pi / 2 where they are zero (so terms that cancel, cancel)."""
    r = Tensor.arange(rows, device=like.device).reshape(rows, 1)
    c = Tensor.arange(cols, device=like.device).reshape(1, cols)
    m = (r * c) % length
    angle = m.float() * (2 * math.pi / length)
    quarter = (4 * m) % length == 0  # a multiple of pi / 2: m / length in {0, 1/4, 1/2, 3/4}
    sin = (quarter & ((2 * m) % length == 0)).where(0.0, angle.sin())
    cos = (quarter & ((2 * m) % length != 0)).where(0.0, angle.cos())
    return cos.cast(like.dtype), sin.cast(like.dtype)


def _fit(x: Tensor, length: int) -> Tensor:
    """x's last axis cut or padded with zeros to length."""
    size = x.shape[-1]
    if size >= length:
        return x[..., :length]
    return x.pad([None] * (x.ndim - 1) + [(0, length - size)])


@op("DFT")
def dft(n: Call, x: Tensor, length_t: Tensor | None = None, axis_t: Tensor | None = None
        ) -> Tensor:
    """The discrete Fourier transform along axis, as matrix products with cosines and sines
    (O(n^2)): real (last axis 1) or complex (2) input, complex output; inverse (scaled by
    1 / length), onesided (the first length // 2 + 1 frequencies; inverse: a real signal from
    them, numpy's irfft)."""
    default_axis = 1 if n.opset < 20 else -2
    axis = n.ints(axis_t)[0] if axis_t is not None and axis_t.numel() else \
        n.attr("axis", default_axis)
    axis = axis % x.ndim
    inverse, onesided = bool(n.attr("inverse", 0)), bool(n.attr("onesided", 0))
    size = x.shape[axis]
    if length_t is not None and length_t.numel():
        length = n.ints(length_t)[0]
    else:
        length = 2 * (size - 1) if inverse and onesided else size
    moved = x.movedim(axis, -2)  # (..., signal, 1 or 2)
    real = moved[..., 0]
    imag = moved[..., 1] if x.shape[-1] == 2 else None
    if inverse and onesided:  # numpy's irfft: Hermitian symmetry, a real signal
        half = length // 2 + 1
        real = _fit(real, half)
        cos, sin = _dft_matrices(half, length, length, real)
        weight = Tensor([1.0 if k == 0 or 2 * k == length else 2.0 for k in range(half)],
                        dtype=real.dtype, device=real.device).reshape(half, 1) / length
        out = real.matmul(cos * weight)
        if imag is not None:
            out = out - _fit(imag, half).matmul(sin * weight)
        return out.unsqueeze(-1).movedim(-2, axis).cast(x.dtype)
    freqs = length // 2 + 1 if onesided and not inverse else length
    real = _fit(real, length)
    cos, sin = _dft_matrices(length, freqs, length, real)
    sign = 1.0 if inverse else -1.0
    out_real = real.matmul(cos)
    out_imag = real.matmul(sin) * sign
    if imag is not None:
        imag = _fit(imag, length)
        out_real = out_real - imag.matmul(sin) * sign
        out_imag = out_imag + imag.matmul(cos)
    if inverse:
        out_real, out_imag = out_real / length, out_imag / length
    out = Tensor.stack(out_real, out_imag, dim=-1)  # (..., freqs, 2)
    return out.movedim(-2, axis).cast(x.dtype)
