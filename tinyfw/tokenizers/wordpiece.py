"""WordPiece: how BERT cuts text into the token ids its embedding table is indexed by.

A model reads numbers, not text. BERT's tokenizer maps a sentence to ids in three steps, each
a small pure function below:

  1. normalize (BertNormalizer): drop control characters, turn every kind of whitespace into
     a plain space, put spaces around each CJK ideograph (Chinese characters are tokens on
     their own: words are not spaced in Chinese), then, for an uncased model, strip accents
     (decompose with Unicode NFD, drop the combining marks: "café" -> "cafe") and lowercase;
  2. pre-tokenize (BertPreTokenizer): split on whitespace, and make every punctuation
     character a word of its own ("don't!" -> "don", "'", "t", "!");
  3. WordPiece: each word is cut greedily into the longest pieces found in the vocabulary,
     left to right; a piece that continues a word is spelled with "##" in front of it
     ("tokenization" -> "token", "##ization"). A word that cannot be cut that way, or longer
     than max_input_chars_per_word characters, becomes the single token [UNK].

Then the special tokens go around each sentence ([CLS] ... [SEP]: BERT was trained that way),
a long sentence is cut to max_length tokens, and a batch is padded with [PAD] (id 0) to its
longest sentence; the attention mask says which positions are real tokens (1) and which are
padding (0), so the model can ignore the padding (tinyfw/models/bert.py).

Special tokens written in the text itself ("[MASK]") are found first, in the raw text, and
kept as their ids, as the `tokenizers` library does with its added tokens.

Everything is read from the model's tokenizer.json (the file the `tokenizers` library loads:
the vocabulary and every setting above), and the tests check that the ids are exactly that
library's on a few hundred strings of every kind (tests/models/test_wordpiece.py). The Unicode
classes are Python's unicodedata's; the library's own tables may be of another Unicode
version, which could only matter for characters assigned in between.
"""
from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Unicode's White_Space property (what Rust's char::is_whitespace tests, which the `tokenizers`
# library uses): Python's str.isspace() also says yes to U+001C..U+001F, control characters
# that normalization drops.
WHITESPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
                       + "".join(chr(c) for c in range(0x2000, 0x200B)))
# The CJK Unified Ideographs blocks and their extensions and compatibility forms, as BERT's
# tokenizer lists them. Hangul and kana are not here: they are words of letters.
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_control(ch: str) -> bool:
    """A character normalization drops: in Unicode's "Other" categories (control, format,
    unassigned, private use, surrogate), except tab, newline and carriage return, which are
    whitespace; and NUL and the replacement character U+FFFD."""
    if ch in "\t\n\r":
        return False
    return ch in "\x00\ufffd" or unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs")


def is_cjk(ch: str) -> bool:
    """A CJK ideograph: a token of its own whatever is around it."""
    code = ord(ch)
    return any(low <= code <= high for low, high in CJK_RANGES)


def is_punctuation(ch: str) -> bool:
    """Unicode punctuation (categories P*), and every ASCII character that is neither a letter,
    a digit nor a space: $ + < = > ^ ` | ~ are symbols in Unicode, but BERT splits them too."""
    if ch.isascii() and not ch.isalnum() and 33 <= ord(ch) <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


# ASCII text, the usual case, goes through str.translate and one regular expression: both built
# from the per-character rules above, so they say what those say. (Python's per-character loops
# were 1.5 ms of a 32-sentence batch, 3% of all-MiniLM-L6-v2's embedding of it.) No ASCII
# character is a CJK ideograph or has an accent to strip, and str.lower() lowercases ASCII as
# the per-character rule does.
ASCII = [chr(c) for c in range(128)]
ASCII_CLEAN = {ord(ch): None if is_control(ch) else " " if ch in WHITESPACE else ch
               for ch in ASCII}
ASCII_WORDS = re.compile(
    "[" + "".join(re.escape(ch) for ch in ASCII
                  if ch not in WHITESPACE and not is_punctuation(ch)) + "]+|"
    "[" + "".join(re.escape(ch) for ch in ASCII if is_punctuation(ch)) + "]")


