# Exercises of chapter 14, generated from tinyfw/onnx/rules.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/14_importing_models
# generated text id: 6a2370151fdc95ca (lets tools.generate tell your edits apart)
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
    # TODO 14.gemm: write this part. The chapter explains it:
    #   chapters/14_importing_models/README.md#gemm-transposes-and-scales
    raise NotImplementedError("not done yet: 14.gemm")


def conv_pads(auto_pad: str, sizes: Sequence[int], kernel: Sequence[int],
              strides: Sequence[int], dilations: Sequence[int],
              pads: Sequence[int] | None) -> list[tuple[int, int]]:
    """Each spatial axis's (before, after) padding for a Conv (or a pooling) over spatial
    `sizes`: what `auto_pad` asks for (SAME_UPPER, SAME_LOWER, VALID), or with NOTSET the
    `pads` attribute (all the befores, then all the afters; None is no padding)."""
    # TODO 14.conv_pads: write this part. The chapter explains it:
    #   chapters/14_importing_models/README.md#convs-auto_pad
    raise NotImplementedError("not done yet: 14.conv_pads")


def reshape_dims(shape: Sequence[int], dims: Sequence[int], allowzero: bool) -> list[int]:
    """The shape ONNX's Reshape gives a tensor of `shape` when asked for `dims`, every size
    written out: a 0 copies the input's size at its position (with allowzero, a 0 is a size of
    0), and one -1 is the size that keeps the number of elements (ValueError if none does)."""
    # TODO 14.reshape: write this part. The chapter explains it:
    #   chapters/14_importing_models/README.md#reshapes-0-and-1
    raise NotImplementedError("not done yet: 14.reshape")


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape that ONNX's multidirectional broadcasting (numpy's) makes of shapes: aligned at
    their last axes, the shorter ones as if 1s stood in front; on each axis the sizes other
    than 1 must agree (ValueError if they don't), and the result has that size (1 if none)."""
    # TODO 14.broadcast: write this part. The chapter explains it:
    #   chapters/14_importing_models/README.md#broadcasting-shapes
    raise NotImplementedError("not done yet: 14.broadcast")
