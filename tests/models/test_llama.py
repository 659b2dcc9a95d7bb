"""tinyfw.models.llama: SmolLM2-135M-Instruct on tinyfw computes what transformers'
LlamaForCausalLM computes from the same GGUF file (dequantized to float32): logits within a
tight tolerance, and the same greedy tokens, on the CPU and on the other devices.

The reference values are committed (tests/data/llm_reference.json and _logits.npy, made by
scripts/make_llm_reference.py), so these tests need neither torch nor transformers. With
TINYFW_LLM_REFERENCE=1, test_reference_files_are_current runs the script's oracle again and
checks the committed files (about a minute)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.probe import probe
from tinyfw.models.gguf import packaged_gguf
from tinyfw.models.llama import SMOLLM2_PACKAGE, Llama, Sampler

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((ROOT / "tests/data/llm_reference.json").read_text(encoding="utf-8"))
ROWS = np.load(ROOT / "tests/data/llm_reference_logits.npy")


@pytest.fixture(scope="module")
def model() -> Llama:
    try:
        packaged_gguf(SMOLLM2_PACKAGE)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    return Llama.smollm2(max_context=96)


def test_logits_are_transformers(model: Llama) -> None:
    """Every position's argmax, and whole rows of logits to 5e-4 (values up to 26)."""
    logits = model.logits(REFERENCE["chat_ids"])
    assert logits.shape == (len(REFERENCE["chat_ids"]), 49152)
    for row, i in zip(ROWS, REFERENCE["logit_rows"]):
        np.testing.assert_allclose(logits[i], row, rtol=0, atol=5e-4)
    assert logits.argmax(-1).tolist() == REFERENCE["argmax"]


def test_greedy_tokens_are_transformers(model: Llama) -> None:
    """The first 32 greedy tokens after the chat prompt: a prefill, then 31 decode steps that
    are one TinyJit capture replayed (the position is a tensor, the shapes never change)."""
    model.reset()
    got = list(model.generate(REFERENCE["chat_ids"], max_tokens=len(REFERENCE["greedy"])))
    assert got == REFERENCE["greedy"]
    step = model._step
    assert step.cnt == len(got) - 1 and len(step.jit_cache) > 0
    # a second conversation replays the same capture
    model.reset()
    again = list(model.generate(REFERENCE["short_ids"], max_tokens=4))
    assert again == REFERENCE["short_greedy"][:4] and step.cnt == len(got) + 2


def test_a_first_prompt_is_padded_and_replayed(model: Llama) -> None:
    """A conversation's first prompt is padded to its bucket's length (16, 24, 32, 40, ...,
    64, 80, ...: steps of a quarter of the power of 2 below, 8 at least; at most the context)
    and run by that length's TinyJit: its third run replays the capture, with the logits of
    the prompt run alone."""
    ids = REFERENCE["chat_ids"]
    assert [model.bucket(n) for n in (1, 16, 17, 25, 33, 49, 65, 81, 97)] == \
        [16, 16, 24, 32, 40, 56, 80, 96, 96]
    whole = model.logits(ids)[-1]
    for _ in range(3):
        model.reset()
        got = model.prefill(ids).numpy()[0]
    jit = model._prefills[model.bucket(len(ids))]
    assert jit.cnt >= 3 and len(jit.jit_cache) > 0  # (earlier tests' prompts count too)
    np.testing.assert_allclose(got, whole, rtol=0, atol=1e-4)


def test_a_prompt_is_checked_before_it_runs(model: Llama) -> None:
    """No tokens, or more than the context holds, is refused with what was asked, by prefill
    and by the server's engine (before the prompt is padded or queued)."""
    from tinyfw.serve.engine import BatchEngine, Request
    model.reset()
    with pytest.raises(ValueError, match="at least one token"):
        model.prefill([])
    with pytest.raises(RuntimeError, match="needs 97 positions; the context holds 96"):
        model.prefill([1] * 97)
    assert model.position == 0
    engine = BatchEngine(model, slots=1)
    with pytest.raises(ValueError, match="no tokens"):
        engine.submit(Request(ids=[], max_tokens=1, emit=lambda event: None))


def test_a_conversation_continues_in_the_cache(model: Llama) -> None:
    """Prefill in two parts (the second at a start position > 0) gives the same next token as
    the whole prompt at once."""
    ids = REFERENCE["chat_ids"]
    model.reset()
    half = len(ids) // 2  # (two halves of one length: one set of kernels to compile)
    model.prefill(ids[:half])
    split = Sampler()(model.prefill(ids[half:2 * half])).item()
    assert len(ids) == 2 * half
    assert split == REFERENCE["greedy"][0]


@pytest.mark.parametrize("device", ["CL", "WEBGPU", "CUDAEMU"])
def test_greedy_tokens_on_other_devices(device: str) -> None:
    """The short prompt's 8 greedy tokens on each device (WEBGPU decodes the float16 scales
    with float32 arithmetic). Each device compiles the model's kernels anew (here 18 s on CL,
    25 s on WEBGPU, 17 s on CUDAEMU), so they run with TINYFW_LLM_DEVICES=1 only: a step of
    scripts/test.sh of their own."""
    if os.getenv("TINYFW_LLM_DEVICES", "0") in ("", "0"):
        pytest.skip("compiles the model for each device: set TINYFW_LLM_DEVICES=1 "
                    "(scripts/test.sh does)")
    ok, why = probe(device)
    if not ok:
        pytest.skip(f"not graded here: no {device} ({why})")
    try:
        packaged_gguf(SMOLLM2_PACKAGE)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    model = Llama.smollm2(max_context=16, device=device)
    got = list(model.generate(REFERENCE["short_ids"], max_tokens=len(REFERENCE["short_greedy"])))
    assert got == REFERENCE["short_greedy"]


def test_sampler_on_the_device() -> None:
    """Greedy is the argmax; top_k=1 or a tiny top_p is too; samples stay in the top k and
    follow the softmax (temperature 1, 400 draws of 4 tokens)."""
    logits = Tensor([[0.0, 2.0, 1.0, 3.0, -1.0, 2.5]])
    assert Sampler()(logits).item() == 3
    assert Sampler(temperature=1.0, top_k=1)(logits).item() == 3
    assert Sampler(temperature=1.0, top_p=0.01)(logits).item() == 3
    Tensor.manual_seed(0)
    top3 = Sampler(temperature=1.0, top_k=3)
    draws = [top3(logits).item() for _ in range(60)]
    assert set(draws) <= {1, 3, 5} and len(set(draws)) == 3
    # nucleus: p = softmax; the three best hold 0.84 of the mass, so top_p=0.8 keeps them
    nucleus = Sampler(temperature=1.0, top_p=0.8)
    assert {nucleus(logits).item() for _ in range(60)} <= {1, 3, 5}
    small = Tensor([[0.0, 1.0, 2.0, 0.5]])
    counts = np.bincount([Sampler(temperature=1.0)(small).item() for _ in range(400)],
                         minlength=4)
    p = np.exp([0.0, 1.0, 2.0, 0.5]) / np.exp([0.0, 1.0, 2.0, 0.5]).sum()
    assert np.abs(counts / 400 - p).max() < 0.08, counts


@pytest.mark.skipif(os.getenv("TINYFW_LLM_REFERENCE", "0") in ("", "0"),
                    reason="runs transformers (about a minute): set TINYFW_LLM_REFERENCE=1")
def test_reference_files_are_current() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_llm_reference
    values, rows = make_llm_reference.reference()
    assert values == REFERENCE
    np.testing.assert_allclose(rows, ROWS, rtol=0, atol=1e-5)
