# Exercises of chapter 10, generated from tinyfw/mixin/nn_ops.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/10_nn_optim
"""The functional ops of neural networks, as Tensor methods: convolution, pooling, dropout and
normalization, each composed of the primitive ops (chapter 10)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tinyfw.dtype import dtypes
from tinyfw.helpers import ceildiv
from tinyfw.mixin.core import TensorCore

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor

IntOrTuple = int | Sequence[int]
T = TypeVar("T")


def make_tuple(x: IntOrTuple, n: int) -> tuple[int, ...]:
    """An int repeated n times, or a sequence of n ints as a tuple."""
    if isinstance(x, int):
        return (x,) * n
    if len(x) != n:
        raise ValueError(f"expected an int or {n} ints, got {tuple(x)}")
    return tuple(x)


def _flat(groups: Iterable[Sequence[T]]) -> list[T]:
    """The groups' items in one list: [(1, 2), (3, 4)] -> [1, 2, 3, 4]."""
    return [item for group in groups for item in group]


def pool_padding(padding: IntOrTuple, dims: int) -> list[int]:
    """Padding for the last `dims` axes in Tensor.pad's flat form (last axis first):
    an int for every side, one int per axis (both sides), or torch's flat form as is."""
    if isinstance(padding, int):
        return [padding] * 2 * dims
    if len(padding) == 2 * dims:
        return list(padding)
    if len(padding) == dims:  # (pad_h, pad_w) -> (left, right, top, bottom)
        return [p for p in reversed(padding) for _ in range(2)]
    raise ValueError(f"padding must be an int or {dims} or {2 * dims} ints, got {padding}")


def check_window(what: str, kernel: tuple[int, ...], stride: IntOrTuple, dilation: IntOrTuple,
                 padding: IntOrTuple) -> None:
    """torch's RuntimeError for a window that can't slide: a kernel, stride or dilation below 1,
    or a negative padding (what is "conv2d" or a pooling)."""
    n = len(kernel)
    strides, dilations = make_tuple(stride, n), make_tuple(dilation, n)
    pads = pool_padding(padding, n)
    for name, values in (("kernel size", kernel), ("stride", strides), ("dilation", dilations)):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise TypeError(f"{what}: {name} must be ints, got {values}")
    if what == "conv2d":
        if any(s <= 0 for s in strides):
            raise RuntimeError(f"non-positive stride is not supported (conv2d stride {strides})")
        if any(p < 0 for p in pads):
            raise RuntimeError(f"negative padding is not supported (conv2d padding {padding})")
        if any(d <= 0 for d in dilations):
            raise RuntimeError(f"dilation should be greater than zero, but got {list(dilations)}")
        return
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{what}: kernel size should be greater than zero, but got "
                           f"{list(kernel)}")
    if any(s <= 0 for s in strides):
        raise RuntimeError(f"{what}: stride should not be zero (or negative), but got "
                           f"{list(strides)}")
    if any(d <= 0 for d in dilations):
        raise RuntimeError(f"{what}: dilation should be greater than zero, but got "
                           f"{list(dilations)}")
    if any(p < 0 for p in pads):
        raise RuntimeError(f"{what}: pad must be non-negative, but got pad: {padding}")


