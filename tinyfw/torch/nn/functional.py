"""torch.nn.functional's names and arguments over tinyfw's Tensor methods: each function calls
the tinyfw op that computes it (nothing is computed a second way here)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tinyfw.mixin.nn_ops import IntOrTuple, make_tuple
from tinyfw.mixin.fold import fold as _fold
from tinyfw.mixin.sampling import affine_grid as _affine_grid
from tinyfw.tensor import Tensor

# --- activations ---


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input.relu(), inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input.relu6(), inplace)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    return input.gelu(approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input.silu(), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input.mish(), inplace)


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    return input.tanh()


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input.hardswish(), inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input.hardsigmoid(), inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,  # noqa: A002
             inplace: bool = False) -> Tensor:
    return _inplace(input, input.hardtanh(min_val, max_val), inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01,  # noqa: A002
               inplace: bool = False) -> Tensor:
    return _inplace(input, input.leaky_relu(negative_slope), inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input.elu(alpha), inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input.celu(alpha), inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input.selu(), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    return input.softplus(beta, threshold)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    return input.softsign()


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    return input.logsigmoid()


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
            dtype: Any = None) -> Tensor:
    x = input if dtype is None else input.cast(dtype)
    return x.softmax(_implicit_dim(x, dim))


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
                dtype: Any = None) -> Tensor:
    x = input if dtype is None else input.cast(dtype)
    return x.log_softmax(_implicit_dim(x, dim))


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
            dtype: Any = None) -> Tensor:
    x = input if dtype is None else input.cast(dtype)
    return x.softmin(_implicit_dim(x, dim))


def _implicit_dim(x: Tensor, dim: int | None) -> int:
    """torch's choice when softmax is given no dim (with its warning): 0 for 0-, 1- and 3-D
    inputs, else 1."""
    if dim is not None:
        return dim
    return 0 if x.ndim in (0, 1, 3) else 1


def _inplace(input: Tensor, out: Tensor, inplace: bool) -> Tensor:  # noqa: A002
    return input.assign(out) if inplace else out


# --- linear, convolution, pooling ---


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    return input.linear(weight.T, bias)


def _conv(n: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: IntOrTuple,  # noqa: A002
          padding: IntOrTuple | str, dilation: IntOrTuple, groups: int) -> Tensor:
    if weight.ndim != n + 2:
        raise RuntimeError(f"conv{n}d expects a weight of {n + 2} dimensions, got "
                           f"{list(weight.shape)}")
    return input.conv2d(weight, bias, groups, stride, dilation, padding)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
           stride: IntOrTuple = 1, padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1,
           groups: int = 1) -> Tensor:
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
           stride: IntOrTuple = 1, padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1,
           groups: int = 1) -> Tensor:
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
           stride: IntOrTuple = 1, padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1,
           groups: int = 1) -> Tensor:
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    return input.conv_transpose2d(weight, bias, groups, stride, dilation, padding, output_padding)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    return input.conv_transpose2d(weight, bias, groups, stride, dilation, padding, output_padding)


def _max_pool(n: int, input: Tensor, kernel_size: IntOrTuple,  # noqa: A002
              stride: IntOrTuple | None, padding: IntOrTuple, dilation: IntOrTuple,
              ceil_mode: bool, return_indices: bool) -> Any:
    return input.max_pool2d(make_tuple(kernel_size, n),
                            None if stride is None or stride == [] else make_tuple(stride, n),
                            make_tuple(dilation, n), make_tuple(padding, n), ceil_mode,
                            return_indices)


def max_pool1d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,  # noqa: A002
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,  # noqa: A002
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool(n: int, input: Tensor, kernel_size: IntOrTuple,  # noqa: A002
              stride: IntOrTuple | None, padding: IntOrTuple, ceil_mode: bool,
              count_include_pad: bool) -> Tensor:
    return input.avg_pool2d(make_tuple(kernel_size, n),
                            None if stride is None or stride == [] else make_tuple(stride, n), 1,
                            make_tuple(padding, n), ceil_mode, count_include_pad)


def avg_pool1d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,  # noqa: A002
               padding: IntOrTuple = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def avg_pool2d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,  # noqa: A002
               padding: IntOrTuple = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    if divisor_override is not None:
        raise NotImplementedError("avg_pool2d: tinyfw takes no divisor_override; multiply the "
                                  "result by the kernel's size / your divisor")
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def _adaptive_avg_pool(n: int, input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """torch's windows: output i of an axis of size s averages [floor(i*s/o), ceil((i+1)*s/o))."""
    sizes = make_tuple(output_size, n)
    spatial = input.shape[-n:]
    out = [s if o is None else o for o, s in zip(sizes, spatial)]
    if all(s % o == 0 for s, o in zip(spatial, out)):  # even windows: a plain average pool
        kernel = tuple(s // o for s, o in zip(spatial, out))
        return input.avg_pool2d(kernel, kernel)
    x = input
    for j, (s, o) in enumerate(zip(spatial, out)):  # one axis at a time, window by window
        axis = x.ndim - n + j
        parts = [_window(x, axis, (i * s) // o, -(-((i + 1) * s) // o)) for i in range(o)]
        x = Tensor.cat(*parts, dim=axis)
    return x


def _window(x: Tensor, axis: int, begin: int, end: int) -> Tensor:
    bounds: list[tuple[int, int] | None] = [None] * x.ndim
    bounds[axis] = (begin, end)
    return x.shrink(tuple(bounds)).mean(axis, keepdim=True)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return _adaptive_avg_pool(1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return _adaptive_avg_pool(2, input, output_size)


# --- normalization, dropout, embedding ---


def dropout(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
            inplace: bool = False) -> Tensor:
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    with Tensor.train(training):
        return _inplace(input, input.dropout(p), inplace)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """tinyfw's BatchNorm, given these tensors: batch statistics while training (moving the
    running ones, when given), the running ones otherwise."""
    from tinyfw.nn.layers import BatchNorm
    layer = BatchNorm.__new__(BatchNorm)
    layer.eps, layer.momentum = eps, momentum
    layer.track_running_stats = running_mean is not None
    layer.weight, layer.bias = weight, bias
    if running_mean is not None:
        layer.running_mean, layer.running_var = running_mean, running_var  # type: ignore
    layer.num_batches_tracked = Tensor.zeros(())
    layer.training = training
    return layer(input)


def layer_norm(input: Tensor, normalized_shape: Sequence[int] | int,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if input.shape[input.ndim - len(shape):] != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size "
                           f"{list(input.shape)}")
    out = input.layernorm(tuple(range(-len(shape), 0)), eps)
    if weight is not None:
        out = out * weight
    return out + bias if bias is not None else out


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    x = input.reshape(n, num_groups, -1).layernorm(-1, eps).reshape(input.shape)
    view = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        x = x * weight.reshape(view)
    return x + bias.reshape(view) if bias is not None else x


def instance_norm(input: Tensor, running_mean: Tensor | None = None,  # noqa: A002
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    if running_mean is not None or not use_input_stats:
        raise NotImplementedError("instance_norm: tinyfw keeps no running statistics for "
                                  "instance norm (track_running_stats=False only)")
    return group_norm(input, input.shape[1], weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape: Sequence[int] | int,  # noqa: A002
             weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    axes = tuple(range(-len(shape), 0))
    e = eps if eps is not None else _finfo_eps(input)
    out = input * (input.square().mean(axes, keepdim=True) + e).rsqrt()
    return out * weight if weight is not None else out


def _finfo_eps(x: Tensor) -> float:
    import numpy as np
    return float(np.finfo(x.dtype.np).eps)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: tinyfw takes no max_norm, scale_grad_by_freq or "
                                  "sparse")
    if input.dtype.is_float:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.dtype.name} instead")
    table = weight
    if padding_idx is not None:  # the padding row gets no gradient, as torch's
        rows = Tensor.arange(weight.shape[0]).reshape(-1, 1)
        table = (rows == padding_idx % weight.shape[0]).where(weight.detach(), weight)
    return input.one_hot(weight.shape[0]).cast(weight.dtype) @ table


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1
    return tensor.one_hot(num_classes)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",  # noqa: A002
        value: float | None = None) -> Tensor:
    return input.pad(tuple(pad), mode, 0.0 if value is None else value)


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,  # noqa: A002
                mode: str = "nearest", align_corners: bool | None = None) -> Tensor:
    n = input.ndim - 2
    return input.interpolate(None if size is None else make_tuple(size, n), mode,
                             bool(align_corners), scale_factor)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",  # noqa: A002
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    return input.grid_sample(grid, mode, padding_mode, bool(align_corners))


def fold(input: Tensor, output_size: IntOrTuple, kernel_size: IntOrTuple,  # noqa: A002
         dilation: IntOrTuple = 1, padding: IntOrTuple = 0, stride: IntOrTuple = 1) -> Tensor:
    unbatched = input.ndim == 2
    x = input.unsqueeze(0) if unbatched else input
    pads = [(p, p) for p in make_tuple(padding, 2)]
    out = _fold(x, make_tuple(output_size, 2), make_tuple(kernel_size, 2),
                make_tuple(dilation, 2), pads, make_tuple(stride, 2))
    return out.squeeze(0) if unbatched else out


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    return _affine_grid(theta, size, bool(align_corners))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:  # noqa: A002
    return input.normalize(p, dim, eps)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    return query.scaled_dot_product_attention(key, value, attn_mask, dropout_p, is_causal, scale,
                                              enable_gqa)


# --- losses ---


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _same_shape(input: Tensor, target: Tensor, name: str) -> None:  # noqa: A002
    if input.shape != target.shape:
        raise ValueError(f"{name}: target size ({list(target.shape)}) must be the same as input "
                         f"size ({list(input.shape)}); tinyfw does not broadcast them")


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    _legacy(size_average, reduce)
    return input.cross_entropy(target, reduction, label_smoothing, ignore_index, weight)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
             size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    _legacy(size_average, reduce)
    return input.nll_loss(target, weight, ignore_index, reduction)


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
             reduce: Any = None, reduction: str = "mean", weight: Any = None) -> Tensor:
    _legacy(size_average, reduce)
    _same_shape(input, target, "mse_loss")
    return input.mse(target, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
            reduce: Any = None, reduction: str = "mean") -> Tensor:
    _legacy(size_average, reduce)
    _same_shape(input, target, "l1_loss")
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
                   reduce: Any = None, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    _legacy(size_average, reduce)
    _same_shape(input, target, "smooth_l1_loss")
    diff = (input - target).abs()
    if beta == 0:
        return _reduce(diff, reduction)
    return _reduce((diff < beta).where(0.5 * diff.square() / beta, diff - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",  # noqa: A002
               delta: float = 1.0) -> Tensor:
    return smooth_l1_loss(input, target, reduction=reduction, beta=delta) * delta


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    _legacy(size_average, reduce)
    _same_shape(input, target, "binary_cross_entropy")
    loss = input.binary_crossentropy(target, "none")
    return _reduce(loss * weight if weight is not None else loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None, size_average: Any = None,
                                     reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    _legacy(size_average, reduce)
    _same_shape(input, target, "binary_cross_entropy_with_logits")
    loss = input.binary_crossentropy_logits(target, "none", pos_weight)
    return _reduce(loss * weight if weight is not None else loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
           reduce: Any = None, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """target * (log(target) - input), pointwise (input holds log-probabilities); 0 where
    target is 0, as torch's xlogy."""
    _legacy(size_average, reduce)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = (target > 0).where(target * (target.log() - input), 0.0)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


def _legacy(size_average: Any, reduce: Any) -> None:
    if size_average is not None or reduce is not None:
        raise NotImplementedError("size_average and reduce are deprecated in torch and not taken "
                                  "by tinyfw: use reduction='mean', 'sum' or 'none'")


