"""ONNX's neural-network operators (convolution, pooling, normalization, softmax, resizing,
recurrent layers, control flow) as tinyfw Tensor ops."""
from __future__ import annotations

import math

import numpy as np

from tinyfw.dtype import dtypes
from tinyfw.onnx import lowbit, rules
from tinyfw.onnx.types import dtype_of
from tinyfw.onnx.registry import Call, NodeInfo, op
from tinyfw.tensor import Tensor


def _axis(a: int, ndim: int) -> int:
    return a + ndim if a < 0 else a


def _spatial_pads(n: Call, x: Tensor, kernel: list[int], strides: list[int],
                  dilations: list[int]) -> list[tuple[int, int]]:
    """Each spatial axis's (before, after) padding: `pads`, or what auto_pad's SAME asks."""
    return rules.conv_pads(n.attr("auto_pad", "NOTSET"), x.shape[2:], kernel, strides,
                           dilations, n.attr("pads", None))


def _conv_params(n: Call, x: Tensor, kernel: list[int]) -> tuple[list[int], list[int]]:
    k = len(kernel)
    return list(n.attr("strides", [1] * k)), list(n.attr("dilations", [1] * k))


@op("Conv")
def conv(n: Call, x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    kernel = list(n.attr("kernel_shape", w.shape[2:]))
    strides, dilations = _conv_params(n, x, kernel)
    pads = _spatial_pads(n, x, kernel, strides, dilations)
    if any(p for pair in pads for p in pair):
        x = x.pad([None, None, *pads])
    return x.conv2d(w, b, groups=n.attr("group", 1), stride=tuple(strides),
                    dilation=tuple(dilations), padding=0)


@op("ConvTranspose")
def conv_transpose(n: Call, x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    kernel = list(n.attr("kernel_shape", w.shape[2:]))
    k = len(kernel)
    strides, dilations = _conv_params(n, x, kernel)
    out_pad = list(n.attr("output_padding", [0] * k))
    sizes = x.shape[2:]
    full = [(i - 1) * s + (kk - 1) * d + 1 for i, s, kk, d in zip(sizes, strides, kernel,
                                                                  dilations)]
    if n.attr("output_shape") is not None:
        want = list(n.attr("output_shape"))[-k:]
        total = [f + op_ - o for f, op_, o in zip(full, out_pad, want)]
        upper = n.attr("auto_pad", "NOTSET") == "SAME_UPPER"
        pads = [(t - t // 2, t // 2) if not upper else (t // 2, t - t // 2) for t in total]
    elif n.attr("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        total = [f + op_ - i * s for f, op_, i, s in zip(full, out_pad, sizes, strides)]
        lower = n.attr("auto_pad") == "SAME_LOWER"
        pads = [(t - t // 2, t // 2) if lower else (t // 2, t - t // 2) for t in total]
    elif n.attr("auto_pad", "NOTSET") == "VALID":
        pads = [(0, 0)] * k
    else:
        p = n.attr("pads", [0] * 2 * k)
        pads = [(p[i], p[i + k]) for i in range(k)]
    out = x.conv_transpose2d(w, b, groups=n.attr("group", 1), stride=tuple(strides),
                             dilation=tuple(dilations), padding=0,
                             output_padding=tuple(out_pad))
    return out.pad([None, None] + [(-bb, -a) for bb, a in pads])  # negative pads crop


# --- pooling ---
Pads = list[tuple[int, int]]


def _pool_windows(n: Call, x: Tensor, fill: float) -> tuple[Tensor, list[int], Pads, list[int]]:
    """The windows of a pooling (x padded with `fill`): (..., *outs, *kernel), the kernel,
    the pads and each axis's extra end padding that ceil_mode adds."""
    kernel = list(n.attr("kernel_shape"))
    k = len(kernel)
    strides = list(n.attr("strides", [1] * k))
    dilations = list(n.attr("dilations", [1] * k))
    pads = _spatial_pads(n, x, kernel, strides, dilations)
    extra = [0] * k
    if n.attr("ceil_mode", 0) and n.attr("auto_pad", "NOTSET") in ("NOTSET", "VALID"):
        for j, (size, kk, s, d, (pb, pe)) in enumerate(zip(x.shape[2:], kernel, strides,
                                                             dilations, pads)):
            span = size + pb + pe - ((kk - 1) * d + 1)
            outs = math.ceil(span / s) + 1
            if (outs - 1) * s >= size + pb:
                outs -= 1
            extra[j] = max((outs - 1) * s + (kk - 1) * d + 1 - (size + pb + pe), 0)
    both = [(pb, pe + e) for (pb, pe), e in zip(pads, extra)]
    padded = x.pad([*([None] * (x.ndim - k)), *both], value=fill) if any(
        p for pair in both for p in pair) else x
    return padded._pool(tuple(kernel), tuple(strides), tuple(dilations)), kernel, pads, extra


@op("MaxPool")
def max_pool(n: Call, x: Tensor) -> Tensor | tuple[Tensor, Tensor]:
    lo = -math.inf if x.dtype.is_float else dtypes.min(x.dtype)
    windows, kernel, pads, extra = _pool_windows(n, x, lo)
    k = len(kernel)
    out = windows.max(tuple(range(-k, 0)))
    if not n.wants(1):
        return out
    # each element's index in the whole tensor (row-major; column-major with storage_order)
    sizes = x.shape[2:]
    if n.attr("storage_order", 0):
        strides_ = [1] + [int(np.prod(sizes[:j])) for j in range(1, k)]
        plane = sum(Tensor.arange(s, device=x.device).reshape(
            *[s if i == j else 1 for i in range(k)]) * st for j, (s, st) in
            enumerate(zip(sizes, strides_)))
        assert isinstance(plane, Tensor)
    else:
        plane = Tensor.arange(int(np.prod(sizes)), device=x.device).reshape(*sizes)
    base = Tensor.arange(x.shape[0] * x.shape[1], device=x.device).reshape(
        x.shape[0], x.shape[1], *[1] * k) * int(np.prod(sizes))
    where = (plane.reshape(1, 1, *sizes) + base).cast(dtypes.int64)
    n2 = Call(NodeInfo(n.op, n.name, [], [], n.info.attrs, n.opset), n.known, n.device)
    wins, *_ = _pool_windows(n2, where, -1)
    flat_w = windows.flatten(-k)
    first = flat_w.argmax(-1)
    hot = first.unsqueeze(-1) == Tensor.arange(flat_w.shape[-1], device=x.device)
    idx = hot.where(wins.flatten(-k), 0).sum(-1, dtype=dtypes.int64)
    return out, idx


@op("AveragePool")
def average_pool(n: Call, x: Tensor) -> Tensor:
    windows, kernel, pads, extra = _pool_windows(n, x, 0.0)
    k = len(kernel)
    axes = tuple(range(-k, 0))
    total = windows.sum(axes)
    include = n.attr("count_include_pad", 0) and n.attr("auto_pad", "NOTSET") in (
        "NOTSET", "VALID")
    if include and not any(extra):
        return (total / math.prod(kernel)).cast(x.dtype)
    ones = Tensor.ones(*x.shape[2:], dtype=x.dtype, device=x.device)
    ones = ones.pad(pads, value=1.0) if include else ones.pad(pads)
    strides = tuple(n.attr("strides", [1] * k))
    dilations = tuple(n.attr("dilations", [1] * k))
    count = ones.pad([(0, e) for e in extra])._pool(tuple(kernel), strides, dilations).sum(axes)
    return (total / count).cast(x.dtype)


@op("LpPool")
def lp_pool(n: Call, x: Tensor) -> Tensor:
    p = n.attr("p", 2)
    windows, kernel, *_ = _pool_windows(n, x, 0.0)
    return (windows.abs() ** p).sum(tuple(range(-len(kernel), 0))) ** (1 / p)


@op("GlobalAveragePool")
def global_average_pool(n: Call, x: Tensor) -> Tensor:
    return x.mean(tuple(range(2, x.ndim)), keepdim=True)


@op("GlobalMaxPool")
def global_max_pool(n: Call, x: Tensor) -> Tensor:
    return x.max(tuple(range(2, x.ndim)), keepdim=True)


@op("GlobalLpPool")
def global_lp_pool(n: Call, x: Tensor) -> Tensor:
    p = n.attr("p", 2)
    return (x.abs() ** p).sum(tuple(range(2, x.ndim)), keepdim=True) ** (1 / p)


# --- normalization ---
def _per_channel(t: Tensor, ndim: int) -> Tensor:
    return t.reshape(1, -1, *[1] * (ndim - 2))


@op("BatchNormalization")
def batch_norm(n: Call, x: Tensor, scale: Tensor, bias: Tensor, mean: Tensor,
               var: Tensor) -> Tensor | tuple[Tensor, ...]:
    eps = n.attr("epsilon", 1e-5)
    if n.attr("training_mode", 0):
        axes = tuple(i for i in range(x.ndim) if i != 1)
        cur_mean = x.mean(axes)
        cur_var = ((x - _per_channel(cur_mean, x.ndim)) ** 2).mean(axes)
        momentum = n.attr("momentum", 0.9)
        y = (x - _per_channel(cur_mean, x.ndim)) * (
            _per_channel(cur_var, x.ndim) + eps).rsqrt() * _per_channel(scale, x.ndim) + \
            _per_channel(bias, x.ndim)
        return (y, mean * momentum + cur_mean * (1 - momentum),
                var * momentum + cur_var * (1 - momentum))
    inv = (var + eps).rsqrt() * scale
    return ((x - _per_channel(mean, x.ndim)) * _per_channel(inv, x.ndim) +
            _per_channel(bias, x.ndim)).cast(x.dtype)


@op("InstanceNormalization")
def instance_norm(n: Call, x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axes, keepdim=True)
    var = ((x - mean) ** 2).mean(axes, keepdim=True)
    y = (x - mean) * (var + n.attr("epsilon", 1e-5)).rsqrt()
    return y * _per_channel(scale, x.ndim) + _per_channel(bias, x.ndim)


@op("LayerNormalization")
def layer_norm(n: Call, x: Tensor, scale: Tensor, bias: Tensor | None = None
               ) -> tuple[Tensor, Tensor, Tensor]:
    axis = _axis(n.attr("axis", -1), x.ndim)
    axes = tuple(range(axis, x.ndim))
    xf = x.cast(dtypes.float32) if x.dtype != dtypes.float64 else x
    mean = xf.mean(axes, keepdim=True)
    var = ((xf - mean) ** 2).mean(axes, keepdim=True)
    inv = (var + n.attr("epsilon", 1e-5)).rsqrt()
    y = ((xf - mean) * inv).cast(x.dtype) * scale
    if bias is not None:
        y = y + bias
    return y.cast(x.dtype), mean, inv


@op("GroupNormalization")
def group_norm(n: Call, x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    g = n.attr("num_groups")
    b, c = x.shape[:2]
    xs = x.reshape(b, g, -1)
    mean = xs.mean(-1, keepdim=True)
    var = ((xs - mean) ** 2).mean(-1, keepdim=True)
    y = ((xs - mean) * (var + n.attr("epsilon", 1e-5)).rsqrt()).reshape(x.shape)
    if n.opset < 21 and scale.shape[0] == g and g != c:  # opset 18: one scale per group
        scale = scale.reshape(g, 1).expand(g, c // g).reshape(c)
        bias = bias.reshape(g, 1).expand(g, c // g).reshape(c)
    return y * _per_channel(scale, x.ndim) + _per_channel(bias, x.ndim)


@op("RMSNormalization")
def rms_norm(n: Call, x: Tensor, scale: Tensor) -> Tensor:
    axis = _axis(n.attr("axis", -1), x.ndim)
    axes = tuple(range(axis, x.ndim))
    xf = x.cast(dtypes.float32) if x.dtype != dtypes.float64 else x
    inv = ((xf * xf).mean(axes, keepdim=True) + n.attr("epsilon", 1e-5)).rsqrt()
    return ((xf * inv).cast(x.dtype) * scale).cast(x.dtype)


@op("MeanVarianceNormalization")
def mean_variance_norm(n: Call, x: Tensor) -> Tensor:
    axes = tuple(n.attr("axes", [0, 2, 3]))
    mean = x.mean(axes, keepdim=True)
    std = ((x * x).mean(axes, keepdim=True) - mean * mean).sqrt()
    return (x - mean) / (std + 1e-9)


@op("LpNormalization")
def lp_norm(n: Call, x: Tensor) -> Tensor:
    axis = n.attr("axis", -1)
    if n.attr("p", 2) == 1:
        norm = x.abs().sum(axis, keepdim=True)
    else:
        norm = (x * x).sum(axis, keepdim=True).sqrt()
    return (norm == 0).where(0, x / norm).cast(x.dtype)


@op("LRN")
def lrn(n: Call, x: Tensor) -> Tensor:
    size = n.attr("size")
    alpha, beta, bias = n.attr("alpha", 1e-4), n.attr("beta", 0.75), n.attr("bias", 1.0)
    c = x.shape[1]
    before, after = (size - 1) // 2, math.ceil((size - 1) / 2)
    sq = (x * x).pad([None, (before, after)] + [None] * (x.ndim - 2))
    total = sq.shrink(tuple((0, c) if i == 1 else None for i in range(x.ndim)))
    for j in range(1, size):
        total = total + sq.shrink(tuple((j, j + c) if i == 1 else None for i in range(x.ndim)))
    return x / (total * (alpha / size) + bias) ** beta


# --- softmax ---
def _softmax_like(fn_name: str):
    def run(n: Call, x: Tensor) -> Tensor:
        if n.opset < 13:
            axis = _axis(n.attr("axis", 1), x.ndim)
            flat = x.reshape(math.prod(x.shape[:axis]), -1)
            return _apply(fn_name, flat, -1).reshape(x.shape)
        return _apply(fn_name, x, _axis(n.attr("axis", -1), x.ndim))
    return run


def _apply(fn_name: str, x: Tensor, axis: int) -> Tensor:
    if fn_name == "hardmax":
        first = x.argmax(axis, keepdim=True)
        return (first == Tensor.arange(x.shape[axis], device=x.device).reshape(
            *[x.shape[axis] if i == axis else 1 for i in range(x.ndim)])).cast(x.dtype)
    return getattr(x, fn_name)(axis)


op("Softmax")(_softmax_like("softmax"))
op("LogSoftmax")(_softmax_like("log_softmax"))
op("Hardmax")(_softmax_like("hardmax"))


# --- resizing ---
def _resize_check(info: NodeInfo) -> str | None:
    mode = info.attrs.get("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic", "bilinear", "trilinear"):
        return f"Resize mode {mode!r} is not supported"
    if info.attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        return "Resize's coordinate_transformation_mode tf_crop_and_resize is not supported"
    if info.attrs.get("antialias", 0):
        return "Resize's antialias is not supported"
    if info.attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        return "Resize's keep_aspect_ratio_policy other than 'stretch' is not supported"
    return None


def _source_coords(mode: str, out: int, size: int, scale: float, by_scale: bool
                   ) -> np.ndarray:
    """Where each output position of one axis reads the input (ONNX's coordinate transform):
    a shape computation, folded to constants."""
    x = np.arange(out, dtype=np.float64)
    if mode == "align_corners":
        length = size * scale if by_scale else out  # ONNX's reference: the unrounded length
        return x * (size - 1) / (length - 1) if length > 1 else np.zeros(out)
    if mode == "asymmetric":
        return x / scale
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out > 1 else np.zeros(out)
    if mode == "half_pixel_symmetric":
        adj = out / (scale * size)
        return size / 2 * (1 - adj) + (x + 0.5) / scale - 0.5
    return (x + 0.5) / scale - 0.5  # half_pixel


def _nearest(coords: np.ndarray, mode: str, size: int) -> np.ndarray:
    if mode == "floor":
        idx = np.floor(coords)
    elif mode == "ceil":
        idx = np.ceil(coords)
    elif mode == "round_prefer_ceil":
        idx = np.floor(coords + 0.5)
    else:  # round_prefer_floor
        idx = np.ceil(coords - 0.5)
    return np.clip(idx, 0, size - 1).astype(np.int64)


def _weights(kind: str, coords: np.ndarray, size: int, a: float, exclude: bool,
             antialias: bool, scale: float) -> np.ndarray:
    """The (out, in) matrix of interpolation weights of one axis (linear or cubic)."""
    src = np.arange(size)[None, :]
    shrink = antialias and scale < 1
    dist = (coords[:, None] - src) * (scale if shrink else 1)
    t = np.abs(dist)
    if kind == "linear":
        w = np.maximum(1 - t, 0)
    else:
        w = np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                     np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0))
    if not shrink and not exclude:
        # taps past the edges read the edge value (clamped), as ONNX's reference
        lo = np.floor(coords).astype(int)
        taps = range(-1, 3) if kind == "cubic" else range(0, 2)
        w = np.zeros((len(coords), size))
        for off in taps:
            at = lo + off
            dd = np.abs(coords - at)
            if kind == "linear":
                ww = np.maximum(1 - dd, 0)
            else:
                ww = np.where(dd <= 1, ((a + 2) * dd - (a + 3)) * dd * dd + 1,
                              np.where(dd < 2, ((a * dd - 5 * a) * dd + 8 * a) * dd - 4 * a, 0))
            np.add.at(w, (np.arange(len(coords)), np.clip(at, 0, size - 1)), ww)
        return w
    if exclude or shrink:
        w = w / np.maximum(w.sum(1, keepdims=True), 1e-12)
    return w


@op("Resize", "Upsample", check=_resize_check)
def resize(n: Call, x: Tensor, *rest: Tensor | None) -> Tensor:
    if n.op == "Upsample" or n.opset < 11:
        scales_t, sizes_t = (rest[0] if rest else None), None
        scales = list(n.attr("scales")) if scales_t is None else n.floats(scales_t)
    else:
        scales_t = rest[1] if len(rest) > 1 else None
        sizes_t = rest[2] if len(rest) > 2 else None
        scales = n.floats(scales_t) if scales_t is not None and scales_t.numel() else []
    axes = [_axis(a, x.ndim) for a in n.attr("axes", range(x.ndim))]
    by_scale = not (sizes_t is not None and sizes_t.numel())
    if not by_scale:
        assert sizes_t is not None
        sizes = n.ints(sizes_t)
        scales = [o / x.shape[a] for o, a in zip(sizes, axes)]
    else:
        sizes = [math.floor(x.shape[a] * s) for a, s in zip(axes, scales)]
    mode = n.attr("mode", "nearest")
    ctm = n.attr("coordinate_transformation_mode", "half_pixel" if n.opset >= 11 and
                 n.op == "Resize" else "asymmetric")
    kind = "linear" if mode in ("linear", "bilinear", "trilinear") else mode
    out = x
    for a, size, scale in zip(axes, sizes, scales):
        if size == x.shape[a] and scale == 1:
            continue
        coords = _source_coords(ctm, size, x.shape[a], scale, by_scale)
        if kind == "nearest":
            old = n.op == "Upsample" or n.opset < 11  # these round down
            idx = _nearest(coords, n.attr("nearest_mode", "floor" if old else
                                          "round_prefer_floor"), x.shape[a])
            out = out[(slice(None),) * a + (Tensor(idx, device=x.device),)]
            continue
        w = _weights(kind, coords, x.shape[a], n.attr("cubic_coeff_a", -0.75),
                     bool(n.attr("exclude_outside", 0)), bool(n.attr("antialias", 0)), scale)
        wt = Tensor(w.astype(np.float32 if x.dtype != dtypes.float64 else np.float64),
                    device=x.device)
        moved = out.transpose(a, -1) if a != out.ndim - 1 else out
        res = moved.cast(wt.dtype).matmul(wt.transpose(0, 1))
        out = res.transpose(a, -1) if a != out.ndim - 1 else res
    if x.dtype.is_int and kind != "nearest":
        return out.round().clip(dtypes.min(x.dtype), dtypes.max(x.dtype)).cast(x.dtype)
    return out.cast(x.dtype)


# --- recurrent layers ---
def _rnn_check(info: NodeInfo) -> str | None:
    if info.attrs.get("layout", 0) not in (0, 1):
        return "unknown layout"
    if info.op == "LSTM" and info.attrs.get("input_forget", 0):
        return "LSTM's input_forget is not supported"
    if info.attrs.get("clip") is not None:
        return None
    return None


_ACT = {"Sigmoid": Tensor.sigmoid, "Tanh": Tensor.tanh, "Relu": Tensor.relu}


def _activations(n: Call, default: list[str], directions: int) -> list:
    names = n.attr("activations", None) or default * directions
    for name in names:
        if name not in _ACT:
            raise NotImplementedError(f"activation {name} is not supported")
    return [_ACT[name] for name in names]


def _rnn_inputs(n: Call, x: Tensor, init: list[Tensor | None]) -> tuple[Tensor, list]:
    layout = n.attr("layout", 0)
    if layout:
        x = x.transpose(0, 1)
        init = [None if t is None else t.transpose(0, 1) for t in init]
    return x, init


@op("LSTM", check=_rnn_check)
def lstm(n: Call, x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
         seq_lens: Tensor | None = None, h0: Tensor | None = None, c0: Tensor | None = None,
         p: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    if seq_lens is not None:
        lens = set(n.ints(seq_lens))
        if lens != {x.shape[1 - n.attr("layout", 0)] * 0 + (x.shape[0] if not
                                                             n.attr("layout", 0) else
                                                             x.shape[1])}:
            raise NotImplementedError("LSTM with sequence lengths shorter than the input")
    x, (h0, c0) = _rnn_inputs(n, x, [h0, c0])
    dirs = 2 if n.attr("direction", "forward") == "bidirectional" else 1
    hidden = n.attr("hidden_size")
    acts = _activations(n, ["Sigmoid", "Tanh", "Tanh"], dirs)
    clip_v = n.attr("clip", None)
    seq, batch = x.shape[0], x.shape[1]
    ys, hs, cs = [], [], []
    for d in range(dirs):
        reverse = n.attr("direction", "forward") == "reverse" or d == 1
        wd, rd = w[d], r[d]
        bias = b[d][:4 * hidden] + b[d][4 * hidden:] if b is not None else None
        h = h0[d] if h0 is not None else Tensor.zeros(batch, hidden, dtype=x.dtype,
                                                      device=x.device)
        c = c0[d] if c0 is not None else Tensor.zeros(batch, hidden, dtype=x.dtype,
                                                      device=x.device)
        f, g, hh = acts[3 * d:3 * d + 3]
        outs: list[Tensor] = []
        xw = x.matmul(wd.transpose(0, 1))  # (seq, batch, 4h)
        if bias is not None:
            xw = xw + bias
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            gates = xw[t] + h.matmul(rd.transpose(0, 1))
            if clip_v is not None:
                gates = gates.clip(-clip_v, clip_v)
            i_, o_, f_, c_ = gates.chunk(4, -1)
            if p is not None:
                pi, po, pf = p[d][:hidden], p[d][hidden:2 * hidden], p[d][2 * hidden:]
                i_, f_ = i_ + pi * c, f_ + pf * c
            i_, f_, c_ = f(i_), f(f_), g(c_)
            c = f_ * c + i_ * c_
            if p is not None:
                o_ = o_ + po * c
            h = f(o_) * hh(c)
            outs.append(h)
        if reverse:
            outs = outs[::-1]
        ys.append(Tensor.stack(*outs) if outs else Tensor.zeros(0, batch, hidden))
        hs.append(h)
        cs.append(c)
    y = Tensor.stack(*ys, dim=1)  # (seq, dirs, batch, hidden)
    yh, yc = Tensor.stack(*hs), Tensor.stack(*cs)
    if n.attr("layout", 0):
        return y.permute(2, 0, 1, 3), yh.transpose(0, 1), yc.transpose(0, 1)
    return y, yh, yc


@op("GRU", check=_rnn_check)
def gru(n: Call, x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
        seq_lens: Tensor | None = None, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
    x, (h0,) = _rnn_inputs(n, x, [h0])
    dirs = 2 if n.attr("direction", "forward") == "bidirectional" else 1
    hidden = n.attr("hidden_size")
    acts = _activations(n, ["Sigmoid", "Tanh"], dirs)
    linear_before = n.attr("linear_before_reset", 0)
    seq, batch = x.shape[0], x.shape[1]
    ys, hs = [], []
    for d in range(dirs):
        reverse = n.attr("direction", "forward") == "reverse" or d == 1
        wd, rd = w[d], r[d]
        wb = b[d][:3 * hidden] if b is not None else None
        rb = b[d][3 * hidden:] if b is not None else None
        h = h0[d] if h0 is not None else Tensor.zeros(batch, hidden, dtype=x.dtype,
                                                      device=x.device)
        f, g = acts[2 * d:2 * d + 2]
        rz, rr, rh = rd[:hidden], rd[hidden:2 * hidden], rd[2 * hidden:]
        outs = []
        xw = x.matmul(wd.transpose(0, 1))
        if wb is not None:
            xw = xw + wb
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            xz, xr, xh = xw[t].chunk(3, -1)
            hz, hr = h.matmul(rz.transpose(0, 1)), h.matmul(rr.transpose(0, 1))
            if rb is not None:
                hz, hr = hz + rb[:hidden], hr + rb[hidden:2 * hidden]
            z, rgate = f(xz + hz), f(xr + hr)
            if linear_before:
                hh = h.matmul(rh.transpose(0, 1))
                if rb is not None:
                    hh = hh + rb[2 * hidden:]
                cand = g(xh + rgate * hh)
            else:
                hh = (rgate * h).matmul(rh.transpose(0, 1))
                if rb is not None:
                    hh = hh + rb[2 * hidden:]
                cand = g(xh + hh)
            h = (1 - z) * cand + z * h
            outs.append(h)
        if reverse:
            outs = outs[::-1]
        ys.append(Tensor.stack(*outs))
        hs.append(h)
    y, yh = Tensor.stack(*ys, dim=1), Tensor.stack(*hs)
    if n.attr("layout", 0):
        return y.permute(2, 0, 1, 3), yh.transpose(0, 1)
    return y, yh


@op("RNN", check=_rnn_check)
def rnn(n: Call, x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
        seq_lens: Tensor | None = None, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
    x, (h0,) = _rnn_inputs(n, x, [h0])
    dirs = 2 if n.attr("direction", "forward") == "bidirectional" else 1
    hidden = n.attr("hidden_size")
    acts = _activations(n, ["Tanh"], dirs)
    seq, batch = x.shape[0], x.shape[1]
    ys, hs = [], []
    for d in range(dirs):
        reverse = n.attr("direction", "forward") == "reverse" or d == 1
        h = h0[d] if h0 is not None else Tensor.zeros(batch, hidden, dtype=x.dtype,
                                                      device=x.device)
        xw = x.matmul(w[d].transpose(0, 1))
        if b is not None:
            xw = xw + b[d][:hidden] + b[d][hidden:]
        outs = []
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            h = acts[d](xw[t] + h.matmul(r[d].transpose(0, 1)))
            outs.append(h)
        if reverse:
            outs = outs[::-1]
        ys.append(Tensor.stack(*outs))
        hs.append(h)
    y, yh = Tensor.stack(*ys, dim=1), Tensor.stack(*hs)
    if n.attr("layout", 0):
        return y.permute(2, 0, 1, 3), yh.transpose(0, 1)
    return y, yh


# --- control flow ---
@op("If", fold=False)
def if_(n: Call, cond: Tensor) -> list[Tensor | None]:
    """The branch the condition picks (read now: a model's If decides its graph)."""
    branch = n.info.graphs["then_branch" if bool(n.values(cond).reshape(-1)[0]) else
                           "else_branch"]
    assert n.run_graph is not None
    return n.run_graph(branch, [])


# --- quantization ---
def _blocked_check(info: NodeInfo) -> str | None:
    return "blocked (de)quantization (block_size) is not supported" \
        if info.attrs.get("block_size", 0) else None


@op("DequantizeLinear", check=_blocked_check)
def dequantize_linear(n: Call, x: Tensor, scale: Tensor, zero: Tensor | None = None
                      ) -> Tensor:
    axis = _axis(n.attr("axis", 1), x.ndim)
    if scale.ndim == 1 and scale.shape[0] > 1:
        shape = [scale.shape[0] if i == axis else 1 for i in range(x.ndim)]
        scale = scale.reshape(*shape)
        zero = zero.reshape(*shape) if zero is not None else None
    if x.dtype.is_float:  # a float8 value, carried in float32 (lowbit.py)
        xf = x if zero is None else x - zero.cast(x.dtype)
        return xf.cast(scale.dtype) * scale
    xi = x.cast(dtypes.int32)
    if zero is not None:
        xi = xi - zero.cast(dtypes.int32)
    return xi.cast(scale.dtype) * scale


@op("QuantizeLinear", check=_blocked_check)
def quantize_linear(n: Call, x: Tensor, scale: Tensor, zero: Tensor | None = None) -> Tensor:
    axis = _axis(n.attr("axis", 1), x.ndim)
    out_dtype = zero.dtype if zero is not None else dtypes.uint8
    narrow = n.attr("output_dtype", 0) or (n.carried[2] if len(n.carried) > 2 else None)
    if narrow and narrow not in lowbit.CARRIED:
        out_dtype, narrow = dtype_of(narrow, "QuantizeLinear"), None
    if scale.ndim == 1 and scale.shape[0] > 1:
        shape = [scale.shape[0] if i == axis else 1 for i in range(x.ndim)]
        scale = scale.reshape(*shape)
        zero = zero.reshape(*shape) if zero is not None else None
    if narrow in lowbit.FLOATS:  # float8: x / scale rounded to it (no integer rounding)
        y = x / scale.cast(x.dtype)
        y = y if zero is None else y + zero.cast(y.dtype)
        return lowbit.to_float(y, narrow, bool(n.attr("saturate", 1)))
    y = (x / scale.cast(x.dtype)).round()
    if zero is not None:
        y = y + zero.cast(y.dtype)
    if narrow:  # int4, uint4, int2, uint2: clipped to its range, in its carrier
        low, high = lowbit.limits(narrow)
        return y.clip(low, high).cast(lowbit.CARRIED[narrow])
    return y.clip(dtypes.min(out_dtype), dtypes.max(out_dtype)).cast(out_dtype)
