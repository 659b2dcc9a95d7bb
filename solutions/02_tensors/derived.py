# Solutions of chapter 02, generated from tinyfw/mixin/derived.py by `python -m tools.generate`.
# Edit tinyfw/mixin/derived.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/02_tensors --impl=solutions
# generated text id: edc7088b6d71ca5c (lets tools.generate tell your edits apart)
"""Tensor ops that are compositions of other Tensor ops: no new primitive, no gradient rule
(binary_crossentropy, atan2 and hypot apart: they take torch's gradient by hand, a gradient
override)."""
from __future__ import annotations

import math
from math import prod as prod_of
from typing import TYPE_CHECKING

from tinyfw.dtype import DType, dtypes, promote_types, torch_name
from tinyfw.engine import realize
from tinyfw.helpers import shape_str
from tinyfw.mixin.core import TensorCore, float32_inside
from tinyfw.mixin.indexing import _broadcast_shapes, _selected

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor
    from tinyfw.uop.ops import UOp

AxisArg = int | tuple[int, ...] | None


class DerivedOps(TensorCore):
    """Reductions, softmax, matmul, losses and atan2 and hypot written with the Tensor's own
    methods. Their gradients come for free, through the ops they are made of (but for the
    overrides the module's docstring names)."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: type(self)(data) makes a tensor of an array or a list; the
    # elementwise ops (+, *, exp, log, where, cast, ...), the reductions (sum, max, any, argmax)
    # and MovementOps (reshape, unsqueeze, permute, ...) are the ops everything here is made of.

    def _axes(self, axis: AxisArg) -> tuple[int, ...]:
        """An axis argument as sorted positive axes."""
        raise NotImplementedError

    @staticmethod
    def arange(start: int | float, stop: int | float | None = None, step: int | float = 1,
               dtype: DType | str | None = None, device: str | None = None) -> Tensor:
        """Values from start up to (not including) stop, step apart."""
        raise NotImplementedError

    # --- the derived ops ---

    def mean(self: Tensor, axis: AxisArg = None, keepdim: bool = False) -> Tensor:
        """The average over axis (all axes when None): a sum divided by how many were summed."""
        # >>> exercise 02.mean #mean-as-a-composition
        x = self if self.dtype.is_float else self.float()
        wide = x.float() if x.dtype.itemsize < 4 else x  # a float16 sum can pass 65504
        total = wide.sum(axis, keepdim=keepdim)
        count = x.numel() // max(total.numel(), 1) if x.numel() else 0
        return (total / count).cast(x.dtype)
        # <<< exercise

    def var(self: Tensor, axis: AxisArg = None, keepdim: bool = False,
            correction: int = 1) -> Tensor:
        """The variance over axis, dividing by N - correction (1: the unbiased estimate)."""
        x = self if self.dtype.is_float else self.float()
        return x._wide_var(axis, keepdim, correction).cast(x.dtype)

    def _wide_var(self: Tensor, axis: AxisArg, keepdim: bool, correction: int) -> Tensor:
        """var of a float tensor, float16 and bfloat16 computed (and left) in float32."""
        if isinstance(axis, (tuple, list)) and len(axis) == 0:
            axis = None  # no axes: all of them, as torch's
        wide = self.float() if self.dtype.itemsize < 4 else self  # float16 squares overflow
        # two passes (the squared distances to the mean) rather than E[x^2] - E[x]^2, which
        # loses every digit when the mean is large against the spread
        sq = (wide - wide.mean(axis, keepdim=True)).square().sum(axis, keepdim=keepdim)
        n = self.numel() // max(sq.numel(), 1) if self.numel() else 0
        return sq / max(n - correction, 0)

    def std(self: Tensor, axis: AxisArg = None, keepdim: bool = False,
            correction: int = 1) -> Tensor:
        """The standard deviation over axis (float16's computed in float32 and rounded once,
        as torch: the std of [6e4, -6e4, 0] is 6e4, though its variance is inf); where the
        values don't spread (all equal) its gradient is 0, as torch's, not sqrt's inf at 0
        times a zero (nan)."""
        x = self if self.dtype.is_float else self.float()
        var = x._wide_var(axis, keepdim, correction)
        spread = var != 0
        return spread.where(spread.where(var, 1.0).sqrt(), 0.0).cast(x.dtype)

    def var_mean(self: Tensor, axis: AxisArg = None, keepdim: bool = False,
                 correction: int = 1) -> tuple[Tensor, Tensor]:
        """(var, mean) over axis, as torch.var_mean."""
        return self.var(axis, keepdim, correction), self.mean(axis, keepdim)

    def std_mean(self: Tensor, axis: AxisArg = None, keepdim: bool = False,
                 correction: int = 1) -> tuple[Tensor, Tensor]:
        """(std, mean) over axis, as torch.std_mean."""
        return self.std(axis, keepdim, correction), self.mean(axis, keepdim)

    def prod(self: Tensor, axis: AxisArg = None, keepdim: bool = False,
             dtype: DType | str | None = None) -> Tensor:
        """The product over axis, as torch: ints and bools multiply into int64, dtype casts the
        input first. Halves of the axis multiplied together, log2(n) times (the gradient, zeros
        included, is that of the multiplications)."""
        x = self.cast(dtype) if dtype is not None else self if self.dtype.is_float else \
            self.cast(dtypes.int64)
        if x.dtype.is_float and x.dtype.itemsize < 4:
            return x.float().prod(axis, keepdim).cast(x.dtype)
        axes = x._axes(axis)
        kept = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        n = prod_of(x.shape[i] for i in axes)
        order = tuple(i for i in range(x.ndim) if i not in axes) + axes
        values = x.permute(order).reshape(kept + (n,))
        if n == 0:
            values = values.pad([(0, 0)] * len(kept) + [(0, 1)], value=1)
            n = 1
        while n > 1:
            if n % 2:
                values = values.pad([(0, 0)] * len(kept) + [(0, 1)], value=1)
                n += 1
            n //= 2
            lead = [None] * len(kept)
            values = values.shrink(lead + [(0, n)]) * values.shrink(lead + [(n, 2 * n)])
        out = values.reshape(kept)
        if keepdim:
            out = out.reshape(tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
        return out

    @float32_inside
    def normalize(self: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
        """x / max(||x||_p, eps) along dim (torch.nn.functional.normalize)."""
        if not self.dtype.is_float:
            raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor "
                               f"as input. Got {self.dtype.name}")
        magnitude = self.abs()
        if p == 2:
            squares = (self * self).sum(dim, keepdim=True)
            zero = squares == 0  # sqrt's gradient at 0 is inf: a zero norm takes none
            norm = zero.where(0.0, zero.where(1.0, squares).sqrt())
        elif p == math.inf:
            norm = magnitude.max(dim, keepdim=True)
        elif p == -math.inf:
            norm = magnitude.min(dim, keepdim=True)
        elif p == 0:
            norm = (self != 0).cast(self.dtype).sum(dim, keepdim=True)
        elif p == 1:
            norm = magnitude.sum(dim, keepdim=True)
        else:
            norm = (magnitude ** p).sum(dim, keepdim=True) ** (1 / p)
        return self / norm.maximum(eps)

    def softmin(self: Tensor, axis: int = -1) -> Tensor:
        """softmax(-x) along axis."""
        return (-self).softmax(axis)

    @float32_inside
    def softmax(self: Tensor, axis: int = -1) -> Tensor:
        """exp(x) / sum(exp(x)) along axis, computed after subtracting the max so exp can't
        overflow."""
        if self.numel() == 0:  # nothing to normalize (and a max over an empty axis raises)
            return self.exp()
        # >>> exercise 02.softmax #softmax-and-its-stable-form
        shifted = self - self.max(axis, keepdim=True).detach()
        e = shifted.exp()
        return e / e.sum(axis, keepdim=True)
        # <<< exercise

    @float32_inside
    def log_softmax(self: Tensor, axis: int = -1) -> Tensor:
        """log(softmax(x)) along axis, without taking the log of a tiny number."""
        if self.numel() == 0:  # nothing to normalize (and a max over an empty axis raises)
            return self.exp()
        shifted = self - self.max(axis, keepdim=True).detach()
        return shifted - shifted.exp().sum(axis, keepdim=True).log()

    @float32_inside
    def logsumexp(self: Tensor, axis: AxisArg = None, keepdim: bool = False) -> Tensor:
        """log(sum(exp(x))) over axis, computed stably; no axes (an empty tuple) means all."""
        if isinstance(axis, (tuple, list)) and len(axis) == 0:
            axis = None
        if any(self.shape[i] == 0 for i in self._axes(axis)):  # log of an empty sum: -inf
            return self.exp().sum(axis, keepdim).log()
        m = self.max(axis, keepdim=True).detach()
        # an infinite max shifts by nothing: inf - inf would be NaN, but log(sum(exp(x))) is
        # then +inf (one value is inf) or -inf (all are), as torch gives
        m = m.isinf().where(0.0, m)
        out = (self - m).exp().sum(axis, keepdim=True).log() + m
        return out if keepdim else out.squeeze(axis) if axis is not None else out.reshape(())

    # --- elementwise functions of two tensors ---

    def atan2(self: Tensor, other: Tensor) -> Tensor:
        """The angle of the point (other, self) in [-pi, pi], as torch.atan2 (y = self, x =
        other, broadcast; ints and bools give the default float). Written with the atan of a
        ratio in [0, 1] and the quadrant from the signs, -0.0 as negative: atan2(0, -0.0) is
        pi, atan2(-0.0, 0) is -0.0, atan2(0, 0) is 0, and infinities as C's (atan2(inf, -inf)
        is 3 pi / 4). Its gradient torch's: x / (x^2 + y^2) to y and -y / (x^2 + y^2) to x,
        0 where x^2 + y^2 is 0."""
        _tensor_argument("atan2", other)
        y, x = self._operands(other)
        y, x = y._floating(), x._floating()
        if y.dtype.itemsize < 4:  # float16 and bfloat16 computed in float32, rounded once
            return y.float().atan2(x.float()).cast(y.dtype)
        ax, ay = x.abs(), y.abs()
        steep = ay > ax  # past 45 degrees: the angle is pi / 2 - atan(|x| / |y|)
        big, small = steep.where(ay, ax), steep.where(ax, ay)
        ratio = (big == 0).where(0.0, small / (big == 0).where(1.0, big))
        ratio = (ax.isinf() & ay.isinf()).where(1.0, ratio)  # inf / inf: 45 degrees
        angle = ratio.atan()
        angle = steep.where(math.pi / 2 - angle, angle)
        angle = _negative(x).where(math.pi - angle, angle)
        out = (x.isnan() | y.isnan()).where(math.nan, _negative(y).where(-angle, angle))
        yd, xd = y.detach(), x.detach()
        square = yd * yd + xd * xd
        inverse = (square == 0).where(0.0, 1 / (square == 0).where(1.0, square))
        return out._with_gradient(_slopes_gradient, (y, x, xd * inverse, -yd * inverse))

    arctan2 = atan2

    def hypot(self: Tensor, other: Tensor) -> Tensor:
        """sqrt(self^2 + other^2) without overflow or underflow in between, as torch.hypot
        (broadcast; float dtypes only, as torch's): the larger magnitude times sqrt(1 + r^2),
        r the ratio of the smaller to it; inf where either is infinite, even beside a nan
        (C's hypot). Its gradient torch's: self / hypot and other / hypot (nan at (0, 0))."""
        _tensor_argument("hypot", other)
        a, b = self._operands(other)
        if not a.dtype.is_float:
            raise NotImplementedError(f"\"hypot_cpu\" not implemented for "
                                      f"'{torch_name(a.dtype)}'")
        if a.dtype.itemsize < 4:  # float16 and bfloat16 computed in float32, rounded once
            return a.float().hypot(b.float()).cast(a.dtype)
        aa, ab = a.abs(), b.abs()
        first = aa >= ab
        big, small = first.where(aa, ab), first.where(ab, aa)
        ratio = small / (big == 0).where(1.0, big)
        out = big * (1 + ratio * ratio).sqrt()
        out = (a.isnan() | b.isnan()).where(math.nan, out)
        out = (a.isinf() | b.isinf()).where(math.inf, out)
        ad, bd, outd = a.detach(), b.detach(), out.detach()
        return out._with_gradient(_slopes_gradient, (a, b, ad / outd, bd / outd))

    def matmul(self: Tensor, other: Tensor) -> Tensor:
        """The matrix product, as torch.matmul defines it for 1-D, 2-D and batched operands:
        broadcast both to (..., n, k, m), multiply, and sum over k."""
        _both_tensors("matmul", self, other)
        result = promote_types(self.dtype, other.dtype)
        if result.is_float and result.itemsize < 4:  # float16, bfloat16: as torch, products and
            # their sum in float32 (a product of two is exact there), rounded once at the end
            return self.float().matmul(other.float()).cast(result)
        # >>> exercise 02.matmul #matmul-from-broadcasting
        if self.ndim == 0 or other.ndim == 0:
            raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                               f"{self.ndim}D and {other.ndim}D")
        x = self.unsqueeze(0) if self.ndim == 1 else self
        w = other.unsqueeze(-1) if other.ndim == 1 else other
        if x.shape[-1] != w.shape[-2]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({x.shape[-2]}x"
                               f"{x.shape[-1]} and {w.shape[-2]}x{w.shape[-1]})")
        products = x.unsqueeze(-1) * w.unsqueeze(-3)
        out = products.sum(-2, dtype=products.dtype)  # int32 @ int32 is int32, as in torch
        if self.ndim == 1:
            out = out.squeeze(-2)
        return out.squeeze(-1) if other.ndim == 1 else out
        # <<< exercise

    def dot(self: Tensor, other: Tensor) -> Tensor:
        """tinygrad's name for matmul."""
        _both_tensors("dot", self, other)
        return self.matmul(other)

    def __matmul__(self: Tensor, other: Tensor) -> Tensor:
        return self.matmul(other)

    def __rmatmul__(self: Tensor, other: Tensor) -> Tensor:
        return type(self)(other).matmul(self) if not hasattr(other, "uop") else other.matmul(self)

    def linear(self: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
        """x @ weight (+ bias), with weight of shape (in, out) as tinygrad stores it."""
        out = self.matmul(weight)
        return out + bias if bias is not None else out

    def one_hot(self: Tensor, num_classes: int) -> Tensor:
        """Integer labels as rows of 0s with a 1 at the label: shape (..., num_classes). A
        label out of range raises torch's RuntimeError when the result is computed."""
        out = self._hot(num_classes)
        _check_labels(out, self, (self < 0), RuntimeError, "Class values must be non-negative. "
                      "(found {value})")
        _check_labels(out, self, (self >= num_classes), RuntimeError,
                      f"Class values must be smaller than num_classes. (found {{value}}, with "
                      f"num_classes={num_classes})")
        return out

    def _hot(self: Tensor, num_classes: int) -> Tensor:
        """one_hot without its checks: a label out of range makes a row of zeros."""
        if not self.dtype.is_int:
            raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor "
                               f"(an integer dtype), not {self.dtype.name} (a Float or Bool)")
        classes = type(self).arange(num_classes, device=self.device)
        return (self.unsqueeze(-1) == classes).cast(self.dtype)

    def cross_entropy(self: Tensor, target: Tensor, reduction: str = "mean",
                      label_smoothing: float = 0.0, ignore_index: int = -100,
                      weight: Tensor | None = None) -> Tensor:
        """torch.nn.functional.cross_entropy: logits of shape (N, C, ...) or (C,), and target
        class indices (ints) or class probabilities (floats) along axis 1."""
        axis = 1 if self.ndim >= 2 else 0
        if not 0 <= label_smoothing <= 1:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                               f"{label_smoothing}")
        classes = self.shape[axis]
        if not target.dtype.is_float:
            log_probs = self.log_softmax(axis)
            nll = log_probs.nll_loss(target, weight, ignore_index, reduction)
            if not label_smoothing:
                return nll
            keep = target != ignore_index
            w = weight.reshape(classes, *[1] * (self.ndim - axis - 1)) if weight is not None \
                else None
            # an ignored row counts 0, by a where (its -inf logits would give inf * 0)
            smooth = keep.where(-(log_probs if w is None else log_probs * w).sum(axis), 0.0)
            if reduction == "mean":
                picked = keep.float() if weight is None else \
                    _weight_of(weight, target, keep.float())
                smooth = smooth.sum() / picked.sum()
            else:
                smooth = _reduce_loss(smooth, reduction)
            return nll * (1 - label_smoothing) + smooth * (label_smoothing / classes)
        if target.shape != self.shape:
            raise RuntimeError(f"class probabilities (target of shape {shape_str(target.shape)})"
                               f" must have the shape of the logits {shape_str(self.shape)}")
        probs = target
        if label_smoothing:
            probs = probs * (1 - label_smoothing) + label_smoothing / classes
        if weight is not None:
            probs = probs * weight.reshape(classes, *[1] * (self.ndim - axis - 1))
        loss = -(self.log_softmax(axis) * probs).sum(axis)
        if reduction == "mean" and self.ndim >= 2:  # torch divides by the batch size only
            return loss.sum() / (self.numel() // classes)
        return _reduce_loss(loss, reduction)

    def nll_loss(self: Tensor, target: Tensor, weight: Tensor | None = None,
                 ignore_index: int = -100, reduction: str = "mean") -> Tensor:
        """torch.nn.functional.nll_loss: minus the log-probability (self, classes on axis 1, or
        axis 0 of a 1-D input) at each target class, weighted; "mean" divides by the weights."""
        axis = 1 if self.ndim >= 2 else 0
        if not target.dtype.is_int:
            raise RuntimeError(f"expected scalar type Long (an integer dtype) for the target, "
                               f"but found {target.dtype.name}")
        if target.shape != self.shape[:axis] + self.shape[axis + 1:]:
            raise ValueError(f"Expected input batch_size ({self.shape[0] if axis else 1}) to "
                             f"match target batch_size ({target.shape[0] if target.ndim else 1})"
                             f": input of shape {shape_str(self.shape)}, target of shape "
                             f"{shape_str(target.shape)}")
        classes = self.shape[axis]
        if weight is not None and weight.shape != (classes,):
            raise RuntimeError(f"weight tensor should be defined either for all {classes} "
                               f"classes or no classes but got weight tensor of shape: "
                               f"{shape_str(weight.shape)}")
        keep = (target != ignore_index)
        hot = target._hot(classes) != 0  # (..., C): the class axis last
        _check_labels(hot, target, keep & ((target < 0) | (target >= classes)), IndexError,
                      "Target {value} is out of bounds.")
        if axis == 1:
            hot = hot.permute(0, hot.ndim - 1, *range(1, hot.ndim - 1))
        w = keep.float() if weight is None else _weight_of(weight, target, keep.float())
        # each target's log-probability picked (not multiplied by a one-hot: -inf * 0 is nan,
        # and a masked logit is -inf), and an ignored target's loss 0 by a where, so that its
        # gradient is 0 even where the mean divides by a total weight of 0 (torch's, not nan)
        loss = keep.where(-_selected(hot, self, axis) * w, 0.0)
        if reduction == "mean":
            return loss.sum() / w.sum()
        return _reduce_loss(loss, reduction)

    def sparse_categorical_crossentropy(self: Tensor, target: Tensor, ignore_index: int = -1,
                                        label_smoothing: float = 0.0,
                                        reduction: str = "mean") -> Tensor:
        """tinygrad's cross entropy of logits (..., C) against integer labels (...); labels equal
        to ignore_index count for nothing."""
        log_probs = self.log_softmax(-1)
        keep = (target != ignore_index)
        hot = target._hot(self.shape[-1]).float()
        _check_labels(hot, target, keep & ((target < 0) | (target >= self.shape[-1])),
                      IndexError, "Target {value} is out of bounds.")
        picked = _selected(hot != 0, log_probs, -1)  # not a product: -inf * 0 is nan
        smooth = log_probs.mean(-1)
        loss = keep.where(-((1 - label_smoothing) * picked + label_smoothing * smooth), 0.0)
        if reduction == "mean":
            return loss.sum() / keep.float().sum().maximum(1)
        return _reduce_loss(loss, reduction)

    def binary_crossentropy(self: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
        """Cross entropy of probabilities in [0, 1] against targets in [0, 1], as torch's
        binary_cross_entropy: each log clamped at -100 (p = 0 against 1 costs 100, not inf),
        and torch's gradient, (p - y) / max(p (1 - p), 1e-12) (finite at p = 0 and 1)."""
        x = self if self.dtype.is_float else self.float()
        y = target.cast(x.dtype)
        log_p, log_q = x.log().maximum(-100.0), (-x).log1p().maximum(-100.0)
        xd = x.detach()
        to_x = (xd - y.detach()) / (xd * (1 - xd)).maximum(1e-12)
        to_y = (-xd).log1p() - xd.log()
        loss = ((y - 1) * log_q - y * log_p)._with_gradient(_bce_gradient, (x, y, to_x, to_y))
        for what, v in (("input", x), ("target", y)):
            _check_labels(loss, v, ((v >= 0) & (v <= 1)).logical_not(), RuntimeError,
                          f"all elements of {what} should be between 0 and 1")
        return _reduce_loss(loss, reduction)

    def binary_crossentropy_logits(self: Tensor, target: Tensor, reduction: str = "mean",
                                   pos_weight: Tensor | None = None) -> Tensor:
        """binary_crossentropy of sigmoid(self), computed stably from the logits; pos_weight
        weighs the positive term (broadcast along the last axis, the classes)."""
        # max(x, 0) shares its tie at 0, so the gradient there is sigmoid(0) - target, as torch's
        if pos_weight is None:
            shape = _broadcast_shapes([self.shape, target.shape])
            x, y = self._broadcast_to(shape), target._broadcast_to(shape)
            # max(x, 0) - x * y is inf - inf at x = +inf: its limit there
            infinite = x.isinf()
            finite = infinite.where(0, x)
            linear = infinite.where(_linear_limit(x, y), finite.maximum(0) - finite * y)
            # torch's gradient: sigmoid(x) - y to x (sigmoid(0) - y at the kink), -x to y
            xd, yd = x.detach(), y.detach()
            loss = (linear + (-x.abs()).exp().log1p())._with_gradient(
                _bce_gradient, (x, y, xd.sigmoid() - yd, -xd))
        else:  # (1 - y) x + (1 + (pw - 1) y) log(1 + exp(-x)), as torch writes it
            softplus_neg = (-self).maximum(0) + (-self.abs()).exp().log1p()
            loss = (1 - target) * self + (1 + (pos_weight - 1) * target) * softplus_neg
        return _reduce_loss(loss, reduction)

    def mse(self: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
        """Mean squared error."""
        return _reduce_loss((self - target).square(), reduction)


def _linear_limit(x: Tensor, target: Tensor) -> Tensor:
    """max(x, 0) - x * target where x is infinite: (1 - target) * x at +inf, -target * x at
    -inf, and 0 where that factor is 0 (the loss of a sure, right guess), not 0 * inf."""
    factor = (x > 0).where(1 - target, -target)
    return (factor == 0).where(0, factor * x)


def _check_labels(out: Tensor, labels: Tensor, bad: Tensor, error: type[Exception],
                  message: str) -> None:
    """Make computing out raise error(message) where any label is bad ("{value}" in message is
    the first bad label): a deferred check (tinyfw/engine/realize.py), as the labels are data."""
    flat_bad, flat = bad.flatten(), labels.flatten()
    if flat.numel() == 0:
        return
    first = flat_bad.cast(labels.dtype).argmax()  # the first True
    at = type(labels).arange(flat.numel(), device=labels.device) == first
    value = at.where(flat, 0).sum(dtype=labels.dtype)
    realize.attach_check(out.uop, realize.Check(flat_bad.any().uop, error, message, value.uop))


def _bce_gradient(grad: UOp, node: UOp, x: UOp, y: UOp, to_x: UOp, to_y: UOp
                  ) -> tuple[UOp, UOp, None, None]:
    """binary_crossentropy's gradient, torch's: grad times to_x, (x - y) / max(x (1 - x),
    1e-12), to the probabilities, and times to_y, log(1 - x) - log(x) (unclamped), to the
    targets."""
    return grad * to_x, grad * to_y, None, None


def _slopes_gradient(grad: UOp, node: UOp, a: UOp, b: UOp, to_a: UOp, to_b: UOp
                     ) -> tuple[UOp, UOp, None, None]:
    """The gradient of a function of a and b whose partial derivatives are to_a and to_b
    (computed beside it, as torch's formulas give them): grad times each."""
    return grad * to_a, grad * to_b, None, None


def _negative(x: Tensor) -> Tensor:
    """True where x is below 0 or is -0.0 (its reciprocal is -inf)."""
    return (x < 0) | ((x == 0) & (x.reciprocal() < 0))


def _tensor_argument(name: str, other: object) -> None:
    """torch's TypeError for an `other` that is not a tensor (a Python number, say)."""
    if not hasattr(other, "uop"):
        raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(other).__name__}")


def _weight_of(weight: Tensor, target: Tensor, keep: Tensor) -> Tensor:
    """The class weight of each target (0 where keep is 0), of the target's shape."""
    hot = target._hot(weight.shape[0]).float()
    return (hot * weight).sum(-1) * keep


def _reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")



def _both_tensors(name: str, a: object, b: object) -> None:
    """torch's TypeError for a Python scalar given to matmul or dot, in either place."""
    for position, x in ((1, a), (2, b)):
        if not hasattr(x, "uop"):
            raise TypeError(f"{name}(): argument '{'input' if position == 1 else 'other'}' "
                            f"(position {position}) must be Tensor, not {type(x).__name__}")
