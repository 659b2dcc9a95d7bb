"""The functional ops of neural networks, as Tensor methods: convolution, pooling, dropout and
normalization, each composed of the primitive ops (chapter 10)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
import math
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from tinyfw.dtype import dtypes
from tinyfw.helpers import ceildiv
from tinyfw.mixin.core import TensorCore, float32_inside, index_dtype
from tinyfw.mixin.derived import _check_labels
from tinyfw.mixin.indexing import _selection_gradient

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor
    from tinyfw.uop.ops import UOp

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


def same_padding(padding: IntOrTuple | str, kernel: Sequence[int], stride: IntOrTuple,
                 dilation: IntOrTuple) -> IntOrTuple:
    """padding="valid" (none) or "same" (the output as big as the input: the odd one extra
    at the end, as torch pads) in pool_padding's flat form; other paddings as they are."""
    if not isinstance(padding, str):
        return padding
    n = len(kernel)
    if padding == "valid":
        return 0
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}' (one of 'valid', 'same')")
    if any(s != 1 for s in make_tuple(stride, n)):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for d, k in zip(make_tuple(dilation, n), kernel)]
    return [p for t in reversed(totals) for p in (t // 2, t - t // 2)]


def ceil_padding(sizes: Sequence[int], kernel: Sequence[int], stride: IntOrTuple,
                 dilation: IntOrTuple, pads: Sequence[int]) -> list[int]:
    """The padding at each axis' end (pool_padding's flat form) that makes one more window where
    the last one would hang over, as torch's ceil_mode does (none that starts in the padding)."""
    n = len(kernel)
    extra: list[int] = []
    for j in reversed(range(n)):
        i, k, s, d = sizes[j], kernel[j], make_tuple(stride, n)[j], make_tuple(dilation, n)[j]
        before, after = pads[2 * (n - 1 - j)], pads[2 * (n - 1 - j) + 1]
        span = i + before + after - d * (k - 1) - 1
        outs = ceildiv(span, s) + 1
        if (outs - 1) * s >= i + before:
            outs -= 1
        extra += [0, max(0, (outs - 1) * s - span)]
    return extra


def resize_matrix(in_size: int, out_size: int, mode: str, align_corners: bool,
                  scale_factor: float | None) -> np.ndarray:
    """The (in_size, out_size) matrix that resizes one axis as torch's interpolate does in mode
    ("nearest", "nearest-exact", "linear", "cubic" or "area"): column o holds the weights of
    the inputs that output o is made of."""
    if out_size <= 0:
        raise ValueError(f"interpolate: output size {out_size} must be positive")
    m = np.zeros((in_size, out_size), dtype=np.float64)
    ratio = 1 / scale_factor if scale_factor else in_size / out_size
    for o in range(out_size):
        if mode == "nearest":  # (the outputs a column's zeros do not reach, see interpolate)
            m[min(math.floor(o * ratio), in_size - 1), o] = 1
        elif mode == "nearest-exact":  # the nearest centre: no shift to the left
            m[min(math.floor((o + 0.5) * ratio), in_size - 1), o] = 1
        elif mode == "area":  # adaptive average pooling: each output a mean of its span
            lo, hi = (o * in_size) // out_size, -(-((o + 1) * in_size) // out_size)
            m[lo:hi, o] = 1 / (hi - lo)
        elif mode == "cubic":
            _cubic_column(m, o, in_size, out_size, align_corners, ratio)
        else:
            if align_corners:
                src = o * (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
            else:
                src = max((o + 0.5) * ratio - 0.5, 0.0)
            low = min(math.floor(src), in_size - 1)
            high, frac = min(low + 1, in_size - 1), src - low
            m[low, o] += 1 - frac
            m[high, o] += frac
    return m


def _cubic_column(m: np.ndarray, o: int, in_size: int, out_size: int, align_corners: bool,
                  ratio: float) -> None:
    """Column o of bicubic's matrix: torch's cubic convolution (A = -0.75) of the four inputs
    around the source point, those past an edge read at the edge."""
    if align_corners:
        src = o * (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        src = (o + 0.5) * ratio - 0.5  # not clamped at 0, as torch's for cubic
    base = math.floor(src)
    t = src - base
    a = -0.75

    def near(d: float) -> float: return ((a + 2) * d - (a + 3)) * d * d + 1
    def far(d: float) -> float: return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    for k, w in zip(range(-1, 3), (far(t + 1), near(t), near(1 - t), far(2 - t))):
        m[min(max(base + k, 0), in_size - 1), o] += w


def _quantized(m: np.ndarray) -> tuple[np.ndarray, int]:
    """m's weights as torch's uint8 resize takes them: integers of `precision` bits (as many
    as keep the largest within int16), rounded half away from 0."""
    precision = 0
    while precision < 22 and int(0.5 + m.max() * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    v = m * (1 << precision)
    return np.where(v < 0, np.trunc(v - 0.5), np.trunc(v + 0.5)).astype(np.int32), precision


def check_resize_mode(mode: str, n: int, ndim: int, size: Sequence[int]) -> None:
    """torch's errors for an unknown interpolate mode or one given the wrong number of axes
    ("linear" and "nearest" resize any n trailing axes, as tinygrad's interpolate does)."""
    spatial = {"linear": None, "bilinear": 2, "trilinear": 3, "nearest": None,
               "nearest-exact": None, "bicubic": 2, "area": None}
    if mode not in spatial:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not one of {list(spatial)}")
    wanted = spatial[mode]
    if wanted is not None and n != ndim - 2:
        raise ValueError(f"Input and output must have the same number of spatial dimensions, "
                         f"but got a {ndim}-D input and output size of {tuple(size)}")
    if wanted is not None and wanted != n:
        raise NotImplementedError(f"Got {ndim}D input, but {mode} mode needs {wanted + 2}D input")


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
               padding: IntOrTuple | str = 0) -> Tensor:
        """Convolution (torch's cross-correlation) of an (N, C, *spatial) input with weight of
        shape (cout, cin / groups, *kernel): 1-D to 3-D, as the weight's rank says."""
        n = weight.ndim - 2
        if n < 1 or self.ndim not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"conv{n}d, but got input of size: {list(self.shape)} (weight "
                               f"{list(weight.shape)})")
        if self.ndim == n + 1:  # unbatched, as torch allows
            return self.unsqueeze(0).conv2d(weight, bias, groups, stride, dilation,
                                            padding).squeeze(0)
        padding = same_padding(padding, weight.shape[2:], stride, dilation)
        bs, cin_all, cout, cin = self.shape[0], self.shape[1], weight.shape[0], weight.shape[1]
        kernel = weight.shape[2:]
        check_window("conv2d", kernel, stride, dilation, padding)
        pads = pool_padding(padding, n)
        padded = [s + pads[2 * (n - 1 - j)] + pads[2 * (n - 1 - j) + 1]
                  for j, s in enumerate(self.shape[2:])]
        reach = [d * (k - 1) + 1 for d, k in zip(make_tuple(dilation, n), kernel)]
        if any(r > p for r, p in zip(reach, padded)):
            raise RuntimeError(f"Calculated padded input size per channel: "
                               f"({' x '.join(map(str, padded))}). Kernel size: "
                               f"({' x '.join(map(str, reach))}). Kernel size can't be greater "
                               "than actual input size")
        if cin * groups != cin_all or cout % groups:
            raise RuntimeError(f"input of shape {self.shape} and weight of shape {weight.shape} "
                               f"don't fit {groups} groups")
        if n != 2:
            return self._conv_any(weight, bias, groups, stride, dilation, pads)
        kh, kw = kernel
        # >>> exercise 10.linear_conv #linear-and-convolution
        x = self.pad(pool_padding(padding, 2))._pool((kh, kw), stride, dilation)
        oh, ow = x.shape[2:4]  # x is (bs, groups * cin, oh, ow, kh, kw)
        rcout = cout // groups
        # each window once per output channel of its group: (bs, groups, rcout, oh, ow, cin, kh, kw)
        x = x.reshape(bs, groups, cin, 1, oh, ow, kh, kw)
        x = x.expand(bs, groups, cin, rcout, oh, ow, kh, kw).permute(0, 1, 3, 4, 5, 2, 6, 7)
        w = weight.reshape(1, groups, rcout, 1, 1, cin, kh, kw)
        out = (x * w).sum((-3, -2, -1)).reshape(bs, cout, oh, ow)
        return out if bias is None else out + bias.reshape(1, cout, 1, 1)
        # <<< exercise

    def _conv_any(self: Tensor, weight: Tensor, bias: Tensor | None, groups: int,
                  stride: IntOrTuple, dilation: IntOrTuple, pads: list[int]) -> Tensor:
        """conv2d's windows times weights for any number n of spatial axes (checked inputs)."""
        n, kernel = weight.ndim - 2, weight.shape[2:]
        bs, cout, cin = self.shape[0], weight.shape[0], weight.shape[1]
        x = self.pad(pads)._pool(kernel, stride, dilation)  # (bs, groups * cin, *outs, *kernel)
        outs, rcout = x.shape[2:2 + n], cout // groups
        x = x.reshape(bs, groups, cin, 1, *outs, *kernel)
        x = x.expand(bs, groups, cin, rcout, *outs, *kernel)
        x = x.permute(0, 1, 3, *range(4, 4 + n), 2, *range(4 + n, 4 + 2 * n))
        w = weight.reshape(1, groups, rcout, *[1] * n, cin, *kernel)
        out = (x * w).sum(tuple(range(-n - 1, 0))).reshape(bs, cout, *outs)
        return out if bias is None else out + bias.reshape(1, cout, *[1] * n)

    def conv_transpose2d(self: Tensor, weight: Tensor, bias: Tensor | None = None,
                         groups: int = 1, stride: IntOrTuple = 1, dilation: IntOrTuple = 1,
                         padding: IntOrTuple = 0, output_padding: IntOrTuple = 0) -> Tensor:
        """The transposed convolution (conv2d's gradient of its input) with weight of shape
        (cin, cout / groups, *kernel): 1-D to 3-D, as the weight's rank says."""
        n = weight.ndim - 2
        if n < 1 or self.ndim not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"conv_transpose{n}d, but got input of size: {list(self.shape)}")
        if self.ndim == n + 1:
            return self.unsqueeze(0).conv_transpose2d(weight, bias, groups, stride, dilation,
                                                      padding, output_padding).squeeze(0)
        check_window("conv2d", weight.shape[2:], stride, dilation, padding)
        strides, dilations = make_tuple(stride, n), make_tuple(dilation, n)
        out_pads = make_tuple(output_padding, n)
        if any(p >= max(s, d) or p < 0 for p, s, d in zip(out_pads, strides, dilations)):
            raise RuntimeError(f"output padding must be smaller than either stride or dilation,"
                               f" but got output_padding {out_pads}, stride {strides}, dilation "
                               f"{dilations}")
        cin_all, rcout, kernel = weight.shape[0], weight.shape[1], weight.shape[2:]
        if self.shape[1] != cin_all or cin_all % groups:
            raise RuntimeError(f"input of shape {self.shape} and weight of shape {weight.shape} "
                               f"don't fit {groups} groups")
        # stride s: s - 1 zeros between the input's elements on each spatial axis
        bs, c, sizes = self.shape[0], self.shape[1], self.shape[2:]
        x = self.reshape(bs, c, *_flat((i, 1) for i in sizes))
        x = x.pad([None, None] + _flat((None, (0, s - 1)) for s in strides))
        x = x.reshape(bs, c, *[i * s for i, s in zip(sizes, strides)])
        x = x.shrink([None, None] + [(0, (i - 1) * s + 1) for i, s in zip(sizes, strides)])
        # full padding d * (k - 1), less the padding asked for, plus output_padding at the end
        flat = pool_padding(padding, n)
        pairs = [(flat[2 * (n - 1 - j)], flat[2 * (n - 1 - j) + 1]) for j in range(n)]
        full = [d * (k - 1) for d, k in zip(dilations, kernel)]
        x = x.pad([None, None] + [(f - b, f - a + o) for f, (b, a), o in
                                  zip(full, pairs, out_pads)])
        # each group's weight swapped in and out and flipped: a plain convolution's weight
        w = weight.reshape(groups, cin_all // groups, rcout, *kernel).transpose(1, 2)
        w = w.flip(tuple(range(3, 3 + n))).reshape(groups * rcout, cin_all // groups, *kernel)
        return x.conv2d(w, bias, groups, 1, dilation, 0)

    def _pool_setup(self: Tensor, what: str, kernel_size: IntOrTuple,
                    stride: IntOrTuple | None, dilation: IntOrTuple, padding: IntOrTuple,
                    ceil_mode: bool) -> tuple[tuple[int, ...], IntOrTuple, list[int], list[int]]:
        """A pooling's kernel, stride, padding and ceil_mode's extra end padding, checked (the
        kernel's length says how many trailing axes are pooled; an int pools two)."""
        n = 2 if isinstance(kernel_size, int) else len(kernel_size)
        kernel = make_tuple(kernel_size, n)
        step = stride if stride is not None and stride != () else kernel
        check_window(what, kernel, step, dilation, padding)
        pads = pool_padding(padding, n)
        if self.ndim < n + 1:
            raise RuntimeError(f"{what}: expected an input of at least {n + 1} dims for a "
                               f"{n}-D kernel, got shape {self.shape}")
        if what != "max_unpool2d" and any(pads[2 * (n - 1 - j) + side] > kernel[j] // 2
                                          for j in range(n) for side in (0, 1)):
            raise RuntimeError(f"{what}: pad should be smaller than or equal to half of kernel "
                               f"size, but got pad={padding}, kernel_size={kernel}")
        extra = ceil_padding(self.shape[-n:], kernel, step, dilation, pads) if ceil_mode else \
            [0] * 2 * n
        return kernel, step, pads, extra

    def max_pool2d(self: Tensor, kernel_size: IntOrTuple = (2, 2), stride: IntOrTuple | None = None,
                   dilation: IntOrTuple = 1, padding: IntOrTuple = 0, ceil_mode: bool = False,
                   return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """The largest value of each window (stride defaults to the kernel size); with
        return_indices, also where it is, as an index into the flattened pooled axes."""
        kernel, step, pads, extra = self._pool_setup("max_pool2d", kernel_size, stride, dilation,
                                                     padding, ceil_mode)
        n, both = len(kernel), [a + b for a, b in zip(pads, extra)]
        x = self.pad(both, value=dtypes.min(self.dtype)) if any(both) else self
        flat = x._pool(kernel, step, dilation).flatten(-n)  # (..., *outs, window)
        out = flat.max(-1)
        sizes = self.shape[-n:]
        where = type(self).arange(math.prod(sizes), device=self.device).reshape(*sizes)
        where = where.pad(both, value=-1)._pool(kernel, step, dilation).flatten(-n)
        hot = _torch_max_place(flat.detach(), out.detach(), where >= 0 if any(both) else None)
        # the whole gradient of a window to the one place torch picks (not shared by ties,
        # as a max's is); overlapping windows add theirs up through the window view
        out = out._with_gradient(_selection_gradient, (flat, hot), (flat.ndim - 1,))
        if not return_indices:
            return out
        return out, hot.where(where, 0).sum(-1, dtype=where.dtype).cast(
            index_dtype(self.device))

    def max_unpool2d(self: Tensor, indices: Tensor, kernel_size: IntOrTuple = (2, 2),
                     stride: IntOrTuple | None = None, dilation: IntOrTuple = 1,
                     padding: IntOrTuple = 0, output_size: Sequence[int] | None = None) -> Tensor:
        """max_pool2d's partial inverse: each value put back where indices says, zeros
        elsewhere (output_size, or the size the pooling came from, disambiguates)."""
        kernel, step, pads, _ = self._pool_setup("max_unpool2d", kernel_size, stride, dilation,
                                                 padding, False)
        n = len(kernel)
        if indices.shape != self.shape:
            raise RuntimeError(f"Expected shape of indices to be same as that of the input "
                               f"tensor ({self.shape}), got {indices.shape}")
        if output_size is None:
            strides, dilations = make_tuple(step, n), make_tuple(dilation, n)
            sizes = [(o - 1) * s - pads[2 * (n - 1 - j)] - pads[2 * (n - 1 - j) + 1] +
                     d * (k - 1) + 1 for j, (o, s, d, k) in
                     enumerate(zip(self.shape[-n:], strides, dilations, kernel))]
        else:
            sizes = list(output_size)[-n:]
        total = math.prod(sizes)
        hot = indices.flatten(-n)._hot(total) != 0  # (..., pooled, total)
        values = self.flatten(-n)
        # selected, not multiplied by a 0/1 hot (inf * 0 would make every other place nan);
        # overlapping windows may name a place twice (with the same value): counted once, yet
        # each gets its whole gradient, as from torch's gather of the output gradient
        placed = hot.where(values.unsqueeze(-1), 0).sum(-2)
        placed = (placed / hot.sum(-2, dtype=dtypes.int32).maximum(1)).cast(self.dtype)
        placed = placed._with_gradient(_unpool_gradient, (values, hot))
        out = placed.reshape(*self.shape[:-n], *sizes)
        _check_labels(out, indices, (indices < 0) | (indices >= total), RuntimeError,
                      f"Found an invalid max index: {{value}} (output volumes are of size "
                      f"{'x'.join(map(str, sizes))})")
        return out

    def avg_pool2d(self: Tensor, kernel_size: IntOrTuple = (2, 2), stride: IntOrTuple | None = None,
                   dilation: IntOrTuple = 1, padding: IntOrTuple = 0, ceil_mode: bool = False,
                   count_include_pad: bool = True) -> Tensor:
        """The mean of each window; with count_include_pad=False padding doesn't count (and
        ceil_mode's extra windows never count what hangs past the padding, as in torch)."""
        kernel, step, pads, extra = self._pool_setup("avg_pool2d", kernel_size, stride, dilation,
                                                     padding, ceil_mode)
        if self.dtype.is_bool:
            raise NotImplementedError("\"avg_pool2d\" not implemented for 'Bool'")
        n, both = len(kernel), [a + b for a, b in zip(pads, extra)]
        axes = tuple(range(-n, 0))
        total = self.pad(both)._pool(kernel, step, dilation).sum(axes)
        count: Tensor | int = math.prod(kernel)
        if not count_include_pad or any(extra):
            ones = self.ones_like()
            ones = ones.pad(pads, value=1) if count_include_pad else ones.pad(pads)
            count = ones.pad(extra)._pool(kernel, step, dilation).sum(axes)
        if not self.dtype.is_float:  # an int average is an int, truncated, as torch's (int64)
            return total.div(count, rounding_mode="trunc").cast(self.dtype)
        return total / count

    def interpolate(self: Tensor, size: Sequence[int] | None = None, mode: str = "linear",
                    align_corners: bool = False,
                    scale_factor: float | Sequence[float] | None = None) -> Tensor:
        """Resize the last len(size) axes (with scale_factor: all but the first two) by nearest
        neighbour or (bi/tri)linear interpolation, as torch.nn.functional.interpolate."""
        if (size is None) == (scale_factor is None):
            raise ValueError("either size or scale_factor should be defined, and only one")
        n = len(size) if size is not None else self.ndim - 2
        scales: list[float | None] = [None] * n
        if scale_factor is not None:
            factors = list(scale_factor) if isinstance(scale_factor, Sequence) else \
                [scale_factor] * n
            size, scales = [math.floor(i * f) for i, f in zip(self.shape[-n:], factors)], \
                list(factors)
        assert size is not None
        if len(scales) != n or not 0 < n <= self.ndim:
            raise ValueError(f"size {size} / scale_factor {scale_factor} don't fit an input of "
                             f"shape {self.shape}")
        check_resize_mode(mode, n, self.ndim, size)
        if not all(i > 0 and o > 0 for i, o in zip(self.shape[-n:], size)):
            raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                               f"{self.shape[-n:]} and output {tuple(size)}")
        if align_corners and mode in ("nearest", "nearest-exact", "area"):
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
        if mode == "area" and self.dtype == dtypes.uint8:
            raise NotImplementedError("\"adaptive_avg_pool2d\" not implemented for 'Byte'")
        kind = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
        if mode == "area":
            scales = [None] * n  # torch's area is adaptive pooling to the size
        if self.dtype == dtypes.uint8 and kind in ("linear", "cubic"):
            return self._resize_uint8(size, kind, align_corners, scales)
        # in float32 for a 16-bit float (its products and sums, rounded once at the end)
        x = self if self.dtype.is_float and self.dtype.itemsize >= 4 else self.float()
        for j, (out_size, f) in enumerate(zip(size, scales)):
            axis = self.ndim - n + j
            m = resize_matrix(self.shape[axis], out_size, kind, align_corners, f)
            weights = type(self)(m, dtype=x.dtype, device=self.device)
            reads = type(self)(m != 0, device=self.device)
            # as x @ weights, but an input of weight 0 adds nothing to an output (not 0 * x,
            # which is nan for an inf: the output depends only on the inputs it is made of)
            terms = reads.where(x.transpose(axis, -1).unsqueeze(-1) * weights, 0)
            x = terms.sum(-2).transpose(axis, -1)
        return x.cast(self.dtype)

    def _resize_uint8(self: Tensor, size: Sequence[int], kind: str, align_corners: bool,
                      scales: list[float | None]) -> Tensor:
        """uint8 (bi)linear or bicubic resizing as torch's: one axis at a time, the last first,
        in integers (the weights quantized, see _quantized), each pass rounded and clamped to
        [0, 255], so that the result is torch's to the unit."""
        n, x = len(size), self
        for j in reversed(range(n)):
            axis = self.ndim - n + j
            q, precision = _quantized(resize_matrix(self.shape[axis], size[j], kind,
                                                    align_corners, scales[j]))
            weights = type(self)(q, dtype=dtypes.int32, device=self.device)
            total = x.cast(dtypes.int32).transpose(axis, -1) @ weights
            total = (total + (1 << (precision - 1))) >> precision
            x = total.clip(0, 255).cast(dtypes.uint8).transpose(axis, -1)
        return x

    # --- attention ---
    def scaled_dot_product_attention(self: Tensor, key: Tensor, value: Tensor,
                                     attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                     is_causal: bool = False, scale: float | None = None,
                                     enable_gqa: bool = False) -> Tensor:
        """softmax(self @ key^T * scale + mask) @ value for a query self (..., L, E), key
        (..., S, E) and value (..., S, Ev): a bool mask keeps where True, a float mask is added,
        is_causal keeps key j <= query i (top-left aligned). Rows with nothing kept give 0."""
        if is_causal and attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        if not 0 <= dropout_p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
        if self.ndim < 2 or key.ndim < 2 or value.ndim < 2 or key.shape[-2] != value.shape[-2] \
                or self.shape[-1] != key.shape[-1]:
            raise RuntimeError(f"scaled_dot_product_attention: query {self.shape}, key "
                               f"{key.shape} and value {value.shape} don't fit (..., L, E), "
                               f"(..., S, E), (..., S, Ev)")
        if enable_gqa and self.ndim >= 3 and key.ndim >= 3 and key.shape[-3] != self.shape[-3]:
            key, value = _share_heads(key, self.shape[-3]), _share_heads(value, self.shape[-3])
        if key.shape[-2] == 0:  # no keys: torch's zeros (a max over no scores would raise)
            return self.matmul(key.transpose(-2, -1)).matmul(value)
        factor = 1 / math.sqrt(self.shape[-1]) if scale is None else scale
        scores = self.matmul(key.transpose(-2, -1)) * factor
        if is_causal:
            rows = type(self).arange(self.shape[-2], device=self.device).unsqueeze(-1)
            attn_mask = rows >= type(self).arange(key.shape[-2], device=self.device)
        if attn_mask is not None:
            added = attn_mask.where(0.0, -math.inf) if attn_mask.dtype == dtypes.bool \
                else attn_mask
            scores = scores + added
        # a row of -inf only (nothing kept) would be NaN: torch gives 0 there
        top = scores.max(-1, keepdim=True).detach()
        empty = top == -math.inf
        if dropout_p > 0:  # applied whether training or not, as torch's functional does
            attn = empty.where(0.0, empty.where(0.0, scores).softmax(-1))  # no NaN gradient
            keep = attn.rand_like(dtype=dtypes.float32) >= dropout_p
            attn = keep.where(attn, 0) * (1 / (1 - dropout_p)) if dropout_p < 1 else attn * 0
            return attn.matmul(value)
        # softmax's division after the product, as flash attention's: each exponential is
        # computed once, and a row's L x Ev outputs are divided rather than its L x S weights
        weights = empty.where(0.0, scores - top).exp()  # (a where, so no NaN gradient)
        return empty.where(0.0, weights.matmul(value) / weights.sum(-1, keepdim=True))

    # --- regularization and normalization ---
    def dropout(self: Tensor, p: float = 0.5) -> Tensor:
        """While training, zero each element with probability p and scale the rest by
        1 / (1 - p), so the expected value stays the same. Outside training: self."""
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        # >>> exercise 10.embedding_dropout #embedding-and-dropout
        if not type(self).training or p == 0:
            return self
        if p == 1:
            return self * 0
        keep = self.rand_like(dtype=dtypes.float32) >= p
        return keep.where(self, 0) * (1 / (1 - p))
        # <<< exercise

    @float32_inside
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


def _share_heads(kv: Tensor, heads: int) -> Tensor:
    """Grouped-query attention: each of kv's heads (axis -3) repeated for its group of query
    heads, as torch's enable_gqa does."""
    kv_heads = kv.shape[-3]
    if heads % kv_heads:
        raise RuntimeError(f"number of heads in key/value ({kv_heads}) must divide the query's "
                           f"({heads}) for enable_gqa")
    grouped = kv.unsqueeze(-3).expand(*kv.shape[:-2], heads // kv_heads, *kv.shape[-2:])
    return grouped.reshape(*kv.shape[:-3], heads, *kv.shape[-2:])


SCANNED_WINDOW = 16  # windows up to this size find their maximum's place by a written-out scan


def _torch_max_place(flat: Tensor, out: Tensor, inside: Tensor | None) -> Tensor:
    """Where each window's maximum is, as torch's max pooling scans for it: a one-hot along the
    last axis of flat (the windows, out their maxima, inside False on the padding; None where
    there is none). torch keeps
    the first place inside the input, then moves on to a larger value or to any NaN: the first
    of tied maxima, the last NaN, and for a window of -inf (or the dtype's least value) its
    first place inside."""
    size = flat.shape[-1]
    if size <= SCANNED_WINDOW:
        return _scanned_max_place(flat, inside)
    maxima = flat == out.unsqueeze(-1)
    first = (maxima if inside is None else maxima & inside).cast(dtypes.int32).argmax(-1)
    if flat.dtype.is_float:
        nan = flat.isnan()
        last_nan = (size - 1) - nan.flip(-1).cast(dtypes.int32).argmax(-1)
        first = nan.any(-1).where(last_nan, first)
    return first.unsqueeze(-1)._hot(size).squeeze(-2) != 0


def _scanned_max_place(flat: Tensor, inside: Tensor | None) -> Tensor:
    """_torch_max_place for a small window: torch's scan written out, place by place, in
    elementwise ops: one kernel, where argmax, any and flip over the window made a 2 x 2
    pooling's backward 6 reduce kernels."""
    size = flat.shape[-1]
    values = [flat[..., i] for i in range(size)]
    kept = None if inside is None else [inside[..., i] for i in range(size)]
    best = values[0].full_like(dtypes.min(flat.dtype))
    place = values[0].full_like(-1, dtype=dtypes.int32)
    for i, value in enumerate(values):
        take = (value > best) | value.isnan() if flat.dtype.is_float else value > best
        take = take if kept is None else kept[i] & take
        best, place = take.where(value, best), take.where(i, place)
    first = place.full_like(0)  # a window of least values: its first place inside (0: none)
    for i, keep in reversed(list(enumerate(kept or []))):
        first = keep.where(i, first)
    # stored, one int a window: fused, the scan would run again for every element of the
    # window and every read of the gradient (a convolution's weight gradient reads each 9
    # times): conv1's gradients in examples/mnist.py's conv net went from 2.9 to 10.5 ms
    place = (place < 0).where(first, place).contiguous()
    return place.unsqueeze(-1) == type(flat).arange(size, device=flat.device)


def _unpool_gradient(grad: UOp, node: UOp, values: UOp, hot: UOp) -> tuple[UOp, None]:
    """max_unpool's gradient to its values: the output gradient where each value was put."""
    spread = grad.reshape((*grad.shape[:-1], 1, grad.shape[-1])).expand(hot.shape)
    picked = hot.where(spread, 0.0).sum((hot.ndim - 1,))  # keeps the axis: (..., pooled, 1)
    return picked.reshape(values.shape), None
