# Solutions of chapter 12, generated from tinyfw/tokenizers/bpe.py by `python -m tools.generate`.
# Edit tinyfw/tokenizers/bpe.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/12_transformers --impl=solutions
# generated text id: ea2d3e8d32ef17b0 (lets tools.generate tell your edits apart)
"""Byte-level BPE: how GPT-2, Llama 3 and SmolLM turn text into token ids (chapter 12).

A language model reads integers, one per token, from a vocabulary of a fixed size (49152 for
SmolLM2). Byte-level byte-pair encoding gets there in four steps:

1. Special tokens. Markers such as `<|im_start|>` are cut out of the text first and become
   their ids directly; nothing below ever splits them.
2. Pre-tokenizing. The rest is split into words by a fixed pattern, so that merges never
   cross a word's edge: letters with the one space before them (" hello"), numbers, runs of
   punctuation, runs of whitespace, English contractions ("'s", "'ll"). SmolLM's pattern
   (`tokenizer.ggml.pre` = "smollm" in the GGUF file) is GPT-2's, after every digit has been
   made a word of its own, so "2025" is always four tokens. It is written below as a small
   scanner over Unicode categories (letters L*, numbers N*, whitespace), which Python's `re`
   cannot name.
3. Bytes as characters. Each word is taken as its UTF-8 bytes, and each byte is written as one
   printable character (GPT-2's table: printable bytes stand for themselves, the others for
   characters from U+0100 on, so the space is "Ġ" and the newline "Ċ"). Any text at all can be
   spelled this way, with no unknown token: the vocabulary holds all 256 bytes.
4. Merging. The word starts as a list of single characters. The merges, a list learnt from a
   corpus and ordered by how often the pair occurred, say which neighbours join: repeatedly
   the adjacent pair that comes first in that list is joined, everywhere in the word, until
   no adjacent pair is in the list. Each piece left is a token of the vocabulary.

Decoding is the way back: ids to their strings, characters to bytes, bytes to UTF-8 text.

Chat models are trained on conversations written in one exact form, the chat template. The
GGUF file holds it as a Jinja template (`tokenizer.chat_template`); SmolLM2's is ChatML,
written here directly: each message `<|im_start|>{role}\\n{content}<|im_end|>\\n`, a default
system message first when the conversation has none, and `<|im_start|>assistant\\n` to ask for
the reply.
"""
from __future__ import annotations

import codecs
import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

# Unicode's White_Space characters: what the tokenizers' regex engines match as \s (Python's
# str.isspace also takes U+001C..U+001F, which are not white space).
WHITESPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                       "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")  # after an apostrophe, in this order
CONTROL = 3  # tokenizer.ggml.token_type of a control (special) token
# The pre-tokenizers of other models, as regular expressions over Unicode's categories (the
# `regex` package, the engine Hugging Face's tokenizers and llama.cpp's patterns are written
# for; imported when a model needs one): Llama 3's, numbers in runs of up to three digits, and
# Qwen2's, every digit alone.
PATTERNS = {
    "llama-bpe": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
             r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}
PRE_TOKENIZERS = ("smollm", "gpt2", *PATTERNS)


