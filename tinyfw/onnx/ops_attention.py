"""ONNX's Attention (opset 23+), RotaryEmbedding, and the loss operators, as Tensor ops."""
from __future__ import annotations

import math

from tinyfw.dtype import dtypes
from tinyfw.onnx.types import dtype_of
from tinyfw.onnx.registry import Call, op
from tinyfw.tensor import Tensor


def _heads(x: Tensor, heads: int) -> Tensor:
    """(batch, seq, heads * size) -> (batch, heads, seq, size)."""
    b, s, h = x.shape
    return x.reshape(b, s, heads, h // heads).transpose(1, 2)


def _neg_inf_where(allowed: Tensor, like: Tensor) -> Tensor:
    return allowed.where(0.0, -math.inf).cast(like.dtype)


@op("Attention")
def attention(n: Call, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
              past_k: Tensor | None = None, past_v: Tensor | None = None,
              nonpad: Tensor | None = None) -> tuple[Tensor | None, ...]:
    three_d, out_dtype = q.ndim == 3, q.dtype
    if three_d:
        q = _heads(q, n.attr("q_num_heads"))
        k = _heads(k, n.attr("kv_num_heads"))
        v = _heads(v, n.attr("kv_num_heads"))
    scale = n.attr("scale", None)
    scale = math.sqrt(1 / math.sqrt(q.shape[3]) if scale is None else scale)
    if past_k is not None and past_v is not None:
        k, v = Tensor.cat(past_k, k, dim=2), Tensor.cat(past_v, v, dim=2)
    present_k, present_v = k, v
    qs, ks = q.shape[2], k.shape[2]
    bias = Tensor.zeros(qs, ks, dtype=q.dtype, device=q.device)
    left, right = n.attr("left_window_size", -1), n.attr("right_window_size", -1)
    if mask is not None and mask.shape[-1] < ks:
        pad = [None] * (mask.ndim - 1) + [(0, ks - mask.shape[-1])]
        mask = mask.pad(pad, value=False) if mask.dtype == dtypes.bool else \
            mask.pad(pad, value=-math.inf)
    if mask is not None:
        bias = bias + (_neg_inf_where(mask, q) if mask.dtype == dtypes.bool else
                       mask.cast(q.dtype))
    i = Tensor.arange(qs, device=q.device).reshape(qs, 1)
    j = Tensor.arange(ks, device=q.device).reshape(1, ks)
    if nonpad is not None and past_k is None:
        offset: Tensor | int = (nonpad.cast(dtypes.int32) - qs).reshape(-1, 1, 1, 1)
    else:
        offset = past_k.shape[2] if past_k is not None else 0
    if n.attr("is_causal", 0):
        bias = bias + _neg_inf_where(j <= i + offset, q)
    if left >= 0 or right >= 0:
        diff = (i + offset) - j
        allowed = diff == diff  # all True, of diff's shape
        if left >= 0:
            allowed = allowed & (diff <= left)
        if right >= 0:
            allowed = allowed & (-diff <= right)
        bias = bias + _neg_inf_where(allowed, q)
    if nonpad is not None:
        keep = Tensor.arange(ks, device=q.device).reshape(1, ks) < \
            nonpad.cast(dtypes.int32).reshape(-1, 1)
        bias = bias + _neg_inf_where(keep.reshape(q.shape[0], 1, 1, ks), q)
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk and hq % hk == 0:
        k = k.repeat_interleave(hq // hk, dim=1)
        v = v.repeat_interleave(hq // hk, dim=1)
    qk = (q * scale).matmul((k * scale).transpose(2, 3))
    softcap = n.attr("softcap", 0.0)
    if softcap and softcap > 0:
        qk = (qk / softcap).tanh() * softcap
    with_bias = qk + bias
    mode = n.attr("qk_matmul_output_mode", 0)
    qk_out = with_bias if mode == 2 else qk
    precision = n.attr("softmax_precision", None)
    work = with_bias
    if precision is not None:
        work = work.cast(dtype_of(precision, "Attention softmax_precision"))
    top = work.max(-1, keepdim=True)
    masked_row = top.isinf() & (top < 0)
    e = (work - masked_row.where(0.0, top).cast(work.dtype)).exp()
    total = e.sum(-1, keepdim=True)
    probs = e / (total == 0).where(1.0, total).cast(work.dtype)
    row_masked = bias.max(-1, keepdim=True)
    row_masked = row_masked.isinf() & (row_masked < 0)
    probs = row_masked.where(0.0, probs).cast(q.dtype)
    if mode == 3:
        qk_out = probs
    out = probs.matmul(v)
    if three_d:
        out = out.transpose(1, 2)
        out = out.reshape(out.shape[0], out.shape[1], -1)
    return (out.cast(out_dtype), present_k.cast(out_dtype), present_v.cast(out_dtype),
            qk_out.cast(out_dtype))


@op("RotaryEmbedding")
def rotary_embedding(n: Call, x: Tensor, cos: Tensor, sin: Tensor,
                     pos: Tensor | None = None) -> Tensor:
    four_d = x.ndim == 4
    if four_d:  # (batch, heads, seq, size) -> (batch, seq, heads, size)
        x = x.transpose(1, 2)
    else:
        heads = n.attr("num_heads")
        b, s, h = x.shape
        x = x.reshape(b, s, heads, h // heads)
    if pos is not None:
        cos, sin = cos[pos], sin[pos]  # (batch, seq, rot / 2)
    rot = n.attr("rotary_embedding_dim", 0) or x.shape[-1]
    xr, rest = x[..., :rot], x[..., rot:]
    cos, sin = cos[..., :rot // 2].unsqueeze(2), sin[..., :rot // 2].unsqueeze(2)
    if n.attr("interleaved", 0):
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        r1, r2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        out = Tensor.stack(r1, r2, dim=-1).reshape(*xr.shape)
    else:
        x1, x2 = xr[..., :rot // 2], xr[..., rot // 2:]
        out = Tensor.cat(x1 * cos - x2 * sin, x2 * cos + x1 * sin, dim=-1)
    out = Tensor.cat(out, rest, dim=-1) if rest.shape[-1] else out
    if four_d:
        return out.transpose(1, 2)
    return out.reshape(out.shape[0], out.shape[1], -1)


def _nll(n: Call, logp: Tensor, target: Tensor, weight: Tensor | None
         ) -> tuple[Tensor, Tensor]:
    """The loss per element and its weight (0 where target is ignore_index)."""
    c = logp.shape[1]
    ignore = n.attr("ignore_index", None)
    t = target.cast(dtypes.int64)
    valid = (t != ignore) if ignore is not None else None
    safe = valid.where(t, 0) if valid is not None else t
    picked = logp.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = weight[safe] if weight is not None else Tensor.ones(*t.shape, dtype=logp.dtype,
                                                            device=logp.device)
    if valid is not None:
        w = valid.where(w, 0.0).cast(logp.dtype)
    _ = c
    return -picked * w, w


def _reduce_loss(n: Call, loss: Tensor, w: Tensor, weighted: bool) -> Tensor:
    red = n.attr("reduction", "mean")
    if red == "none":
        return loss
    if red == "sum":
        return loss.sum()
    return loss.sum() / w.sum() if weighted else loss.mean()


@op("NegativeLogLikelihoodLoss")
def nll_loss(n: Call, x: Tensor, target: Tensor, weight: Tensor | None = None) -> Tensor:
    loss, w = _nll(n, x, target, weight)
    weighted = weight is not None or n.attr("ignore_index", None) is not None
    return _reduce_loss(n, loss, w, weighted).cast(x.dtype)


@op("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy(n: Call, x: Tensor, target: Tensor, weight: Tensor | None = None
                          ) -> tuple[Tensor, Tensor]:
    logp = x.log_softmax(1)
    loss, w = _nll(n, logp, target, weight)
    weighted = weight is not None or n.attr("ignore_index", None) is not None
    return _reduce_loss(n, loss, w, weighted).cast(x.dtype), logp