class NNOps(TensorCore):
    """Convolution, pooling, dropout and normalization, mixed into Tensor."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: MovementOps (pad, shrink, reshape, permute, repeat, expand), the
    # reductions (sum, max, mean) and the elementwise ops (*, +, where, rsqrt, square).
    training: bool  # a class attribute: Tensor.train() sets it, dropout reads it

    def ones_like(self, **kwargs: Any) -> Tensor:
        """A tensor of ones of this shape, dtype and device."""
        raise NotImplementedError

    def rand_like(self, **kwargs: Any) -> Tensor:
        """Uniform samples in [0, 1) of this shape and device."""
        raise NotImplementedError

    # --- the nn ops ---

    # --- windows ---
    def _pool(self: Tensor, kernel: tuple[int, ...], stride: IntOrTuple = 1,
              dilation: IntOrTuple = 1) -> Tensor:
        """Every window of the last len(kernel) axes, as a view (nothing is copied).
        In shape (..., *sizes) out, the result has shape (..., *outs, *kernel), and
        result[..., o, k] = self[..., o * stride + k * dilation] on each pooled axis."""
        n = len(kernel)
        if self.ndim < n:
            raise RuntimeError(f"can't pool a tensor of shape {self.shape} with kernel {kernel}")
        strides, dilations = make_tuple(stride, n), make_tuple(dilation, n)
        batch, sizes = self.shape[:-n], self.shape[-n:]
        outs = [(i - d * (k - 1) - 1) // s + 1
                for i, k, s, d in zip(sizes, kernel, strides, dilations)]
        if any(o <= 0 for o in outs):
            raise RuntimeError(f"kernel {kernel} (dilation {dilations}) does not fit in input "
                               f"of shape {self.shape}")
        axes = list(zip(sizes, kernel, strides, dilations, outs))  # (i, k, s, d, o) per axis
        keep: list[tuple[int, int] | None] = [None] * len(batch)  # batch axes stay whole
        if all(k <= s and d == 1 for _, k, s, d, _ in axes):
            # Windows don't overlap: cut each axis into o blocks of s elements and keep the
            # first k of each block (the end may need padding to make a whole block).
            x = self.pad(keep + [(0, max(0, o * s - i)) for i, _, s, _, o in axes])
            x = x.shrink(keep + [(0, o * s) for _, _, s, _, o in axes])
            x = x.reshape(*batch, *_flat((o, s) for _, _, s, _, o in axes))
            x = x.shrink(keep + _flat(((0, o), (0, k)) for _, k, _, _, o in axes))
            out_first = True  # x is (..., o1, k1, o2, k2, ...)
        else:
            # Windows overlap: repeat each axis, then read it in k rows of r = f*i + d elements.
            # Row j starts j*r = j*f*i + j*d in, which is j*d into a copy of the input, so
            # column c of row j is input[c + j*d]: row j is what kernel tap j sees.
            rows = [max(1, ceildiv(o * s - d, i)) * i + d for i, _, s, d, o in axes]
            x = self.repeat(*[1] * len(batch),
                            *[ceildiv(k * r, i) for (i, k, *_), r in zip(axes, rows)])
            x = x.shrink(keep + [(0, k * r) for (_, k, *_), r in zip(axes, rows)])
            x = x.reshape(*batch, *_flat((k, r) for (_, k, *_), r in zip(axes, rows)))
            # of each row, every s-th column of the first o*s (f makes a row that long)
            x = x.shrink(keep + _flat(((0, k), (0, o * s)) for _, k, s, _, o in axes))
            x = x.reshape(*batch, *_flat((k, o, s) for _, k, s, _, o in axes))
            x = x.shrink(keep + _flat(((0, k), (0, o), (0, 1)) for _, k, _, _, o in axes))
            x = x.reshape(*batch, *_flat((k, o) for _, k, _, _, o in axes))
            out_first = False  # x is (..., k1, o1, k2, o2, ...)
        # the window axes go last: (..., o1, o2, ..., k1, k2, ...)
        b, o_at = len(batch), 0 if out_first else 1
        return x.permute(*range(b), *[b + 2 * j + o_at for j in range(n)],
                         *[b + 2 * j + 1 - o_at for j in range(n)])

    # --- convolution and pooling ---
    def conv2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1,
               stride: IntOrTuple = 1, dilation: IntOrTuple = 1,
               padding: IntOrTuple = 0) -> Tensor:
        """2-D convolution (torch's cross-correlation) of an NCHW input with weight of shape
        (cout, cin / groups, kh, kw): every window times the weights, summed."""
        if self.ndim != 4 or weight.ndim != 4:
            raise RuntimeError(f"conv2d wants a 4-D input and weight, got {self.shape} and "
                               f"{weight.shape}")
        bs, cin_all, cout, cin = self.shape[0], self.shape[1], weight.shape[0], weight.shape[1]
        kh, kw = weight.shape[2:]
        check_window("conv2d", (kh, kw), stride, dilation, padding)
        pads = pool_padding(padding, 2)
        padded = (self.shape[2] + pads[2] + pads[3], self.shape[3] + pads[0] + pads[1])
        dilations = make_tuple(dilation, 2)
        reach = tuple(d * (k - 1) + 1 for d, k in zip(dilations, (kh, kw)))
        if any(r > p for r, p in zip(reach, padded)):
            raise RuntimeError(f"Calculated padded input size per channel: ({padded[0]} x "
                               f"{padded[1]}). Kernel size: ({reach[0]} x {reach[1]}). Kernel "
                               "size can't be greater than actual input size")
        if cin * groups != cin_all or cout % groups:
            raise RuntimeError(f"input of shape {self.shape} and weight of shape {weight.shape} "
                               f"don't fit {groups} groups")
        # TODO 10.linear_conv: write this part. The chapter explains it:
        #   chapters/10_nn_optim/README.md#linear-and-convolution
        raise NotImplementedError("not done yet: 10.linear_conv")

    def max_pool2d(self: Tensor, kernel_size: IntOrTuple = (2, 2), stride: IntOrTuple | None = None,
                   dilation: IntOrTuple = 1, padding: IntOrTuple = 0) -> Tensor:
        """The largest value of each window (stride defaults to the kernel size)."""
        kernel, pads = make_tuple(kernel_size, 2), pool_padding(padding, 2)
        check_window("max_pool2d", kernel, stride if stride is not None else kernel, dilation,
                     padding)
        x = self.pad(pads, value=dtypes.min(self.dtype)) if any(pads) else self
        return x._pool(kernel, stride if stride is not None else kernel, dilation).max((-2, -1))

    def avg_pool2d(self: Tensor, kernel_size: IntOrTuple = (2, 2), stride: IntOrTuple | None = None,
                   dilation: IntOrTuple = 1, padding: IntOrTuple = 0,
                   count_include_pad: bool = True) -> Tensor:
        """The mean of each window; with count_include_pad=False padding doesn't count."""
        kernel = make_tuple(kernel_size, 2)
        pads, step = pool_padding(padding, 2), stride if stride is not None else kernel
        check_window("avg_pool2d", kernel, step, dilation, padding)
        total = self.pad(pads)._pool(kernel, step, dilation).sum((-2, -1))
        if count_include_pad:
            return total / (kernel[0] * kernel[1])
        count = self.ones_like().pad(pads)._pool(kernel, step, dilation).sum((-2, -1))
        return total / count

    # --- regularization and normalization ---
    def dropout(self: Tensor, p: float = 0.5) -> Tensor:
        """While training, zero each element with probability p and scale the rest by
        1 / (1 - p), so the expected value stays the same. Outside training: self."""
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        # TODO 10.embedding_dropout: write this part. The chapter explains it:
        #   chapters/10_nn_optim/README.md#embedding-and-dropout
        raise NotImplementedError("not done yet: 10.embedding_dropout")

    def layernorm(self: Tensor, axis: int | tuple[int, ...] = -1, eps: float = 1e-5) -> Tensor:
        """Each slice along axis shifted to mean 0 and scaled to variance 1 (no affine)."""
        centered = self - self.mean(axis, keepdim=True)
        return centered * (centered.square().mean(axis, keepdim=True) + eps).rsqrt()

    def batchnorm(self: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor,
                  invstd: Tensor, axis: int = 1) -> Tensor:
        """(self - mean) * invstd * weight + bias, with the per-channel values (one for each
        index of axis) lined up with that axis."""
        shape = tuple(s if i == axis % self.ndim else 1 for i, s in enumerate(self.shape))
        out = (self - mean.reshape(shape)) * invstd.reshape(shape)
        if weight is not None:
            out = out * weight.reshape(shape)
        return out if bias is None else out + bias.reshape(shape)

    # --- composition ---
    def sequential(self: Tensor, layers: Sequence[Callable[[Tensor], Tensor]]) -> Tensor:
        """Self through each layer in turn."""
        out = self
        for layer in layers:
            out = layer(out)
        return out
