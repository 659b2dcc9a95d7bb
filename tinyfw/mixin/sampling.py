"""Sampling an image at points a grid gives: grid_sample (torch.nn.functional.grid_sample,
ONNX's GridSample) and the grids of affine maps (affine_grid).

A grid holds, for each output point, its place in the input in normalized coordinates: -1 and
1 are the first and last pixels' centres (align_corners) or their outer edges (not). Each
output is a weighted sum of the input pixels around that place (nearest: one; linear: 2 per
axis; cubic: 4 per axis, Keys' kernel with a = -0.75), read with one gather per neighbour from
the flattened image. A neighbour outside the image reads 0 ("zeros") or the pixel the padding
mode names: the nearest edge ("border") or the mirror image ("reflection")."""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tinyfw.dtype import DType, dtypes
from tinyfw.mixin.core import TensorCore, index_dtype

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor

MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic",
         "cubic": "cubic"}
PADDINGS = ("zeros", "border", "reflection")
CUBIC_A = -0.75


def _unnormalize(g: Tensor, size: int, align_corners: bool) -> Tensor:
    """Normalized coordinates [-1, 1] to pixel coordinates of an axis of size pixels."""
    return (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2


def _reflect(x: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """x mirrored into [twice_low / 2, twice_high / 2] by its ends, again and again."""
    if twice_low == twice_high:
        return x.zeros_like()
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    x = (x - low).abs()
    flips = (x / span).floor()
    extra = x - flips * span
    even = (flips - (flips / 2).floor() * 2) == 0
    return even.where(extra + low, span - extra + low)


def _padded(x: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """A pixel coordinate moved inside the image as the padding mode says (zeros: as it is)."""
    if padding_mode == "border":
        return x.clip(0, size - 1)
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        return x.clip(0, size - 1)
    return x


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights of the 4 neighbours at -1, 0, 1, 2 for a fraction t."""
    a = CUBIC_A

    def near(d: Tensor) -> Tensor:  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: Tensor) -> Tensor:  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


class SamplingOps(TensorCore):
    """grid_sample (mixed into Tensor)."""
    __slots__ = ()

    def grid_sample(self: Tensor, grid: Tensor, mode: str = "bilinear",
                    padding_mode: str = "zeros", align_corners: bool = False) -> Tensor:
        """self (N, C, *spatial) sampled at grid (N, *out, d), d = the number of spatial axes
        (1 to 3), its last axis the coordinates in reverse order (x of the last axis first), as
        torch.nn.functional.grid_sample: mode "bilinear" (linear in every axis), "nearest"
        (halves to even) or "bicubic"; padding_mode "zeros", "border" or "reflection". Out of
        the image, a neighbour adds nothing (zeros) or is read where the padding puts it."""
        kind = MODES.get(mode)
        if kind is None:
            raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                             f"'nearest' or 'bicubic', but got: '{mode}'")
        if padding_mode not in PADDINGS:
            raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be "
                             f"'zeros', 'border', or 'reflection', but got: '{padding_mode}'")
        d = self.ndim - 2
        if d < 1 or grid.ndim != self.ndim or grid.shape[-1] != d or \
                grid.shape[0] != self.shape[0]:
            raise RuntimeError(f"grid_sampler(): expected grid of shape (N, *out, {max(d, 1)})"
                               f" for input of shape {list(self.shape)}, but got grid of "
                               f"shape {list(grid.shape)}")
        if not self.dtype.is_float or grid.dtype != self.dtype:
            raise RuntimeError(f"grid_sampler(): expected input and grid of the same float "
                               f"dtype, but got {self.dtype.name} and {grid.dtype.name}")
        if self.dtype.itemsize < 4:  # 16-bit floats: coordinates and sums in float32
            return self.float().grid_sample(grid.float(), mode, padding_mode,
                                            align_corners).cast(self.dtype)
        n, c, sizes = self.shape[0], self.shape[1], self.shape[2:]
        out = grid.shape[1:-1]
        points = 1
        for s in out:
            points *= s
        coords = [_unnormalize(grid[..., d - 1 - j].reshape(n, 1, points), sizes[j],
                               align_corners) for j in range(d)]
        flat = self.reshape(n, c, -1)
        if kind == "cubic":
            result = _cubic(flat, coords, sizes, padding_mode, align_corners)
        else:
            coords = [_padded(x, s, padding_mode, align_corners) for x, s in zip(coords, sizes)]
            result = _nearest(flat, coords, sizes) if kind == "nearest" else \
                _linear(flat, coords, sizes)
        return result.cast(self.dtype).reshape(n, c, *out)


def _read(flat: Tensor, index: list[Tensor], sizes: Sequence[int]) -> Tensor:
    """flat (N, C, pixels) at integer pixel coordinates index (each (N, 1, P), one an axis): 0
    where a coordinate is outside the image (nothing is read there)."""
    inside = None
    position = None
    dtype = position_dtype(flat.shape[-1], flat.device)
    for i, size, stride in zip(index, sizes, _strides(sizes)):
        ok = (i >= 0) & (i < size)
        inside = ok if inside is None else inside & ok
        term = ok.where(i, 0).cast(dtype) * stride
        position = term if position is None else position + term
    assert inside is not None and position is not None
    picked = flat.gather(2, position.expand(flat.shape[0], flat.shape[1], position.shape[-1]))
    return inside.where(picked, 0)


def position_dtype(pixels: int, device: str | tuple[str, ...]) -> DType:
    """The dtype of a flat position into a plane of `pixels` elements: int32 while every
    position fits it, else the device's 64-bit index dtype; a device without one (WEBGPU)
    refuses the plane rather than wrap its positions around."""
    if pixels <= 2**31:
        return dtypes.int32
    dtype = index_dtype(device)
    if dtype.itemsize < 8:
        raise RuntimeError(f"an image plane of {pixels} elements needs 64-bit positions, which "
                           f"{device} does not have (int32 holds positions below 2**31)")
    return dtype


def _strides(sizes: Sequence[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= size
    return list(reversed(strides))


def _nearest(flat: Tensor, coords: list[Tensor], sizes: Sequence[int]) -> Tensor:
    return _read(flat, [x.round() for x in coords], sizes)


def _linear(flat: Tensor, coords: list[Tensor], sizes: Sequence[int]) -> Tensor:
    """The sum over the 2**d corners around each point, each weighted by the product over the
    axes of 1 - its distance there."""
    lows = [x.floor() for x in coords]
    fracs = [x - low for x, low in zip(coords, lows)]
    total = None
    for corner in itertools.product((0, 1), repeat=len(coords)):
        weight = None
        for t, frac in zip(corner, fracs):
            w = frac if t else 1 - frac
            weight = w if weight is None else weight * w
        assert weight is not None
        value = _read(flat, [low + t for low, t in zip(lows, corner)], sizes)
        term = weight * value
        total = term if total is None else total + term
    assert total is not None
    return total


def _cubic(flat: Tensor, coords: list[Tensor], sizes: Sequence[int], padding_mode: str,
           align_corners: bool) -> Tensor:
    """The sum over the 4**d neighbours around each point, Keys' weights multiplied over the
    axes; each neighbour's coordinate is padded on its own (torch's bicubic)."""
    lows = [x.floor() for x in coords]
    weights = [_cubic_weights(x - low) for x, low in zip(coords, lows)]
    total = None
    for taps in itertools.product(range(4), repeat=len(coords)):
        weight = None
        index = []
        for j, tap in enumerate(taps):
            w = weights[j][tap]
            weight = w if weight is None else weight * w
            at = lows[j] + (tap - 1)
            if padding_mode != "zeros":
                at = _padded(at, sizes[j], padding_mode, align_corners).floor()
            index.append(at)
        assert weight is not None
        term = weight * _read(flat, index, sizes)
        total = term if total is None else total + term
    assert total is not None
    return total


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool = False) -> Tensor:
    """The sampling grid (N, *spatial, d) of affine maps theta (N, d, d + 1) for an output of
    size (N, C, *spatial), d = 2 or 3: each output point's normalized coordinates (x first)
    times theta, as torch.nn.functional.affine_grid."""
    d = len(size) - 2
    if d not in (2, 3) or tuple(theta.shape) != (size[0], d, d + 1):
        raise ValueError(f"Expected a batch of {d}D affine matrices of shape Nx{d}x{d + 1} for "
                         f"size {list(size)}. Got {list(theta.shape)}.")
    spatial = list(size[2:])
    axes = []
    for j, s in enumerate(reversed(spatial)):  # x (the last axis) first
        if s == 1:
            line = type(theta).zeros(1, dtype=theta.dtype, device=theta.device)
        else:
            line = type(theta).linspace(-1, 1, s, dtype=theta.dtype, device=theta.device)
            if not align_corners:
                line = line * (s - 1) / s
        shape = [1] * d
        shape[d - 1 - j] = s
        axes.append(line.reshape(*shape).expand(*spatial))
    ones = type(theta).ones(*spatial, dtype=theta.dtype, device=theta.device)
    base = type(theta).stack(*axes, ones, dim=-1).reshape(1, -1, d + 1)  # (1, points, d + 1)
    out = base.expand(size[0], base.shape[1], d + 1).matmul(theta.transpose(1, 2))
    return out.reshape(size[0], *spatial, d)
