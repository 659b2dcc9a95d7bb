"""Byte-pair encoding: your BPETokenizer.merge(word) joins the adjacent pair of lowest rank,
everywhere it occurs from left to right, and again, until no adjacent pair has a merge; then
the real SmolLM2 vocabulary's ids come out of it."""

from __future__ import annotations

import pytest

from chapters.grading import expect_equal
from tinyfw.tokenizers.bpe import BPETokenizer

pytestmark = pytest.mark.task("12.bpe")

# a toy vocabulary: the merges in rank order ("a b" joins a and b; first = lowest rank)
MERGES = ["l o", "lo w", "e r", "low er", "n e", "ne w", "new er"]
TOKENS = sorted({*"lowernewst", "lo", "low", "er", "lower", "ne", "new", "newer"})


def toy() -> BPETokenizer:
    return BPETokenizer(TOKENS, MERGES, pre="gpt2")


@pytest.mark.parametrize("word, parts", [
    ("lower", ["lower"]),
    ("newer", ["newer"]),
    ("lowest", ["low", "e", "s", "t"]),
    ("slow", ["s", "low"]),
    ("renew", ["r", "e", "new"]),
    ("x", ["x"]),
    ("", []),
])
def test_merges_by_rank(word: str, parts: list[str]) -> None:
    assert toy().merge(word) == parts, \
        f"merge({word!r}) is {toy().merge(word)}, expected {parts} (merges by rank: {MERGES})"


def test_the_lowest_rank_wins_not_the_leftmost_pair() -> None:
    """'ner': 'e r' (rank 2) comes before 'n e' (rank 4), so 'n', 'er' (then no merge of
    'n er' exists)."""
    assert toy().merge("ner") == ["n", "er"], f"merge('ner') is {toy().merge('ner')}"


def test_a_pair_is_joined_everywhere_it_occurs() -> None:
    """'lolo': 'l o' joins both places in one step: 'lo', 'lo'."""
    assert toy().merge("lolo") == ["lo", "lo"], f"merge('lolo') is {toy().merge('lolo')}"


def test_smollm2_token_ids() -> None:
    """With the real vocabulary of SmolLM2 (49152 tokens, 48900 merges): known ids."""
    from tinyfw.models.gguf import GGUFFile, packaged_gguf
    from tinyfw.models.llama import SMOLLM2_PACKAGE
    tokenizer = BPETokenizer.from_gguf(GGUFFile(packaged_gguf(SMOLLM2_PACKAGE)).metadata)
    got = tokenizer.encode("Hello, world! Tokenizers merge bytes.")
    expect_equal(got, EXPECTED_IDS, what="the SmolLM2 ids of 'Hello, world! Tokenizers merge "
                 "bytes.'")


# (tinyfw's tokenizer is tested id for id against transformers': tests/models/test_bpe.py)
EXPECTED_IDS = [19556, 28, 905, 17, 33135, 7927, 16905, 15590, 30]
