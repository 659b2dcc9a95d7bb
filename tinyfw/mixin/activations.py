"""Activation functions (mixed into Tensor): relu, sigmoid, tanh, GELU, SiLU, ELU, softplus and
the others of torch.nn.functional, each a composition of elementwise ops written so that its
values and its gradient at the edges (0, the bounds, NaN, inf) are torch's."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tinyfw.mixin.core import TensorCore, float32_inside
from tinyfw.uop import elementwise_math

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor


class ActivationOps(TensorCore):
    """The activation functions, elementwise."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: the elementwise ops (<, >, &, +, *, /, **, where, maximum, abs,
    # exp, expm1, log1p, erf, clip, and _math: a function of tinyfw/uop/elementwise_math.py).

    def detach(self) -> Tensor:
        """The same value, cut from the graph: no gradient flows back through it."""
        raise NotImplementedError

    # --- the activations ---

    def relu(self: Tensor) -> Tensor:
        """max(x, 0) as torch: relu(-0.0) is -0.0, NaN stays NaN; the gradient at 0 is 0 and at
        NaN 1 (torch's: none where x <= 0)."""
        return (self <= 0).where((self < 0).where(0, self.detach()), self)

    def sigmoid(self: Tensor) -> Tensor:
        """1 / (1 + exp(-x)), written so exp never overflows (no inf, no nan in gradients)."""
        return self._math(elementwise_math.sigmoid)

    def tanh(self: Tensor) -> Tensor: return self._math(elementwise_math.tanh)
    @float32_inside
    def silu(self: Tensor) -> Tensor: return self * self.sigmoid()
    def swish(self: Tensor) -> Tensor: return self.silu()
    def relu6(self: Tensor) -> Tensor: return self.hardtanh(0, 6)  # torch's: relu6(inf) is 6
    def leaky_relu(self: Tensor, neg_slope: float = 0.01) -> Tensor:
        return (self > 0).where(self, self * neg_slope)

    @float32_inside
    def elu(self: Tensor, alpha: float = 1.0) -> Tensor:
        below = (self > 0).where(0.0, self)  # min(x, 0), with the whole gradient at 0
        return (self > 0).where(self, alpha * (below.exp() - 1))

    @float32_inside
    def softplus(self: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
        """log(1 + exp(beta x)) / beta, linear past threshold like torch's."""
        bx = self * beta
        stable = (bx.maximum(0) + (-bx.abs()).exp().log1p()) / beta
        return (bx > threshold).where(self, stable)

    @float32_inside
    def gelu(self: Tensor, approximate: str = "none") -> Tensor:
        """GELU: x Phi(x) from erf, or its tanh approximation (approximate="tanh"), as torch;
        floats only, as torch (the tanh form cubed an int32 2000 past its range: gelu was 0)."""
        self._float_only("gelu")
        if approximate == "tanh":
            inner = math.sqrt(2 / math.pi) * (self + 0.044715 * self ** 3)
            return 0.5 * self * (1 + inner.tanh())
        if approximate != "none":
            raise RuntimeError("approximate argument must be either none or tanh.")
        return 0.5 * self * (1 + (self * math.sqrt(0.5)).erf())

    def quick_gelu(self: Tensor) -> Tensor: return self * (self * 1.702).sigmoid()
    @float32_inside
    def mish(self: Tensor) -> Tensor: return self * self.softplus().tanh()
    def hardtanh(self: Tensor, min_val: float = -1, max_val: float = 1) -> Tensor:
        """x clipped to [min_val, max_val]; torch's gradient: only strictly inside (none at the
        bounds, none at NaN, as torch's vectorized kernel, which a tensor of more than a few
        elements takes; its scalar loop passes NaN's)."""
        inside = (self > min_val) & (self < max_val)
        return inside.where(self, self.detach().clip(min_val, max_val))

    def _float_only(self: Tensor, name: str) -> None:
        """torch's NotImplementedError for an activation of an integer or bool tensor."""
        if not self.dtype.is_float:
            raise NotImplementedError(f'"{name}" not implemented for {self.dtype.name}')

    @float32_inside
    def celu(self: Tensor, alpha: float = 1.0) -> Tensor:
        """max(0, x) + min(0, alpha (e**(x / alpha) - 1))."""
        self._float_only("celu")
        below = (self > 0).where(0.0, self)  # min(x, 0), with the whole gradient at 0
        return (self > 0).where(self, alpha * (below / alpha).expm1())

    @float32_inside
    def selu(self: Tensor) -> Tensor:
        """scale * elu(x, alpha) with the constants of self-normalizing networks."""
        self._float_only("selu")
        alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
        below = (self > 0).where(0.0, self)
        return scale * (self > 0).where(self, alpha * below.expm1())

    def softsign(self: Tensor) -> Tensor:
        """x / (1 + |x|)."""
        return self / (1 + self.abs())

    def hardsigmoid(self: Tensor, alpha: float = 1 / 6, beta: float = 0.5) -> Tensor:
        """alpha x + beta clipped to [0, 1] (torch's hardsigmoid for the defaults)."""
        self._float_only("hardsigmoid")
        v = alpha * self + beta
        # torch's gradient: alpha strictly inside (0, 1), none at the bounds and at NaN
        return ((v > 0) & (v < 1)).where(v, (v <= 0).where(0.0, (v >= 1).where(1.0, v.detach())))

    @float32_inside
    def hardswish(self: Tensor) -> Tensor:
        """x * min(max(x + 3, 0), 6) / 6, as torch computes it, and torch's gradient (of its
        vectorized kernel): 0 up to -3, 1 from 3, x / 3 + 0.5 between (NaN at NaN)."""
        self._float_only("hardswish")
        low, high = self <= -3, self >= 3
        mid = (low | high).where(0.0, self)  # the inner formula's input, finite where unused
        return low.where(self.detach() * 0.0 / 6, high.where(self * 6.0 / 6,
                                                             mid * (mid + 3) / 6))

    @float32_inside
    def logsigmoid(self: Tensor) -> Tensor:
        """log(sigmoid(x)) = -softplus(-x), without the log of a tiny number."""
        self._float_only("log_sigmoid")
        return -(-self).softplus()
