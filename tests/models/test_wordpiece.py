"""tinyfw's WordPiece tokenizer (tinyfw/tokenizers/wordpiece.py) gives exactly the ids of the
`tokenizers` library, loaded from the same tokenizer.json of all-MiniLM-L6-v2, on a corpus of a
few hundred strings of every kind: made by a seeded generator, so every run checks the same."""
from __future__ import annotations

import random
import unicodedata
from collections.abc import Iterator

import pytest

from tinyfw.models.bert import minilm_folder
from tinyfw.tokenizers.wordpiece import (
    WordPieceTokenizer,
    normalize,
    normalize_each_character,
    pre_tokenize,
    pre_tokenize_each_character,
)

tokenizers = pytest.importorskip("tokenizers")

# Hand-picked strings: one case of each kind the tokenizer must handle.
SEEDS = [
    "Hello, world!", "The quick brown fox jumps over the lazy dog.", "",
    "   leading and trailing spaces   ", "tabs\tand\nnewlines\r\nand\u3000ideographic space",
    "multiple     spaces\t\t\tand\n\n\nruns", "Café déjà vu, naïve coöperation, façade, Ångström",
    "Straße, GROSSE STRASSE, ẞ", "ΟΔΟΣ ὁδός σοφία ΣΟΦΟΣ", "İstanbul ılık ışık", "Ĳssel ǅemal",
    "Привет, мир! Съешь же ещё этих мягких французских булок.", "مرحبا بالعالم", "שלום עולם",
    "नमस्ते दुनिया", "こんにちは世界、カタカナとひらがな。", "안녕하세요 세계",
    "你好，世界！我爱自然语言处理。", "混合mixed文本text", "𠀀𠀁 𪜀 丽 ﬁve ﬂowers",
    "ＦＵＬＬＷＩＤＴＨ １２３ ｶﾀｶﾅ", "Ⅻ ① ² ½ ∞ ≤ ≥ ∑ √ π",
    "emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🫠", "don't can't won't rock'n'roll O'Neill",
    "state-of-the-art e-mail co-operate", "...!!!???;;;:::", "«quotes» “curly” ‘single’ „low“",
    "em—dash en–dash ‐ hyphen ‒ figure", "$12.50 €9,99 £5 ¥1000 ₹42 ₿0.1", "3.14159 2.71828 1e-10",
    "1,000,000 and 1.000.000 and 1 000 000", "2024-01-15T12:34:56Z", "+1 (555) 123-4567",
    "user@example.com https://example.org/path?q=1&r=2#frag", "C:\\Users\\name\\file.txt",
    "def f(x):\n    return x ** 2  # square", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "SELECT * FROM users WHERE id = 42;", "<div class=\"a\">text</div>", "{\"key\": [1, 2, 3]}",
    "a" * 99, "b" * 100, "c" * 101, "d" * 250, "pneumonoultramicroscopicsilicovolcanoconiosis",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch",
    "[CLS] [SEP] [MASK] [PAD] [UNK]", "fill the [MASK] please", "[mask] is not special",
    "x[MASK]y[SEP]z", "[[MASK]]", "[MAS K]", "control\x00chars\x07here\x1b\x7f",
    "replace\ufffdment", "zero\u200bwidth\u200cjoin\u200d\ufeffbom", "soft\u00adhyphen",
    "e\u0301 a\u0308 n\u0303 (combining)",
    "한국어 자모 ᄀᄂᄃ", "Ⓐⓑⓒ 🄰🄱", "tokenization tokenizer tokenized untokenizable",
    "UPPER lower MiXeD CaSe", "\u2028line\u2029para\x85nel\x0bvt\x0cff", "#hashtag @mention",
    "l33t sp34k h4x0r", "ünïcödé àccénts éverywhere", "ǅ ǈ ǋ ǲ titlecase",
]

# Pieces the generator mixes: words of several scripts, digits, symbols, punctuation, marks.
WORDS = ["the", "model", "embedding", "tokenizer", "running", "unbelievable", "naïve", "résumé",
         "Zürich", "北京", "東京", "서울", "москва", "αβγ", "עברית", "العربية", "हिन्दी", "ไทย",
         "42", "3.5", "007", "x86_64", "snake_case", "camelCase", "kebab-case", "ALLCAPS",
         "http://a.b/c", "a+b=c", "f(x)", "😀", "🚀", "🎉", "👩‍💻", "中文字符", "ひらがな",
         "カタカナ"]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", "", ", ", ". ", "! ", "? ", " - ", "/", "\u00a0",
              "\u3000", "...", " (", ") "]
# Unicode blocks to draw single characters from (all assigned by Unicode 8, see the tests below).
BLOCKS = [(0x21, 0x7E), (0xA1, 0xFF), (0x100, 0x17F), (0x300, 0x36F), (0x370, 0x3FF),
          (0x400, 0x4FF), (0x2000, 0x206F), (0x20A0, 0x20BF), (0x2190, 0x21FF),
          (0x2200, 0x22FF), (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
          (0xFF01, 0xFF5E), (0x1F600, 0x1F64F)]


def random_string(rng: random.Random) -> str:
    """A string of words, single characters of the blocks, digits and separators."""
    parts = []
    for _ in range(rng.randint(1, 12)):
        kind = rng.random()
        if kind < 0.5:
            word = rng.choice(WORDS)
            parts.append(word.upper() if rng.random() < 0.15 else word)
        elif kind < 0.8:
            low, high = rng.choice(BLOCKS)
            parts.append("".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 4))))
        else:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 9))))
        parts.append(rng.choice(SEPARATORS))
    return "".join(parts)