def byte_alphabet() -> dict[int, str]:
    """GPT-2's table of a printable character for each byte: '!'..'~', '¡'..'¬' and '®'..'ÿ'
    stand for themselves, the other 68 bytes (controls, space, DEL, ...) take U+0100, U+0101,
    ... in the order of their values."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


def _kind(ch: str) -> str:
    """'s' for white space, 'L' for a letter, 'N' for a number, 'o' for anything else."""
    if ch in WHITESPACE:
        return "s"
    first = unicodedata.category(ch)[0]
    return first if first in "LN" else "o"


def gpt2_words(text: str) -> list[str]:
    """Text split by GPT-2's pattern, `'s|'t|'re|'ve|'m|'ll|'d| ?L+| ?N+| ?[^sLN]+|s+(?!S)|s+`
    (s: white space, L: letters, N: numbers), as a regex engine matches it: at each place the
    first alternative that matches, as long as it can."""
    kinds = [_kind(ch) for ch in text]
    words, i, n = [], 0, len(text)

    def run(start: int, kind: str) -> int:
        """The end of the run of characters of kind from start (start if there is none)."""
        end = start
        while end < n and kinds[end] == kind:
            end += 1
        return end

    while i < n:
        end = i
        if text[i] == "'":
            end = next((i + 1 + len(c) for c in CONTRACTIONS if text.startswith(c, i + 1)), i)
        if end == i:
            start = i + 1 if text[i] == " " and i + 1 < n and kinds[i + 1] != "s" else i
            if kinds[start] in "LNo":  # ' ?L+', ' ?N+' or ' ?[^sLN]+'
                end = run(start, kinds[start])
            else:  # white space: all of it if it ends the text or comes before more white
                # space, else all but its last character, which goes with the next word
                end = run(i, "s")
                if end < n and end - 1 > i:
                    end -= 1
        words.append(text[i:end])
        i = end
    return words


def pre_tokenize(text: str, kind: str = "smollm") -> list[str]:
    """The words of text for pre-tokenizer `kind`: "gpt2", or "smollm" (every number character
    a word of its own, then GPT-2's pattern over what is between them)."""
    if kind == "gpt2":
        return gpt2_words(text)
    if kind in PATTERNS:
        return _pattern(kind).findall(text)
    if kind != "smollm":
        raise NotImplementedError(f"pre-tokenizer {kind!r}: tinyfw has {PRE_TOKENIZERS}")
    words: list[str] = []
    start = 0
    for i, ch in enumerate(text):
        if _kind(ch) == "N":
            words += gpt2_words(text[start:i]) + [ch]
            start = i + 1
    return words + gpt2_words(text[start:])


@functools.cache
def _pattern(kind: str) -> Any:
    """The compiled regular expression of a pre-tokenizer of PATTERNS."""
    try:
        import regex
    except ImportError as error:
        raise NotImplementedError(f"pre-tokenizer {kind!r} needs the regex package: pip "
                                  "install -e '.[llm]'") from error
    return regex.compile(PATTERNS[kind])


class BPETokenizer:
    """A byte-level BPE tokenizer: `encode(text)` -> ids, `decode(ids)` -> text."""

    def __init__(self, tokens: Sequence[str], merges: Iterable[str],
                 special: Iterable[int] = (), pre: str = "smollm", bos_id: int | None = None,
                 eos_id: int | None = None, chat_template: str | None = None,
                 eot_id: int | None = None):
        if pre not in PRE_TOKENIZERS:
            raise NotImplementedError(f"pre-tokenizer {pre!r}: tinyfw has {PRE_TOKENIZERS}")
        self.tokens, self.pre = list(tokens), pre
        self.ids = {token: i for i, token in enumerate(self.tokens)}
        # a merge "a b" joins a and b; its place in the list is its rank (lower: first)
        self.ranks = {tuple(m.split(" ", 1)): rank for rank, m in enumerate(merges)}
        self.special = {self.tokens[i]: i for i in special}
        self.bos_id, self.eos_id, self.chat_template = bos_id, eos_id, chat_template
        self.eot_id = eot_id  # the end of a turn, where it is not eos (Llama 3's <|eot_id|>)
        self.add_bos = False  # whether a prompt starts with bos_id (tokenizer.ggml.add_bos_token)
        # longest first, so that a special token is never cut by a shorter one it starts with
        names = sorted(self.special, key=len, reverse=True)
        self._special_re = re.compile("|".join(map(re.escape, names))) if names else None
        self.alphabet = byte_alphabet()
        self.byte_of = {ch: byte for byte, ch in self.alphabet.items()}
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def from_gguf(cls, metadata: dict[str, Any]) -> BPETokenizer:
        """The tokenizer a GGUF file describes (`GGUFFile(path).metadata`)."""
        if metadata.get("tokenizer.ggml.model") != "gpt2":
            raise NotImplementedError(
                "a byte-level BPE vocabulary (tokenizer.ggml.model 'gpt2'), not "
                f"{metadata.get('tokenizer.ggml.model')!r}: see tokenizers/spm.py's "
                "tokenizer_from_gguf for SentencePiece's ('llama')")
        types = metadata.get("tokenizer.ggml.token_type", [])
        tokenizer = cls(metadata["tokenizer.ggml.tokens"],
                        metadata.get("tokenizer.ggml.merges", []),
                        special=[i for i, t in enumerate(types) if t == CONTROL],
                        pre=metadata.get("tokenizer.ggml.pre", "gpt2"),
                        bos_id=metadata.get("tokenizer.ggml.bos_token_id"),
                        eos_id=metadata.get("tokenizer.ggml.eos_token_id"),
                        eot_id=metadata.get("tokenizer.ggml.eot_token_id"),
                        chat_template=metadata.get("tokenizer.chat_template"))
        tokenizer.add_bos = bool(metadata.get("tokenizer.ggml.add_bos_token", False))
        return tokenizer

    def __len__(self) -> int:
        return len(self.tokens)

    # --- text -> ids ---
    def encode(self, text: str, special: bool = True) -> list[int]:
        """The ids of text; special: a special token written in the text is that token (as
        transformers' tokenizers do), else its characters are encoded like any others."""
        ids: list[int] = []
        start = 0
        if special and self._special_re is not None:
            for m in self._special_re.finditer(text):
                ids += self._encode_ordinary(text[start:m.start()])
                ids.append(self.special[m.group()])
                start = m.end()
        return ids + self._encode_ordinary(text[start:])

    def _encode_ordinary(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in pre_tokenize(text, self.pre):
            if word not in self._cache:
                spelled = "".join(self.alphabet[b] for b in word.encode("utf-8"))
                self._cache[word] = [self.ids[piece] for piece in self.merge(spelled)]
            ids += self._cache[word]
        return ids

    def merge(self, word: str) -> list[str]:
        """BPE on one word spelled in the byte alphabet: join the best-ranked adjacent pair,
        at every place it occurs from left to right, until no adjacent pair has a merge."""
        # >>> exercise 12.bpe #byte-pair-encoding
        parts = list(word)
        while len(parts) > 1:
            pairs = {(a, b) for a, b in zip(parts, parts[1:])}
            best = min(pairs, key=lambda p: self.ranks.get(p, len(self.ranks)))
            if best not in self.ranks:
                break
            joined, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and (parts[i], parts[i + 1]) == best:
                    joined.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    joined.append(parts[i])
                    i += 1
            parts = joined
        return parts
        # <<< exercise

    # --- ids -> text ---
    def decode_bytes(self, ids: Iterable[int], skip_special: bool = False) -> bytes:
        """The UTF-8 bytes the ids stand for (a special token as its text, unless skipped)."""
        out = bytearray()
        for i in ids:
            token = self.tokens[i]
            if token in self.special:
                if not skip_special:
                    out += token.encode("utf-8")
            else:
                out += bytes(self.byte_of[ch] for ch in token)
        return bytes(out)

    def decode(self, ids: Iterable[int], skip_special: bool = False) -> str:
        """The text of ids (bytes that are not valid UTF-8 become U+FFFD, as transformers')."""
        return self.decode_bytes(ids, skip_special).decode("utf-8", errors="replace")

    def streamer(self, skip_special: bool = True) -> Stream:
        """Decodes ids one at a time for printing as they come (see Stream)."""
        return Stream(self, skip_special)

    # --- conversations ---
    def default_system_prompt(self) -> str | None:
        """The system message the chat template puts first when a conversation has none
        (SmolLM2's names the assistant), read from the template; None if it has none."""
        found = re.search(r"<\|im_start\|>system\n(.*?)<\|im_end\|>", self.chat_template or "")
        return found.group(1) if found else None

    def apply_chat_template(self, messages: Sequence[dict[str, str]],
                            add_generation_prompt: bool = True) -> str:
        """A conversation (dicts with "role" and "content") in ChatML, the form SmolLM2 was
        trained on; with add_generation_prompt the start of the assistant's reply. Another
        model's template (Llama 3's, ...) is run as the Jinja template it is (render_template)."""
        if self.chat_template is not None and "<|im_start|>" not in self.chat_template:
            return self.render_template(messages, add_generation_prompt)
        text = ""
        system = self.default_system_prompt()
        if messages and messages[0]["role"] != "system" and system is not None:
            text += f"<|im_start|>system\n{system}<|im_end|>\n"
        for message in messages:
            text += f"<|im_start|>{message['role']}\n{message['content']}<|im_end|>\n"
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")


    def render_template(self, messages: Sequence[dict[str, str]],
                        add_generation_prompt: bool = True) -> str:
        """The file's chat template run by Jinja (jinja2, imported here), sandboxed, with the
        names Hugging Face's templates use (messages, add_generation_prompt, bos_token,
        eos_token, raise_exception)."""
        try:
            from jinja2.sandbox import ImmutableSandboxedEnvironment
        except ImportError as error:
            raise NotImplementedError("this model's chat template is a Jinja template: pip "
                                      "install -e '.[llm]' (jinja2)") from error

        def raise_exception(message: str) -> None:
            raise ValueError(f"the chat template refused the conversation: {message}")
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        bos, eos = (self.tokens[i] if i is not None else "" for i in (self.bos_id, self.eos_id))
        return env.from_string(self.chat_template or "").render(
            messages=list(messages), add_generation_prompt=add_generation_prompt,
            bos_token=bos, eos_token=eos)


class Stream:
    """Token ids to text as they are generated: a character made of several tokens' bytes (an
    emoji is often 2 or 3 tokens) is given once all its bytes have come."""

    def __init__(self, tokenizer: BPETokenizer, skip_special: bool = True):
        self.tokenizer, self.skip_special = tokenizer, skip_special
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def __call__(self, token_id: int) -> str:
        """The new text that token_id completes ('' while a character is incomplete)."""
        return self.decoder.decode(self.tokenizer.decode_bytes([token_id], self.skip_special))

    def flush(self) -> str:
        """What is left at the end (an incomplete character, as U+FFFD)."""
        return self.decoder.decode(b"", final=True)
