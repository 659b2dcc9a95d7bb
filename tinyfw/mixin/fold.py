"""fold (torch.nn.functional.fold, ONNX's Col2Im): blocks of an image, one column each, summed
back into the image, the inverse of the windows a convolution reads.

Each position of the kernel holds one value of every block: that slab is spread out by the
stride (zeros between its values), moved to its offset in the kernel and added to the image.
Only additions meet the zeros: an inf or a nan in a block stays where it belongs."""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tinyfw.helpers import prod

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor


def fold(x: Tensor, output_size: Sequence[int], kernel: Sequence[int],
         dilation: Sequence[int], pads: Sequence[tuple[int, int]],
         stride: Sequence[int]) -> Tensor:
    """x (N, C * prod(kernel), blocks) summed into (N, C, *output_size): block b's value at
    kernel position k lands at b * stride + k * dilation - the padding before, per axis."""
    d = len(output_size)
    padded = [o + lo + hi for o, (lo, hi) in zip(output_size, pads)]
    counts = [(p - dl * (k - 1) - 1) // s + 1 for p, k, dl, s in
              zip(padded, kernel, dilation, stride)]
    if x.ndim != 3 or x.shape[1] % max(prod(kernel), 1) or x.shape[2] != prod(counts) or \
            any(c <= 0 for c in counts):
        raise RuntimeError(f"Expected an input of shape (N, C * {prod(kernel)}, {prod(counts)})"
                           f" for output_size {list(output_size)}, kernel_size {list(kernel)},"
                           f" dilation {list(dilation)}, padding {list(pads)} and stride "
                           f"{list(stride)}, but got input of shape {list(x.shape)}")
    n, c = x.shape[0], x.shape[1] // prod(kernel)
    blocks = x.reshape(n, c, *kernel, *counts)
    total = None
    for at in itertools.product(*(range(k) for k in kernel)):
        slab = blocks[(slice(None), slice(None)) + tuple(at)]  # (N, C, *counts)
        for j in range(d):
            slab = _spread(slab, 2 + j, counts[j], stride[j], at[j] * dilation[j], padded[j])
        total = slab if total is None else total + slab
    assert total is not None
    return total.shrink([None, None] + [(lo, lo + o) for o, (lo, _) in zip(output_size, pads)])


def _spread(x: Tensor, axis: int, count: int, step: int, offset: int, length: int) -> Tensor:
    """x's count values along axis placed step apart from offset, zeros elsewhere, in length."""
    shape = list(x.shape)
    x = x.reshape(*shape[:axis], count, 1, *shape[axis + 1:])
    x = x.pad([None] * (axis + 1) + [(0, step - 1)] + [None] * (len(shape) - axis - 1))
    x = x.reshape(*shape[:axis], count * step, *shape[axis + 1:])
    used = (count - 1) * step + 1
    keep = [None] * axis + [(0, used)] + [None] * (len(shape) - axis - 1)
    x = x.shrink(keep)
    return x.pad([None] * axis + [(offset, length - offset - used)] +
                 [None] * (len(shape) - axis - 1))