def normalize(text: str, lowercase: bool = True, strip_accents: bool = True,
              handle_cjk: bool = True, clean_text: bool = True) -> str:
    """Step 1 (see the module's docstring), in the library's order: clean, space the CJK
    ideographs, strip accents, lowercase. Lowercasing is per character, as the library's
    ("Σ" is always "σ": Python's str.lower() would make a word-final sigma "ς")."""
    if text.isascii():
        text = text.translate(ASCII_CLEAN) if clean_text else text
        return text.lower() if lowercase else text
    return normalize_each_character(text, lowercase, strip_accents, handle_cjk, clean_text)


def normalize_each_character(text: str, lowercase: bool = True, strip_accents: bool = True,
                             handle_cjk: bool = True, clean_text: bool = True) -> str:
    """normalize, a character at a time: any text."""
    if clean_text:
        text = "".join(" " if ch in WHITESPACE else ch for ch in text if not is_control(ch))
    if handle_cjk:
        text = "".join(f" {ch} " if is_cjk(ch) else ch for ch in text)
    if strip_accents:  # NFD splits "é" into "e" and a combining accent (category Mn)
        text = "".join(ch for ch in unicodedata.normalize("NFD", text)
                       if unicodedata.category(ch) != "Mn")
    if lowercase:
        text = "".join(ch.lower() for ch in text)
    return text


def pre_tokenize(text: str) -> list[str]:
    """Step 2: words split at whitespace (dropped) and at punctuation (kept, one per word)."""
    if text.isascii():
        return ASCII_WORDS.findall(text)
    return pre_tokenize_each_character(text)


def pre_tokenize_each_character(text: str) -> list[str]:
    """pre_tokenize, a character at a time: any text."""
    words: list[str] = []
    current: list[str] = []
    for ch in text:
        if ch in WHITESPACE or is_punctuation(ch):
            if current:
                words.append("".join(current))
                current = []
            if ch not in WHITESPACE:
                words.append(ch)
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


@dataclass
class Encoding:
    """A batch of encoded sentences, padded to one length: ids, attention mask (1 for a token,
    0 for padding) and token type ids (all 0: one sentence each), lists of rows of ints."""

    input_ids: list[list[int]]
    attention_mask: list[list[int]]
    token_type_ids: list[list[int]]