def corpus(n_random: int = 300, seed: int = 14) -> Iterator[str]:
    """The hand-picked strings, n_random generated ones, and a few longer than 256 tokens."""
    yield from SEEDS
    rng = random.Random(seed)
    for _ in range(n_random):
        yield random_string(rng)
    for i in range(4):  # long texts, cut at max_length
        yield " ".join(random_string(rng) for _ in range(40 + 20 * i))


@pytest.fixture(scope="module")
def mine() -> WordPieceTokenizer:
    return WordPieceTokenizer.from_folder(minilm_folder())


@pytest.fixture(scope="module")
def reference() -> tokenizers.Tokenizer:
    """The library's tokenizer as sentence-transformers sets it for this model: cut at 256
    tokens (the file says 128) and not padded (the file pads every sentence to 128)."""
    ref = tokenizers.Tokenizer.from_file(str(minilm_folder() / "tokenizer.json"))
    ref.no_padding()
    ref.enable_truncation(256)
    return ref


def test_corpus_is_varied_and_deterministic() -> None:
    texts = list(corpus())
    assert texts == list(corpus()) and len(texts) >= 300
    assert len(set(texts)) > 0.95 * len(texts)
    joined = "".join(texts)
    for category in ("Lu", "Ll", "Lo", "Mn", "Nd", "Po", "Ps", "Sm", "Sc", "So", "Zs", "Cc"):
        assert any(unicodedata.category(ch) == category for ch in joined), category


def test_ids_equal_the_tokenizers_library(mine: WordPieceTokenizer,
                                          reference: tokenizers.Tokenizer) -> None:
    texts = list(corpus())
    expected = [e.ids for e in reference.encode_batch(texts)]
    got = [mine.encode(t) for t in texts]
    wrong = [(t, g, e) for t, g, e in zip(texts, got, expected) if g != e]
    assert not wrong, f"{len(wrong)} of {len(texts)} differ, first: {wrong[0]!r}"
    assert max(len(e) for e in expected) == 256  # the long texts were cut


def test_batch_padding_and_mask_equal_the_library(mine: WordPieceTokenizer,
                                                  reference: tokenizers.Tokenizer) -> None:
    texts = ["a short one", "a somewhat longer sentence, with punctuation!", "", "x" * 120]
    padded = tokenizers.Tokenizer.from_str(reference.to_str())
    padded.enable_padding()  # to the longest of the batch, with [PAD] = 0
    expected = padded.encode_batch(texts)
    got = mine.batch_encode(texts)
    assert got.input_ids == [e.ids for e in expected]
    assert got.attention_mask == [e.attention_mask for e in expected]
    assert got.token_type_ids == [e.type_ids for e in expected]


def test_steps_by_hand(mine: WordPieceTokenizer) -> None:
    """The three steps of the module's docstring, on small cases."""
    assert normalize("Café\tDÉJÀ\x00 vu 你好") == "cafe deja vu  你  好 "
    assert pre_tokenize("don't stop!") == ["don", "'", "t", "stop", "!"]
    assert mine.tokenize("tokenization") == ["token", "##ization"]
    assert mine.tokenize("x" * 101) == ["[UNK]"]
    assert mine.tokenize("fill the [MASK]") == ["fill", "the", "[MASK]"]
    assert mine.decode(mine.encode("Tokenization works")) == "tokenization works"
    assert mine.encode("one two three", max_length=4) == [101, 2028, 2048, 102]


def test_every_character_but_a_few_newer_ones(mine: WordPieceTokenizer,
                                              reference: tokenizers.Tokenizer) -> None:
    """Each character of the Basic Multilingual Plane, alone between letters: the same ids,
    except for a few hundred rare ones that Unicode added (or re-classed) after the version of
    the library's tables: punctuation, combining marks and format characters whose class
    Python's unicodedata knows and the library's does not (see tinyfw/tokenizers/wordpiece.py).
    None of them is in a block the corpus draws from."""
    chars = [chr(c) for c in range(1, 0x10000) if not 0xD800 <= c <= 0xDFFF]
    texts = [f"a{ch}b {ch}" for ch in chars]
    expected = reference.encode_batch(texts)
    differ = [ch for ch, text, e in zip(chars, texts, expected) if mine.encode(text) != e.ids]
    assert len(differ) < 400, len(differ)
    assert {unicodedata.category(ch) for ch in differ} <= {"Mn", "Mc", "Po", "Ps", "Pe", "Pd",
                                                          "Cf", "So"}
    assert not [ch for ch in differ if any(low <= ord(ch) <= high for low, high in BLOCKS)]


def test_ascii_shortcut_equals_the_per_character_rules() -> None:
    """normalize and pre_tokenize take ASCII text through str.translate and a regular
    expression: the same as the rules a character at a time, every ASCII character included,
    with each option on and off."""
    rng = random.Random(3)
    texts = ["".join(chr(rng.randint(0, 127)) for _ in range(rng.randint(0, 40)))
             for _ in range(2000)] + ["".join(chr(c) for c in range(128))]
    for text in texts:
        for lowercase, clean in ((True, True), (False, True), (True, False), (False, False)):
            assert normalize(text, lowercase, True, True, clean) == \
                normalize_each_character(text, lowercase, True, True, clean), repr(text)
        assert pre_tokenize(text) == pre_tokenize_each_character(text), repr(text)
