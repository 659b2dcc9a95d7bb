"""conv2d's input gradient as a convolution of its own (chapter 10).

Differentiated op by op, conv2d's windows view (`_pool`: a pad, a repeat and shrinks) gives an
input gradient that adds each output's share back through the repeat: a "col2im" kernel whose
every pixel sums all its kernel's taps, most of them masked off, with a division and a remainder
in each one's validity, after a kernel of the products per window. Mathematically, the input
gradient of a stride-1 convolution is itself a stride-1 convolution: of the output's gradient,
padded by the kernel's reach less the forward's padding, with the weight flipped and its in and
out channels swapped within each group (the transposed convolution). That is one kernel, as fast
as the forward's (the conv net's training step: bench/README.md).

`conv2d` here is NNOps' with that gradient given by hand (a GradientOverride): the input's from
the convolution above, the weight's and bias's by differentiating the forward's ops, as before.
The output's gradient is stored once for all three: left lazy, the weight's and the bias's
kernels each computed it again (a ReLU's mask and a max pool's gradient, per tap).
Other strides keep the op-by-op gradient (the transposed convolution would need the output's
gradient spread with zeros between its elements first).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tinyfw.mixin.nn_ops import IntOrTuple, NNOps, make_tuple, pool_padding, same_padding
from tinyfw.uop.gradient import compute_gradient

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor
    from tinyfw.uop.ops import UOp


class ConvGradientOps(NNOps):
    """NNOps with a stride-1 2-D convolution's input gradient given as a convolution."""

    def conv2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1,
               stride: IntOrTuple = 1, dilation: IntOrTuple = 1,
               padding: IntOrTuple | str = 0) -> Tensor:
        if not (self.requires_grad or weight.requires_grad) or self.ndim != 4 or weight.ndim != 4 \
                or make_tuple(stride, 2) != (1, 1):
            return NNOps.conv2d(self, weight, bias, groups, stride, dilation, padding)
        dilations = make_tuple(dilation, 2)
        reach = [d * (k - 1) for d, k in zip(dilations, weight.shape[2:])]  # (h, w)
        pads = pool_padding(same_padding(padding, weight.shape[2:], stride, dilation), 2)
        # pads is (left, right, top, bottom); the output's gradient is padded by reach - pad
        grad_pads = tuple(reach[1 - j // 2] - p for j, p in enumerate(pads))
        if any(p < 0 for p in grad_pads):  # padded past the reach: outputs see only padding
            return NNOps.conv2d(self, weight, bias, groups, stride, dilation, padding)
        inputs = (self, weight) if bias is None else (self, weight, bias)
        out = NNOps.conv2d(self, channels_last(weight), bias, groups, stride, dilation, padding)
        return out._with_gradient(_conv2d_gradient, inputs,
                                  (groups, dilations, padding, grad_pads, type(self)))


def _conv2d_gradient(grad: UOp, node: UOp, *args: Any) -> tuple[UOp | None, ...]:
    """conv2d's gradients: the input's by the transposed convolution (the module's docstring),
    the weight's and bias's by differentiating the forward value's ops."""
    *inputs, groups, dilations, padding, grad_pads, tensor = args
    x, weight = inputs[0], inputs[1]
    grad = tensor(grad).contiguous().uop  # (stored once: every gradient below reads it)
    cout, cin, kh, kw = weight.shape
    w = tensor(weight).reshape(groups, cout // groups, cin, kh, kw).transpose(1, 2)
    w = w.flip((3, 4)).reshape(groups * cin, cout // groups, kh, kw)
    dx = tensor(grad).pad(grad_pads).conv2d(channels_last(w), None, groups, 1, dilations, 0)
    params = [tensor(i) for i in inputs]
    forward = NNOps.conv2d(params[0], params[1], params[2] if len(params) > 2 else None, groups,
                           1, dilations, padding)
    others = compute_gradient(forward.uop, grad, set(inputs[1:]))
    return (dx.uop.cast(x.dtype), *(others.get(i) for i in inputs[1:]))


def channels_last(weight: Tensor) -> Tensor:
    """weight (cout, cin, kh, kw) as a copy laid out (cin, kh, kw, cout), seen in its own shape:
    the output channels side by side in memory, a vector for the convolution's tile."""
    return weight.permute(1, 2, 3, 0).contiguous().permute(3, 0, 1, 2)
