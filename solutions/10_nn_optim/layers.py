# Solutions of chapter 10, generated from tinyfw/nn/layers.py by `python -m tools.generate`.
# Edit tinyfw/nn/layers.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/10_nn_optim --impl=solutions
"""Layers as plain classes holding tensors (chapter 10). Each makes its parameters in __init__
(tensors that require grad) and computes its forward pass in __call__."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from tinyfw.dtype import dtypes
from tinyfw.helpers import prod
from tinyfw.mixin.nn_ops import IntOrTuple, make_tuple
from tinyfw.tensor import Tensor


def _uniform(*shape: int, bound: float) -> Tensor:
    """A parameter drawn uniformly from [-bound, bound)."""
    return Tensor.uniform(*shape, low=-bound, high=bound, requires_grad=True)


class TrainMode:
    """A layer that behaves differently while training (BatchNorm, Dropout) has a mode of its
    own. training None (the default): it follows Tensor.training, tinygrad's style (evaluation
    unless inside `with Tensor.train():`). train() and eval() set it, torch's style (a
    tinyfw.torch.nn.Module sets it on its layers, which then start in training mode); a mode the
    layer was given wins over Tensor.training, so neither style leaves it in the other's."""
    training: bool | None = None

    def train(self, mode: bool = True) -> TrainMode:
        self.training = bool(mode)
        return self

    def eval(self) -> TrainMode:
        return self.train(False)


def in_own_mode(call: Callable[[Any, Tensor], Tensor]) -> Callable[[Any, Tensor], Tensor]:
    """Runs a TrainMode layer's __call__ with Tensor.training set to the layer's own mode, where
    it has one."""
    @functools.wraps(call)
    def run(self: TrainMode, x: Tensor) -> Tensor:
        if self.training is None or self.training == Tensor.training:
            return call(self, x)
        with Tensor.train(self.training):
            return call(self, x)
    return run


class Linear:
    """y = x @ weight.T + bias, with weight of shape (out_features, in_features) as torch's.
    Both start uniform in +-1/sqrt(in_features), as in torch and tinygrad."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        bound = 1 / math.sqrt(in_features)
        self.weight = _uniform(out_features, in_features, bound=bound)
        self.bias = _uniform(out_features, bound=bound) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        # >>> exercise 10.linear_conv #linear-and-convolution
        return x.linear(self.weight.T, self.bias)
        # <<< exercise


class Conv2d:
    """A 2-D convolution over NCHW inputs, weight of shape (out, in / groups, kh, kw).
    Weight and bias start uniform in +-1/sqrt(fan_in), fan_in = in / groups * kh * kw."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 groups: int = 1, bias: bool = True):
        self.kernel_size = make_tuple(kernel_size, 2)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        bound = 1 / math.sqrt(in_channels // groups * prod(self.kernel_size))
        self.weight = _uniform(out_channels, in_channels // groups, *self.kernel_size, bound=bound)
        self.bias = _uniform(out_channels, bound=bound) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        # >>> exercise 10.linear_conv #linear-and-convolution
        return x.conv2d(self.weight, self.bias, self.groups, self.stride, self.dilation,
                        self.padding)
        # <<< exercise


class BatchNorm(TrainMode):
    """Normalizes each channel (axis 1) over the batch and any spatial axes. Training uses the
    batch's statistics and moves the running ones toward them (the variance unbiased, as in
    torch); evaluation uses the running ones. Running statistics are updated with assign,
    lazily: realize them (an optimizer step does) so their graph doesn't grow step after step.
    Training or evaluation: Tensor.training, or the layer's own mode (see TrainMode).
    """

    def __init__(self, sz: int, eps: float = 1e-5, affine: bool = True,
                 track_running_stats: bool = True, momentum: float = 0.1):
        self.eps, self.track_running_stats, self.momentum = eps, track_running_stats, momentum
        self.weight = Tensor.ones(sz, requires_grad=True) if affine else None
        self.bias = Tensor.zeros(sz, requires_grad=True) if affine else None
        self.num_batches_tracked = Tensor.zeros(1, dtype=dtypes.int32, requires_grad=False)
        if track_running_stats:
            self.running_mean = Tensor.zeros(sz, requires_grad=False)
            self.running_var = Tensor.ones(sz, requires_grad=False)

    @in_own_mode
    def __call__(self, x: Tensor) -> Tensor:
        # >>> exercise 10.normalization #normalization
        if self.track_running_stats and not Tensor.training:
            mean, var = self.running_mean, self.running_var
        else:
            axes = tuple(a for a in range(x.ndim) if a != 1)
            mean = x.mean(axes)
            # the variance's gradient through the mean is zero, so the mean can be detached
            centered = x - mean.detach().reshape(1, -1, *[1] * (x.ndim - 2))
            var = centered.square().mean(axes)
            if self.track_running_stats and Tensor.training:
                n = x.numel() // x.shape[1]  # values per channel
                m = self.momentum
                self.running_mean.assign((1 - m) * self.running_mean + m * mean.detach())
                self.running_var.assign((1 - m) * self.running_var +
                                        m * n / (n - 1) * var.detach())
                self.num_batches_tracked.assign(self.num_batches_tracked + 1)
        return x.batchnorm(self.weight, self.bias, mean, (var + self.eps).rsqrt())
        # <<< exercise


BatchNorm2d = BatchNorm


class LayerNorm:
    """Normalizes over the last len(normalized_shape) axes, then scales and shifts each
    position (weight starts at 1, bias at 0)."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True):
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.axis = tuple(range(-len(self.normalized_shape), 0))
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight: Tensor | None = None
        self.bias: Tensor | None = None
        if elementwise_affine:
            self.weight = Tensor.ones(*self.normalized_shape, requires_grad=True)
            self.bias = Tensor.zeros(*self.normalized_shape, requires_grad=True)

    def __call__(self, x: Tensor) -> Tensor:
        # >>> exercise 10.normalization #normalization
        if x.shape[x.ndim - len(self.normalized_shape):] != self.normalized_shape:
            raise RuntimeError(f"LayerNorm over {self.normalized_shape} got an input of shape "
                               f"{x.shape}")
        out = x.layernorm(self.axis, self.eps)
        if not self.elementwise_affine:
            return out
        assert self.weight is not None and self.bias is not None  # made with elementwise_affine
        return out * self.weight + self.bias
        # <<< exercise


class Embedding:
    """A table of vocab_size vectors of embed_size: an integer index picks a row (Glorot
    uniform at first, as in tinygrad)."""

    def __init__(self, vocab_size: int, embed_size: int):
        self.vocab_size, self.embed_size = vocab_size, embed_size
        self.weight = Tensor.glorot_uniform(vocab_size, embed_size, requires_grad=True)

    def __call__(self, idx: Tensor) -> Tensor:
        # >>> exercise 10.embedding_dropout #embedding-and-dropout
        # a row of the table is a one-hot row times the table, so its gradient is too
        return idx.one_hot(self.vocab_size).cast(self.weight.dtype) @ self.weight
        # <<< exercise


class Dropout(TrainMode):
    """Zeroes a fraction p of its input while training (see Tensor.dropout): Tensor.training,
    or the layer's own mode (see TrainMode)."""

    def __init__(self, p: float = 0.5):
        self.p = p

    @in_own_mode
    def __call__(self, x: Tensor) -> Tensor:
        # >>> exercise 10.embedding_dropout #embedding-and-dropout
        return x.dropout(self.p)
        # <<< exercise

