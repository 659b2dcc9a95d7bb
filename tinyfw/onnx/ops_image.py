"""ONNX's operators that sample images at computed places, GridSample and AffineGrid (on
tinyfw/mixin/sampling.py, torch's semantics, which ONNX's follow), and Col2Im (blocks summed
back into an image: tinyfw/mixin/fold.py)."""
from __future__ import annotations

import math
from typing import cast

from tinyfw.dtype import dtypes
from tinyfw.mixin.fold import fold
from tinyfw.mixin.sampling import affine_grid, position_dtype
from tinyfw.onnx.registry import Call, op
from tinyfw.tensor import Tensor


@op("GridSample")
def grid_sample(n: Call, x: Tensor, grid: Tensor) -> Tensor:
    # opset 16 names the modes bilinear and bicubic, opset 20 linear and cubic
    mode = n.attr("mode", "bilinear" if n.opset < 20 else "linear")
    return x.grid_sample(grid.cast(x.dtype), mode, n.attr("padding_mode", "zeros"),
                         bool(n.attr("align_corners", 0)))


@op("AffineGrid")
def affine_grid_op(n: Call, theta: Tensor, size: Tensor) -> Tensor:
    return affine_grid(theta, n.ints(size), bool(n.attr("align_corners", 0)))


@op("Col2Im")
def col2im(n: Call, x: Tensor, image_shape: Tensor, block_shape: Tensor) -> Tensor:
    size, kernel = n.ints(image_shape), n.ints(block_shape)
    d = len(size)
    pads = n.attr("pads", [0] * 2 * d)
    return fold(x, size, kernel, n.attr("dilations", [1] * d),
                [(pads[j], pads[j + d]) for j in range(d)], n.attr("strides", [1] * d))


def _box_edges(boxes: Tensor, center_point_box: int) -> tuple[Tensor, ...]:
    """(x_min, x_max, y_min, y_max) of boxes (..., 4): [y1, x1, y2, x2] corners in any order,
    or [x_center, y_center, width, height] (center_point_box)."""
    a, b, c, d = (boxes[..., i] for i in range(4))
    if center_point_box:
        return a - c / 2, a + c / 2, b - d / 2, b + d / 2
    return b.minimum(d), b.maximum(d), a.minimum(c), a.maximum(c)


def _suppresses(boxes: Tensor, center_point_box: int, iou_threshold: float) -> Tensor:
    """(B, N, N): whether box i and box j overlap by more than iou_threshold (intersection
    over union), as ONNX's reference decides it (an empty box or overlap suppresses nothing)."""
    x0, x1, y0, y1 = _box_edges(boxes, center_point_box)
    ix = x1.unsqueeze(-1).minimum(x1.unsqueeze(-2)) - x0.unsqueeze(-1).maximum(x0.unsqueeze(-2))
    iy = y1.unsqueeze(-1).minimum(y1.unsqueeze(-2)) - y0.unsqueeze(-1).maximum(y0.unsqueeze(-2))
    inter = ix * iy
    area = (x1 - x0) * (y1 - y0)
    a1, a2 = area.unsqueeze(-1), area.unsqueeze(-2)
    union = a1 + a2 - inter
    real = (ix > 0) & (iy > 0) & (inter > 0) & (a1 > 0) & (a2 > 0) & (union > 0)
    return real & (inter / real.where(union, 1) > iou_threshold)


@op("NonMaxSuppression", fold=False)
def non_max_suppression(n: Call, boxes: Tensor, scores: Tensor,
                        max_out: Tensor | None = None, iou: Tensor | None = None,
                        score: Tensor | None = None) -> Tensor:
    """The boxes kept by greedy suppression, per batch and class, best score first (ties: the
    lower index): rows [batch, class, box] (int64). The greedy pass runs on the device, one
    step per box; the number kept is read on the host (the result's size depends on it)."""
    limit = max(n.ints(max_out)[0], 0) if max_out is not None and max_out.numel() else 0
    iou_t = n.floats(iou)[0] if iou is not None and iou.numel() else 0.0
    b, c, count = scores.shape
    order = scores.argsort(-1, descending=True, stable=True)  # (B, C, N)
    ranked = scores.gather(-1, order)
    candidate = ranked > n.floats(score)[0] if score is not None and score.numel() else \
        Tensor.ones(b, c, count, dtype=dtypes.bool, device=scores.device)
    sup = _suppresses(boxes.float(), int(n.attr("center_point_box", 0)), iou_t)  # (B, N, N)
    rows = sup.unsqueeze(1).expand(b, c, count, count).gather(
        2, order.unsqueeze(-1).expand(b, c, count, count))
    sup = rows.gather(3, order.unsqueeze(-2).expand(b, c, count, count))  # in ranked order
    keep = Tensor.zeros(b, c, count, dtype=dtypes.bool, device=scores.device)
    kept = Tensor.zeros(b, c, dtype=dtypes.int32, device=scores.device)
    positions = Tensor.arange(count, device=scores.device)
    for i in range(count):
        suppressed = (keep & sup[..., i]).any(-1)
        take = candidate[..., i] & suppressed.logical_not() & (kept < limit)
        keep = (positions == i).where(take.unsqueeze(-1), keep)
        kept = kept + take.cast(dtypes.int32)
        if i % 32 == 31:
            Tensor.realize_all(keep, kept)
    found = cast(Tensor, keep.nonzero())  # (K, 3): batch, class, rank, in ONNX's order
    if found.shape[0] == 0:
        return Tensor.zeros(0, 3, dtype=dtypes.int64, device=scores.device)
    box = order[found[:, 0], found[:, 1], found[:, 2]]
    return Tensor.stack(found[:, 0], found[:, 1], box.cast(found.dtype), dim=-1).cast(
        dtypes.int64)


