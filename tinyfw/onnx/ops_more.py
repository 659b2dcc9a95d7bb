"""More of ONNX's operators as Tensor ops: products with state (CausalConvWithState,
LinearAttention, TensorScatter), integer and quantized products, and shape helpers."""
from __future__ import annotations

import math

from tinyfw.dtype import dtypes
from tinyfw.onnx.types import dtype_of
from tinyfw.onnx.registry import Call, NodeInfo, op
from tinyfw.tensor import Tensor


def _axis(a: int, ndim: int) -> int:
    return a + ndim if a < 0 else a


def _wide(x: Tensor) -> Tensor:
    return x.cast(dtypes.float32) if x.dtype in (dtypes.float16, dtypes.bfloat16) else x


@op("CumProd")
def cumprod(n: Call, x: Tensor, axis_t: Tensor) -> Tensor:
    axis = _axis(n.ints(axis_t)[0], x.ndim)
    if n.attr("reverse", 0):
        x = x.flip(axis)
    if n.attr("exclusive", 0):  # shifted by one: a 1 first
        x = x.pad([None if i != axis else (1, -1) for i in range(x.ndim)], value=1)
    out = x.cumprod(axis).cast(x.dtype)
    return out.flip(axis) if n.attr("reverse", 0) else out


def _bitcast_check(info: NodeInfo) -> str | None:
    try:
        dtype_of(info.attrs.get("to", 0), "BitCast")
    except NotImplementedError as e:
        return str(e)
    return None


@op("BitCast", check=_bitcast_check)
def bitcast(n: Call, x: Tensor) -> Tensor:
    return x.bitcast(dtype_of(n.attr("to"), "BitCast"))


@op("SwiGLU")
def swiglu(n: Call, a: Tensor, b: Tensor) -> Tensor:
    alpha = n.attr("alpha", 1.0)
    return (a * (a * alpha).sigmoid() * b).cast(a.dtype)


@op("CausalConvWithState")
def causal_conv_with_state(n: Call, x: Tensor, w: Tensor, b: Tensor | None = None,
                           past: Tensor | None = None) -> tuple[Tensor, Tensor]:
    k = w.shape[2]
    if past is None:
        past = Tensor.zeros(x.shape[0], x.shape[1], k - 1, dtype=x.dtype, device=x.device)
    padded = Tensor.cat(past, x, dim=2) if k > 1 else x
    out = padded.conv2d(w, b, groups=x.shape[1]).cast(x.dtype)
    if n.attr("activation", "none") in ("silu", "swish"):
        wide = _wide(out)
        out = (wide * wide.sigmoid()).cast(x.dtype)
    length = padded.shape[2]
    return out, padded.shrink((None, None, (length - (k - 1), length)))