class WordPieceTokenizer:
    """BERT's tokenizer: normalize, pre-tokenize, WordPiece, then [CLS] ... [SEP], truncation
    and padding. encode(text) gives one sentence's ids; batch_encode(texts) pads a batch."""

    def __init__(self, vocab: dict[str, int], *, lowercase: bool = True,
                 strip_accents: bool | None = None, handle_cjk: bool = True,
                 clean_text: bool = True, unk_token: str = "[UNK]", prefix: str = "##",
                 max_input_chars_per_word: int = 100, cls_token: str = "[CLS]",
                 sep_token: str = "[SEP]", pad_token: str = "[PAD]",
                 special_tokens: Sequence[str] = (), max_length: int = 512):
        self.vocab = vocab
        self.lowercase, self.handle_cjk, self.clean_text = lowercase, handle_cjk, clean_text
        # as in BERT: strip accents when lowercasing, unless the config says otherwise
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        self.unk_token, self.prefix = unk_token, prefix
        self.max_input_chars_per_word, self.max_length = max_input_chars_per_word, max_length
        self.cls_id, self.sep_id = vocab[cls_token], vocab[sep_token]
        self.pad_id, self.unk_id = vocab[pad_token], vocab[unk_token]
        # matched in the raw text, longest first where two start at the same place
        self.special_tokens = sorted(set(special_tokens), key=len, reverse=True)

    @classmethod
    def from_tokenizer_json(cls, path: str | Path, max_length: int = 512) -> WordPieceTokenizer:
        """A tokenizer with the vocabulary and settings of a `tokenizers` tokenizer.json; one
        that is not BERT's (another normalizer, pre-tokenizer or model) is refused."""
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
        norm, pre, model = spec["normalizer"], spec["pre_tokenizer"], spec["model"]
        kinds = (norm["type"], pre["type"], model["type"])
        if kinds != ("BertNormalizer", "BertPreTokenizer", "WordPiece"):
            raise ValueError(f"{path}: a BERT WordPiece tokenizer has a BertNormalizer, a "
                             f"BertPreTokenizer and a WordPiece model, not {kinds}")
        specials = [t["content"] for t in spec.get("added_tokens", [])]
        return cls(model["vocab"], lowercase=norm["lowercase"],
                   strip_accents=norm["strip_accents"], handle_cjk=norm["handle_chinese_chars"],
                   clean_text=norm["clean_text"], unk_token=model["unk_token"],
                   prefix=model["continuing_subword_prefix"],
                   max_input_chars_per_word=model["max_input_chars_per_word"],
                   special_tokens=specials, max_length=max_length)

    @classmethod
    def from_folder(cls, folder: str | Path) -> WordPieceTokenizer:
        """The tokenizer of a sentence-transformers model folder: tokenizer.json, cutting at
        the model's max_seq_length (sentence_bert_config.json), else at 512 tokens."""
        folder = Path(folder)
        config = folder / "sentence_bert_config.json"
        max_length = json.loads(config.read_text(encoding="utf-8"))["max_seq_length"] \
            if config.is_file() else 512
        return cls.from_tokenizer_json(folder / "tokenizer.json", max_length=max_length)

    # --- the steps ---

    def wordpiece(self, word: str) -> list[str]:
        """Step 3: a word cut greedily into the longest pieces of the vocabulary, left to
        right, "##" before every piece but the first; [UNK] alone if some part cannot be cut,
        or if the word is longer than max_input_chars_per_word characters."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:  # the longest piece first
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            else:
                return [self.unk_token]  # nothing in the vocabulary begins here
            pieces.append(piece)
            start = end
        return pieces

    def split_special(self, text: str) -> list[tuple[str, bool]]:
        """The raw text cut around the special tokens written in it: (part, is special)."""
        parts: list[tuple[str, bool]] = []
        start = 0
        while self.special_tokens:
            found = [(text.find(t, start), -len(t), t) for t in self.special_tokens]
            hits = [f for f in found if f[0] >= 0]
            if not hits:
                break
            at, _, token = min(hits)  # the first one; the longest of those starting there
            if at > start:
                parts.append((text[start:at], False))
            parts.append((token, True))
            start = at + len(token)
        if start < len(text):
            parts.append((text[start:], False))
        return parts

    def tokenize(self, text: str) -> list[str]:
        """The tokens of a text, without [CLS] and [SEP]."""
        tokens: list[str] = []
        for part, special in self.split_special(text):
            if special:
                tokens.append(part)
                continue
            normal = normalize(part, self.lowercase, self.strip_accents, self.handle_cjk,
                               self.clean_text)
            for word in pre_tokenize(normal):
                tokens.extend(self.wordpiece(word))
        return tokens

    def encode(self, text: str, max_length: int | None = None) -> list[int]:
        """[CLS] + the text's token ids + [SEP], at most max_length ids in all (the
        tokenizer's max_length if None): a longer text loses its last tokens."""
        limit = self.max_length if max_length is None else max_length
        ids = [self.vocab[t] for t in self.tokenize(text)][:max(limit - 2, 0)]
        return [self.cls_id, *ids, self.sep_id]

    def batch_encode(self, texts: Sequence[str], max_length: int | None = None) -> Encoding:
        """Each text encoded, then padded with [PAD] at the end to the longest of the batch."""
        rows = [self.encode(t, max_length) for t in texts]
        width = max((len(r) for r in rows), default=0)
        return Encoding(input_ids=[r + [self.pad_id] * (width - len(r)) for r in rows],
                        attention_mask=[[1] * len(r) + [0] * (width - len(r)) for r in rows],
                        token_type_ids=[[0] * width for _ in rows])

    def decode(self, ids: Sequence[int]) -> str:
        """The tokens of ids joined back into text ("##" pieces glued to the one before),
        special tokens left out: lowercased and accent-free, not the original text."""
        inverse = {i: t for t, i in self.vocab.items()}
        specials = {self.cls_id, self.sep_id, self.pad_id}
        text = " ".join(inverse[i] for i in ids if i not in specials)
        return text.replace(" " + self.prefix, "")