def _roi_grid(n: Call, rois: Tensor, size: tuple[int, int], ratio: int) -> tuple[int, int]:
    """The most sample points per bin, in height and width, over the rois (sampling_ratio, or
    ceil(the roi's size / the output's) each: then the rois are read on the host)."""
    if ratio > 0:
        return ratio, ratio
    boxes = n.values(rois).reshape(-1, 4).astype("float64") * n.attr("spatial_scale", 1.0)
    if boxes.shape[0] == 0:
        return 1, 1
    heights, widths = boxes[:, 3] - boxes[:, 1], boxes[:, 2] - boxes[:, 0]
    if n.opset < 16 or n.attr("coordinate_transformation_mode", "half_pixel") != "half_pixel":
        heights, widths = heights.clip(1, None), widths.clip(1, None)
    grid_h = max(int(math.ceil(heights.max() / size[0])), 1)
    grid_w = max(int(math.ceil(widths.max() / size[1])), 1)
    return grid_h, grid_w


@op("RoiAlign", fold=False)
def roi_align(n: Call, x: Tensor, rois: Tensor, batch_indices: Tensor) -> Tensor:
    """Each roi's bins (output_height x output_width), each the average (or the max) of the
    bilinear samples on a grid in it (sampling_ratio per axis, or ceil(the bin's size)), as
    ONNX's reference: a sample more than a pixel outside the image reads 0, one just outside
    reads the edge."""
    oh, ow = n.attr("output_height", 1), n.attr("output_width", 1)
    ratio = n.attr("sampling_ratio", 0)
    half = n.opset >= 16 and n.attr("coordinate_transformation_mode",
                                    "half_pixel") == "half_pixel"
    grid_h, grid_w = _roi_grid(n, rois, (oh, ow), ratio)
    count, (_, c, height, width) = rois.shape[0], x.shape
    box = rois.float() * n.attr("spatial_scale", 1.0) - (0.5 if half else 0.0)
    start_w, start_h = box[:, 0], box[:, 1]
    size_w, size_h = box[:, 2] - start_w, box[:, 3] - start_h
    if not half:
        size_w, size_h = size_w.maximum(1.0), size_h.maximum(1.0)

    def samples(start: Tensor, size: Tensor, bins: int, most: int) -> tuple[Tensor, Tensor]:
        """(R, bins, most) sample coordinates along an axis, and (R, 1, most) which samples the
        roi has."""
        step = size / bins
        per = (size / bins).ceil().maximum(1.0) if ratio <= 0 else size.full_like(ratio)
        at = Tensor.arange(most, device=x.device).float().reshape(1, 1, most)
        bin_start = Tensor.arange(bins, device=x.device).float().reshape(1, bins, 1)
        coord = start.reshape(-1, 1, 1) + bin_start * step.reshape(-1, 1, 1) + \
            (at + 0.5) * (step / per).reshape(-1, 1, 1)
        return coord, (at < per.reshape(-1, 1, 1))

    ys, y_ok = samples(start_h, size_h, oh, grid_h)  # (R, oh, gh)
    xs, x_ok = samples(start_w, size_w, ow, grid_w)  # (R, ow, gw)
    y = ys.reshape(count, oh, grid_h, 1, 1).expand(count, oh, grid_h, ow, grid_w)
    xx = xs.reshape(count, 1, 1, ow, grid_w).expand(count, oh, grid_h, ow, grid_w)
    outside = (y < -1) | (y > height) | (xx < -1) | (xx > width)

    def corners(v: Tensor, size: int) -> tuple[Tensor, Tensor, Tensor]:
        v = v.maximum(0.0)
        low = v.floor().minimum(size - 1)
        last = low >= size - 1
        v = last.where(low, v)
        return low, last.where(low, low + 1), v - low

    y_low, y_high, ly = corners(y, height)
    x_low, x_high, lx = corners(xx, width)
    images = x.reshape(x.shape[0], c, height * width)[batch_indices.cast(dtypes.int32)]
    place = position_dtype(height * width, x.device)
    terms = []
    for yy, wy in ((y_low, 1 - ly), (y_high, ly)):
        for xc, wx in ((x_low, 1 - lx), (x_high, lx)):
            position = (yy.cast(place) * width + xc.cast(place)).reshape(count, 1, -1)
            read = images.gather(2, position.expand(count, c, position.shape[-1]))
            weight = outside.where(0.0, wy * wx).reshape(count, 1, -1)
            terms.append((weight * read).reshape(count, c, oh, grid_h, ow, grid_w))
    taken = y_ok.reshape(count, 1, 1, grid_h, 1, 1) & x_ok.reshape(count, 1, 1, 1, 1, grid_w)
    if n.attr("mode", "avg") == "max":
        best = terms[0].maximum(terms[1]).maximum(terms[2]).maximum(terms[3])
        out = taken.where(best, -math.inf).max((3, 5))
    else:
        total = taken.where(terms[0] + terms[1] + terms[2] + terms[3], 0.0).sum((3, 5))
        per_bin = y_ok.sum(-1).reshape(count, 1, 1, 1) * x_ok.sum(-1).reshape(count, 1, 1, 1)
        out = total / per_bin.maximum(1)
    return out.cast(x.dtype)
