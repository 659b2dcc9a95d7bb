"""SentencePiece's BPE: how Llama 2, TinyLlama and Mistral turn text into token ids.

A GGUF file says which kind of vocabulary it holds in `tokenizer.ggml.model`: "gpt2" for
byte-level BPE (bpe.py: SmolLM2, Llama 3, Qwen2) and "llama" for SentencePiece's. The second
kind differs in three ways:

- Spaces are a character of the vocabulary, "▁" (U+2581), and the text gets one in front
  (`tokenizer.ggml.add_space_prefix`, true unless said), so " world" and "world" at the start of
  a text are the same token. There is no pre-tokenizing into words.
- The pieces are joined by score, not by a list of merges: each token has a score
  (`tokenizer.ggml.scores`), and repeatedly the adjacent pair whose joined text is a token with
  the highest score (the leftmost of equal ones) is joined, until no pair makes a token.
- A character that is no token is spelled as its UTF-8 bytes, each the token `<0xAB>` ("byte
  fallback"), so that any text can be encoded.

Special tokens (`<s>`, `</s>`, a chat model's markers), the chat template and decoding token by
token work as for byte-level BPE: this class is that one with those three steps changed.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any

from tinyfw.tokenizers.bpe import CONTROL, BPETokenizer

SPACE = "\u2581"  # "▁": a space, in a SentencePiece vocabulary
BYTE = 6          # tokenizer.ggml.token_type of a byte-fallback token, "<0x41>"


class SentencePieceTokenizer(BPETokenizer):
    """A SentencePiece BPE vocabulary: `encode(text)` -> ids, `decode(ids)` -> text."""

    def __init__(self, tokens: Sequence[str], scores: Sequence[float],
                 types: Sequence[int] = (), bos_id: int | None = None,
                 eos_id: int | None = None, unk_id: int | None = None,
                 add_space_prefix: bool = True, chat_template: str | None = None,
                 eot_id: int | None = None):
        super().__init__(tokens, [], special=[i for i, t in enumerate(types) if t == CONTROL],
                         pre="gpt2", bos_id=bos_id, eos_id=eos_id, chat_template=chat_template,
                         eot_id=eot_id)
        self.scores, self.unk_id, self.add_space_prefix = list(scores), unk_id, add_space_prefix
        self.add_bos = True  # (llama.cpp's default for these vocabularies)
        self.byte_ids = {int(self.tokens[i][3:5], 16): i for i, t in enumerate(types)
                         if t == BYTE}

    @classmethod
    def from_gguf(cls, metadata: dict[str, Any]) -> SentencePieceTokenizer:
        """The tokenizer of a GGUF file whose tokenizer.ggml.model is "llama"."""
        tokenizer = cls(metadata["tokenizer.ggml.tokens"], metadata["tokenizer.ggml.scores"],
                        metadata.get("tokenizer.ggml.token_type", []),
                        bos_id=metadata.get("tokenizer.ggml.bos_token_id"),
                        eos_id=metadata.get("tokenizer.ggml.eos_token_id"),
                        unk_id=metadata.get("tokenizer.ggml.unknown_token_id"),
                        add_space_prefix=metadata.get("tokenizer.ggml.add_space_prefix", True),
                        chat_template=metadata.get("tokenizer.chat_template"),
                        eot_id=metadata.get("tokenizer.ggml.eot_token_id"))
        tokenizer.add_bos = metadata.get("tokenizer.ggml.add_bos_token", True)
        return tokenizer

    def encode(self, text: str, special: bool = True) -> list[int]:
        """The ids of text; special: a special token written in the text is that token. The
        space in front goes before the text and after each special token, as llama.cpp puts
        it (the reference for GGUF files)."""
        ids: list[int] = []
        start = 0
        if special and self._special_re is not None:
            for m in self._special_re.finditer(text):
                ids += self._encode_ordinary(text[start:m.start()])
                ids.append(self.special[m.group()])
                start = m.end()
        return ids + self._encode_ordinary(text[start:])

    def _encode_ordinary(self, text: str) -> list[int]:
        if not text:
            return []
        if self.add_space_prefix:
            text = " " + text
        ids: list[int] = []
        for piece in self.join(text.replace(" ", SPACE)):
            if piece in self.ids:
                ids.append(self.ids[piece])
            else:  # byte fallback; without byte tokens, the unknown token
                ids += [self.byte_ids.get(b, self.unk_id or 0) for b in piece.encode("utf-8")]
        return ids

    def join(self, text: str) -> list[str]:
        """The pieces of text: its characters, joined by the best-scored adjacent pair whose
        text is a token until none is (a heap of candidate pairs; a pair whose parts changed
        since it was pushed is dropped when it comes up)."""
        parts: list[str | None] = list(text)
        after = list(range(1, len(parts) + 1))   # the next live part of each part
        before = list(range(-1, len(parts) - 1))
        heap: list[tuple[float, int, str, str]] = []

        def push(left: int) -> None:
            right = after[left]
            if left < 0 or right >= len(parts):
                return
            a, b = parts[left], parts[right]
            joined = f"{a}{b}"
            if a is not None and b is not None and joined in self.ids:
                heapq.heappush(heap, (-self.scores[self.ids[joined]], left, a, b))
        for i in range(len(parts) - 1):
            push(i)
        while heap:
            _, left, a, b = heapq.heappop(heap)
            right = after[left]
            if right >= len(parts) or parts[left] != a or parts[right] != b:
                continue  # stale: one side was joined to something else since
            parts[left], parts[right] = a + b, None
            after[left] = after[right]
            if after[left] < len(parts):
                before[after[left]] = left
            push(left)
            if before[left] >= 0:
                push(before[left])
        return [p for p in parts if p is not None]

    def decode_bytes(self, ids: Iterable[int], skip_special: bool = False) -> bytes:
        """The UTF-8 bytes of ids: byte tokens as their byte, "▁" as a space."""
        out = bytearray()
        byte_of = {i: b for b, i in self.byte_ids.items()}
        for i in ids:
            token = self.tokens[i]
            if i in byte_of:
                out.append(byte_of[i])
            elif token in self.special:
                if not skip_special:
                    out += token.encode("utf-8")
            else:
                out += token.replace(SPACE, " ").encode("utf-8")
        return bytes(out)

    def decode(self, ids: Iterable[int], skip_special: bool = False) -> str:
        """The text of ids, without the space encode put in front."""
        text = super().decode(ids, skip_special)
        return text[1:] if self.add_space_prefix and text.startswith(" ") else text


def tokenizer_from_gguf(metadata: dict[str, Any]) -> BPETokenizer:
    """The tokenizer a GGUF file's metadata describes: byte-level BPE ("gpt2") or
    SentencePiece ("llama"); another kind is refused with its name."""
    kind = metadata.get("tokenizer.ggml.model")
    if kind == "llama":
        return SentencePieceTokenizer.from_gguf(metadata)
    if kind == "gpt2":
        return BPETokenizer.from_gguf(metadata)
    raise NotImplementedError(f"tokenizer.ggml.model {kind!r}: tinyfw reads 'gpt2' (byte-level "
                              "BPE) and 'llama' (SentencePiece) vocabularies")
