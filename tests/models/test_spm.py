"""SentencePiece BPE vocabularies (GGUF's tokenizer.ggml.model "llama": Llama 2, TinyLlama,
Mistral), tokenized by tinyfw/tokenizers/spm.py, against the sentencepiece library itself (a
test-only oracle): a small BPE model it trains here with byte fallback, read the way a GGUF file
holds it (pieces, scores, types), encodes and decodes every text as sentencepiece does."""
from __future__ import annotations

import io

import pytest

from tinyfw.tokenizers.spm import SentencePieceTokenizer, tokenizer_from_gguf

spm = pytest.importorskip("sentencepiece")

CORPUS = ["The quick brown fox jumps over the lazy dog.", "Hello world, hello there!",
          "tokenizers split text into pieces", "numbers like 12345 and 2026 appear",
          "A space  and two  spaces, and\nnew lines.", "the the the quick quick fox"] * 20
TEXTS = ["Hello world", "the lazy fox jumps", "  leading spaces", "trailing  ", "a\nb\n\nc",
         "unseen: 中文 and emoji 🤗!", "12345 2026", "", " ", "Thé quïck", "fox.dog,cat;"]


@pytest.fixture(scope="module")
def trained() -> tuple[object, SentencePieceTokenizer]:
    """A sentencepiece BPE model of 420 pieces (256 of them bytes), and tinyfw's tokenizer of
    its vocabulary (given as a GGUF file's metadata)."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS), model_writer=model,
                                   vocab_size=420, model_type="bpe", byte_fallback=True,
                                   normalization_rule_name="identity",
                                   remove_extra_whitespaces=False, add_dummy_prefix=True,
                                   character_coverage=1.0, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    n = sp.get_piece_size()

    def kind(i: int) -> int:
        return 3 if sp.is_control(i) else 2 if sp.is_unknown(i) else 6 if sp.is_byte(i) else 1
    metadata = {"tokenizer.ggml.model": "llama",
                "tokenizer.ggml.tokens": [sp.id_to_piece(i) for i in range(n)],
                "tokenizer.ggml.scores": [sp.get_score(i) for i in range(n)],
                "tokenizer.ggml.token_type": [kind(i) for i in range(n)],
                "tokenizer.ggml.bos_token_id": sp.bos_id(),
                "tokenizer.ggml.eos_token_id": sp.eos_id(),
                "tokenizer.ggml.unknown_token_id": sp.unk_id()}
    ours = tokenizer_from_gguf(metadata)
    assert isinstance(ours, SentencePieceTokenizer)
    return sp, ours


@pytest.mark.parametrize("text", TEXTS)
def test_encode_is_sentencepieces(trained: tuple, text: str) -> None:
    sp, ours = trained
    assert ours.encode(text, special=False) == sp.encode(text)


@pytest.mark.parametrize("text", TEXTS)
def test_decode_is_sentencepieces(trained: tuple, text: str) -> None:
    sp, ours = trained
    ids = sp.encode(text)
    assert ours.decode(ids) == sp.decode(ids)


def test_special_tokens_in_text(trained: tuple) -> None:
    """`</s>` written in a text is the end token, the text after it spaced as at the start."""
    sp, ours = trained
    assert ours.encode("Hello</s>world") == sp.encode("Hello") + [sp.eos_id()] + \
        sp.encode("world")
    assert ours.add_bos and ours.bos_id == sp.bos_id()