def _heads(x: Tensor, heads: int) -> Tensor:
    b, t, hd = x.shape
    return x.reshape(b, t, heads, hd // heads).transpose(1, 2)


@op("LinearAttention")
def linear_attention(n: Call, q: Tensor, k: Tensor, v: Tensor, past: Tensor | None = None,
                     decay: Tensor | None = None, beta: Tensor | None = None
                     ) -> tuple[Tensor, Tensor]:
    rule = n.attr("update_rule", "gated_delta")
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    hq, hk = n.attr("q_num_heads"), n.attr("kv_num_heads")
    b, t, _ = q.shape
    dk, dv = q.shape[-1] // hq, v.shape[-1] // hk
    f32 = dtypes.float32
    q4, k4, v4 = (_heads(q, hq).cast(f32), _heads(k, hk).cast(f32), _heads(v, hk).cast(f32))
    decay4 = None
    if gating and decay is not None:
        decay4 = (decay.reshape(b, t, hk, 1).transpose(1, 2) if decay.shape[-1] == hk else
                  _heads(decay, hk)).cast(f32)
    beta4 = beta.reshape(b, t, beta.shape[-1], 1).transpose(1, 2).cast(f32) \
        if delta and beta is not None else None
    state_dtype = past.dtype if past is not None else q.dtype
    state = past.cast(f32) if past is not None else Tensor.zeros(b, hk, dk, dv, dtype=f32,
                                                                  device=q.device)
    scale = n.attr("scale", 0.0) or 1 / math.sqrt(dk)
    group = hq // hk
    outs = []
    for i in range(t):
        q_t, k_t, v_t = q4[:, :, i, :], k4[:, :, i, :], v4[:, :, i, :]
        if decay4 is not None:
            state = state * decay4[:, :, i, :].exp().unsqueeze(-1)
        if beta4 is not None:
            retrieved = (state * k_t.unsqueeze(-1)).sum(2)
            v_t = beta4[:, :, i, :] * (v_t - retrieved)
        state = state + k_t.unsqueeze(-1) * v_t.unsqueeze(-2)
        read = state.repeat_interleave(group, dim=1) if group > 1 else state
        outs.append((q_t.unsqueeze(-1) * read).sum(2) * scale)
    out = Tensor.stack(*outs, dim=2)  # (b, hq, t, dv)
    out = out.transpose(1, 2).reshape(b, t, hq * dv).cast(q.dtype)
    return out, state.cast(state_dtype)


@op("TensorScatter")
def tensor_scatter(n: Call, cache: Tensor, update: Tensor, where: Tensor | None = None
                   ) -> Tensor:
    axis = _axis(n.attr("axis", -2), cache.ndim)
    size, length = cache.shape[axis], update.shape[axis]
    start = where.cast(dtypes.int64) if where is not None else \
        Tensor.zeros(cache.shape[0], dtype=dtypes.int64, device=cache.device)
    # the cache position each update row goes to, per batch: start + j (mod size)
    pos = start.reshape(-1, 1) + Tensor.arange(length, device=cache.device).cast(dtypes.int64)
    if n.attr("mode", "linear") == "circular":
        pos = pos % size
    shape = [cache.shape[0]] + [1] * (axis - 1) + [length] + [1] * (cache.ndim - axis - 1)
    index = pos.reshape(*shape).expand(*update.shape)
    return cache.scatter(axis, index, update)


@op("CenterCropPad")
def center_crop_pad(n: Call, x: Tensor, shape_t: Tensor) -> Tensor:
    want = n.ints(shape_t)
    axes = [_axis(a, x.ndim) for a in n.attr("axes", range(x.ndim))]
    pairs: list[tuple[int, int] | None] = [None] * x.ndim
    for a, s in zip(axes, want):
        d = s - x.shape[a]  # > 0 pads, < 0 crops; the odd one goes at the end
        half = abs(d) // 2
        pairs[a] = (half, abs(d) - half) if d > 0 else (-half, -(abs(d) - half))
    return x.pad([p or (0, 0) for p in pairs])


@op("ReverseSequence")
def reverse_sequence(n: Call, x: Tensor, lens: Tensor) -> Tensor:
    batch_axis, time_axis = n.attr("batch_axis", 1), n.attr("time_axis", 0)
    steps = x.shape[time_axis]
    t = Tensor.arange(steps, device=x.device).cast(dtypes.int64)
    ln = lens.cast(dtypes.int64)
    # source time of (time j, batch b): len_b - 1 - j where j < len_b, else j
    tj = t.reshape(steps, 1) if time_axis < batch_axis else t.reshape(1, steps)
    lb = ln.reshape(1, -1) if time_axis < batch_axis else ln.reshape(-1, 1)
    src = (tj < lb).where(lb - 1 - tj, tj)
    shape = [1] * x.ndim
    shape[time_axis], shape[batch_axis] = x.shape[time_axis], x.shape[batch_axis]
    return x.gather(time_axis, src.reshape(*shape).expand(*x.shape))


@op("MaxUnpool")
def max_unpool(n: Call, x: Tensor, idx: Tensor, out_shape: Tensor | None = None) -> Tensor:
    kernel = list(n.attr("kernel_shape"))
    k = len(kernel)
    strides = list(n.attr("strides", [1] * k))
    pads = list(n.attr("pads", [0] * 2 * k))
    # indices name places in the unpooled size; output_shape, if larger, pads at the end
    sizes = [(i - 1) * s - pads[j] - pads[j + k] + kk for j, (i, s, kk) in
             enumerate(zip(x.shape[2:], strides, kernel))]
    total = x.shape[0] * x.shape[1] * math.prod(sizes)
    flat = Tensor.zeros(total, dtype=x.dtype, device=x.device)
    out = flat.scatter(0, idx.reshape(-1).cast(dtypes.int64), x.reshape(-1)).reshape(
        x.shape[0], x.shape[1], *sizes)
    if out_shape is not None:
        want = n.ints(out_shape)[2:]
        out = out.pad([None, None] + [(0, w - s) for w, s in zip(want, sizes)])
    return out


@op("DynamicQuantizeLinear")
def dynamic_quantize_linear(n: Call, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    lo, hi = x.min().minimum(0), x.max().maximum(0)
    scale = (hi - lo) / 255
    zero = (-lo / scale).round().clip(0, 255)
    y = ((x / scale).round() + zero).clip(0, 255).cast(dtypes.uint8)
    return y, scale.cast(x.dtype), zero.cast(dtypes.uint8)


def _per_axis(t: Tensor, ndim: int, axis: int) -> Tensor:
    if t.ndim == 1 and t.shape[0] > 1:
        return t.reshape(*[t.shape[0] if i == axis else 1 for i in range(ndim)])
    return t


@op("QLinearMatMul")
def qlinear_matmul(n: Call, a: Tensor, a_scale: Tensor, a_zero: Tensor, b: Tensor,
                   b_scale: Tensor, b_zero: Tensor, y_scale: Tensor, y_zero: Tensor) -> Tensor:
    f = dtypes.float32
    af = (a.cast(dtypes.int32) - _per_axis(a_zero, a.ndim, -2).cast(dtypes.int32)).cast(f)
    bf = (b.cast(dtypes.int32) - b_zero.cast(dtypes.int32).reshape(
        *([1] * (b.ndim - 1)), -1) if b_zero.ndim == 1 and b_zero.shape[0] > 1 else
        b.cast(dtypes.int32) - b_zero.cast(dtypes.int32)).cast(f)
    bs = b_scale.reshape(*([1] * (b.ndim - 1)), -1) if b_scale.ndim == 1 and \
        b_scale.shape[0] > 1 else b_scale
    asc = _per_axis(a_scale, a.ndim, -2)
    y = (af * asc.cast(f)).matmul(bf * bs.cast(f)) / y_scale.cast(f)
    y = y.round() + y_zero.cast(f)
    return y.clip(dtypes.min(y_zero.dtype), dtypes.max(y_zero.dtype)).cast(y_zero.dtype)


@op("ConvInteger")
def conv_integer(n: Call, x: Tensor, w: Tensor, x_zero: Tensor | None = None,
                 w_zero: Tensor | None = None) -> Tensor:
    from tinyfw.onnx.ops_nn import conv
    xi = x.cast(dtypes.int32) - (x_zero.cast(dtypes.int32) if x_zero is not None else 0)
    wi = w.cast(dtypes.int32) - (_per_axis(w_zero, w.ndim, 0).cast(dtypes.int32)
                                 if w_zero is not None else 0)
    return conv(n, xi, wi).cast(dtypes.int32)


@op("QLinearConv")
def qlinear_conv(n: Call, x: Tensor, x_scale: Tensor, x_zero: Tensor, w: Tensor,
                 w_scale: Tensor, w_zero: Tensor, y_scale: Tensor, y_zero: Tensor,
                 bias: Tensor | None = None) -> Tensor:
    from tinyfw.onnx.ops_nn import conv
    f = dtypes.float32
    xf = (x.cast(dtypes.int32) - x_zero.cast(dtypes.int32)).cast(f) * x_scale.cast(f)
    wf = (w.cast(dtypes.int32) - _per_axis(w_zero, w.ndim, 0).cast(dtypes.int32)).cast(f) * \
        _per_axis(w_scale, w.ndim, 0).cast(f)
    bf = bias.cast(f) * (x_scale.cast(f) * w_scale.cast(f)) if bias is not None else None
    y = (conv(n, xf, wf, bf) / y_scale.cast(f)).round() + y_zero.cast(f)
    return y.clip(dtypes.min(y_zero.dtype), dtypes.max(y_zero.dtype)).cast(y_zero.dtype)


# --- control flow with a body graph, unrolled (the number of steps is a shape or a constant) ---
def _scan_check(info: NodeInfo) -> str | None:
    return "Scan before opset 9 (with a batch axis) is not supported" if info.opset < 9 else None


@op("Scan", check=_scan_check, fold=False)
def scan(n: Call, *inputs: Tensor) -> list[Tensor]:
    m = n.attr("num_scan_inputs")
    states, xs = list(inputs[:len(inputs) - m]), list(inputs[len(inputs) - m:])
    in_axes = [_axis(a, x.ndim) for a, x in zip(n.attr("scan_input_axes", [0] * m), xs)]
    in_dirs = n.attr("scan_input_directions", [0] * m)
    steps = xs[0].shape[in_axes[0]] if xs else 0
    body = n.info.graphs["body"]
    k = len(body.outputs) - len(states)
    collected: list[list[Tensor]] = [[] for _ in range(k)]
    assert n.run_graph is not None
    for i in range(steps):
        slices = [x[(slice(None),) * a + (steps - 1 - i if d else i,)]
                  for x, a, d in zip(xs, in_axes, in_dirs)]
        outs = n.run_graph(body, states + slices)
        states = [t for t in outs[:len(states)] if t is not None]
        for j, t in enumerate(outs[len(states):]):
            assert t is not None
            collected[j].append(t)
    out_axes = n.attr("scan_output_axes", [0] * k)
    out_dirs = n.attr("scan_output_directions", [0] * k)
    scanned = []
    for parts, a, d in zip(collected, out_axes, out_dirs):
        parts = parts[::-1] if d else parts
        stacked = Tensor.stack(*parts, dim=0)
        a = _axis(a, stacked.ndim)
        scanned.append(stacked.permute(*range(1, a + 1), 0, *range(a + 1, stacked.ndim))
                       if a else stacked)
    return states + scanned


# --- signal windows ---
def _window(terms: tuple[float, ...]):
    def run(n: Call, size_t: Tensor) -> Tensor:
        size = n.ints(size_t)[0]
        periodic = n.attr("periodic", 1)
        span = size if periodic else size - 1
        k = Tensor.arange(size, device=n.device).cast(dtypes.float32)
        out = Tensor.zeros(size, device=n.device) + terms[0]
        for j, a in enumerate(terms[1:], start=1):
            out = out + (k * (2 * math.pi * j / span)).cos() * a
        return out.cast(dtype_of(n.attr("output_datatype", 1), n.op))
    return run


op("HannWindow")(_window((0.5, -0.5)))
op("HammingWindow")(_window((25 / 46, -21 / 46)))
op("BlackmanWindow")(_window((0.42, -0.5, 0.08)))
