# Solutions of chapter 14, generated from tinyfw/onnx/rules.py by `python -m tools.generate`.
# Edit tinyfw/onnx/rules.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/14_importing_models --impl=solutions
# generated text id: 0510da2c97a6a463 (lets tools.generate tell your edits apart)
"""The rules of a few ONNX operators, as functions of plain values that their operator functions
(ops_*.py) call: Gemm's transposes and scales, the pads Conv's `auto_pad` asks for, Reshape's 0
and -1, and the multidirectional broadcasting of shapes (Expand's)."""
from __future__ import annotations

import math
from collections.abc import Sequence

from tinyfw.tensor import Tensor


def gemm(a: Tensor, b: Tensor, c: Tensor | None, trans_a: bool, trans_b: bool, alpha: float,
         beta: float) -> Tensor:
    """ONNX's Gemm: alpha * A' @ B' + beta * C, where A' is a transposed when trans_a (B' b
    when trans_b), and C (None when left out) broadcasts to the product's shape; the result has
    a's dtype."""
    # >>> exercise 14.gemm #gemm-transposes-and-scales
    if trans_a:
        a = a.transpose(0, 1)
    if trans_b:
        b = b.transpose(0, 1)
    out = a.matmul(b)
    if alpha != 1.0:
        out = out * alpha
    if c is not None:
        out = out + (c * beta if beta != 1.0 else c)
    return out.cast(a.dtype)
    # <<< exercise


def conv_pads(auto_pad: str, sizes: Sequence[int], kernel: Sequence[int],
              strides: Sequence[int], dilations: Sequence[int],
              pads: Sequence[int] | None) -> list[tuple[int, int]]:
    """Each spatial axis's (before, after) padding for a Conv (or a pooling) over spatial
    `sizes`: what `auto_pad` asks for (SAME_UPPER, SAME_LOWER, VALID), or with NOTSET the
    `pads` attribute (all the befores, then all the afters; None is no padding)."""
    # >>> exercise 14.conv_pads #convs-auto_pad
    k = len(kernel)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for size, kk, s, d in zip(sizes, kernel, strides, dilations):
            total = max((math.ceil(size / s) - 1) * s + (kk - 1) * d + 1 - size, 0)
            small = total // 2
            out.append((small, total - small) if auto_pad == "SAME_UPPER" else
                       (total - small, small))
        return out
    if auto_pad == "VALID":
        return [(0, 0)] * k
    given = list(pads) if pads is not None else [0] * 2 * k
    return [(given[i], given[i + k]) for i in range(k)]
    # <<< exercise


def reshape_dims(shape: Sequence[int], dims: Sequence[int], allowzero: bool) -> list[int]:
    """The shape ONNX's Reshape gives a tensor of `shape` when asked for `dims`, every size
    written out: a 0 copies the input's size at its position (with allowzero, a 0 is a size of
    0), and one -1 is the size that keeps the number of elements (ValueError if none does)."""
    # >>> exercise 14.reshape #reshapes-0-and-1
    out = [shape[i] if d == 0 and not allowzero else d for i, d in enumerate(dims)]
    if -1 in out:
        known, total = math.prod(d for d in out if d != -1), math.prod(shape)
        if out.count(-1) > 1 or known == 0 or total % known:
            raise ValueError(f"Reshape cannot make a tensor of shape {tuple(shape)} into "
                             f"{list(dims)}")
        out = [total // known if d == -1 else d for d in out]
    return out
    # <<< exercise


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape that ONNX's multidirectional broadcasting (numpy's) makes of shapes: aligned at
    their last axes, the shorter ones as if 1s stood in front; on each axis the sizes other
    than 1 must agree (ValueError if they don't), and the result has that size (1 if none)."""
    # >>> exercise 14.broadcast #broadcasting-shapes
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    out = []
    for axis, sizes in enumerate(zip(*padded)):
        other = sorted({d for d in sizes if d != 1})
        if len(other) > 1:
            raise ValueError(f"shapes {', '.join(str(tuple(s)) for s in shapes)} do not "
                             f"broadcast: sizes {other} on axis {axis}")
        out.append(other[0] if other else 1)
    return tuple(out)
    # <<< exercise
