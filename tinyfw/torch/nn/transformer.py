"""torch.nn.MultiheadAttention, TransformerEncoderLayer and TransformerEncoder over tinyfw's
Tensor, with torch's parameters (in_proj_weight, in_proj_bias, out_proj, linear1, linear2,
norm1, norm2), initialization and mask conventions (a bool mask is True where attention is
not allowed, a float mask is added to the scores)."""
from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from tinyfw.tensor import Tensor
from tinyfw.torch.nn import functional as F
from tinyfw.torch.nn import init
from tinyfw.torch.nn.layers import Dropout, LayerNorm, Linear, ModuleList
from tinyfw.torch.nn.module import Module, Parameter


def _additive(mask: Tensor | None, dtype: Any) -> Tensor | None:
    """A mask as what is added to the scores: -inf where a bool mask is True."""
    if mask is None:
        return None
    if mask.dtype.is_bool:
        return mask.where(-math.inf, 0.0).cast(dtype)
    return mask.cast(dtype)


class MultiheadAttention(Module):
    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or \
                (vdim not in (None, embed_dim)):
            raise NotImplementedError("MultiheadAttention: tinyfw takes no add_bias_kv, "
                                      "add_zero_attn, or kdim/vdim other than embed_dim")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        self.in_proj_weight = Parameter(Tensor.empty(3 * embed_dim, embed_dim))
        init.xavier_uniform_(self.in_proj_weight)
        if bias:
            self.in_proj_bias = Parameter(Tensor.zeros(3 * embed_dim))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias)
        if self.out_proj.bias is not None:
            init.zeros_(self.out_proj.bias)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        batched = query.ndim == 3
        q, k, v = (t if batched else t.unsqueeze(1) for t in (query, key, value))
        if self.batch_first and batched:
            q, k, v = (t.transpose(0, 1) for t in (q, k, v))
        tgt, bsz, e = q.shape
        src = k.shape[0]
        w, b = self.in_proj_weight, self.in_proj_bias
        wq, wk, wv = w.chunk(3, dim=0)
        bq, bk, bv = b.chunk(3, dim=0) if b is not None else (None, None, None)
        h, hd = self.num_heads, self.head_dim

        def heads(x: Tensor, length: int) -> Tensor:  # (L, N, E) -> (N, H, L, hd)
            return x.reshape(length, bsz, h, hd).permute(1, 2, 0, 3)
        qh = heads(F.linear(q, wq, bq), tgt)
        kh = heads(F.linear(k, wk, bk), src)
        vh = heads(F.linear(v, wv, bv), src)
        scores = qh @ kh.transpose(-2, -1) * (1 / math.sqrt(hd))
        mask = _additive(attn_mask, scores.dtype)
        if is_causal and mask is None:
            mask = (Tensor.ones(tgt, src).triu(1) > 0).where(-math.inf, 0.0).cast(scores.dtype)
        if mask is not None:
            if mask.ndim == 3:  # (N * H, L, S)
                mask = mask.reshape(bsz, h, tgt, src)
            scores = scores + mask
        if key_padding_mask is not None:
            pad = _additive(key_padding_mask if batched else key_padding_mask.unsqueeze(0),
                            scores.dtype)
            assert pad is not None
            scores = scores + pad.reshape(bsz, 1, 1, src)
        attn = scores.softmax(-1)
        if self.dropout > 0:
            attn = F.dropout(attn, self.dropout, self.training)
        out = (attn @ vh).permute(2, 0, 1, 3).reshape(tgt, bsz, e)
        out = self.out_proj(out)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        weights = None
        if need_weights:
            weights = attn.mean(1) if average_attn_weights else attn
            if not batched:
                weights = weights.squeeze(0)
        if not batched:
            out = out.squeeze(1)
        return out, weights


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def _sa_block(self, x: Tensor, mask: Tensor | None, padding: Tensor | None,
                  is_causal: bool) -> Tensor:
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding,
                             need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerEncoder(Module):
    """num_layers copies of encoder_layer (each with the same initial weights, as torch's deep
    copies), then norm if given."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True):
        super().__init__()
        self.layers = ModuleList([clone_module(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        if norm is not None:
            self.norm = norm
        else:
            self.register_module("norm", None)

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


def clone_module(module: Module) -> Module:
    """A deep copy of a module: every parameter and buffer a new tensor with the same value."""
    memo: dict[int, Any] = {}
    for m in module.modules():
        for registry in (m._parameters, m._buffers):
            for t in registry.values():
                if t is not None and id(t) not in memo:
                    memo[id(t)] = Parameter(t.detach(), requires_grad=bool(t.requires_grad)) \
                        if isinstance(t, Parameter) else Tensor(t.numpy(), device=t.device,
                                                                dtype=t.dtype)
    return copy.deepcopy(module, memo)
