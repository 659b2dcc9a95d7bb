"""Writes tests/data/llm_reference.json and llm_reference_logits.npy: what transformers'
LlamaForCausalLM computes for SmolLM2-135M-Instruct, loaded (and dequantized to float32) from
the same GGUF file tinyfw reads. tests/models/test_llama.py compares tinyfw with these files, so CI
needs neither torch's model nor the 15 s it takes to load. Run it again after changing the
prompts (TINYFW_LLM_REFERENCE=1 also checks, in tests/models/test_llama.py, that the committed files
are what this script makes):

    .venv/bin/python scripts/make_llm_reference.py

The prompts are tokenized by tinyfw's tokenizer (tests/models/test_bpe.py checks it against
transformers'); both models get the same ids."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tinyfw.models.gguf import GGUFFile, packaged_gguf  # noqa: E402
from tinyfw.models.llama import SMOLLM2_PACKAGE  # noqa: E402
from tinyfw.tokenizers.bpe import BPETokenizer  # noqa: E402

DATA = ROOT / "tests" / "data"
JSON, LOGITS = DATA / "llm_reference.json", DATA / "llm_reference_logits.npy"
# The conversation whose logits and 32 greedy tokens are compared on the CPU, and a short
# prompt whose greedy tokens are compared on the other devices.
CHAT = [{"role": "user", "content": "Write a short poem about the sea."}]
SHORT = "The capital of France is"
GREEDY, SHORT_GREEDY = 32, 8
LOGIT_ROWS = (0, -1)  # the positions whose whole rows of logits are kept


def load_transformers(path: str) -> Any:
    """transformers' LlamaForCausalLM from the GGUF file, every weight dequantized to float32
    (GgufConfig(dequantize=True): without it transformers 5.25 keeps the 4-bit blocks and, for
    up to 8 tokens at a time, multiplies with llama.cpp's kernel that rounds the activations to
    8 bits, so its one-token decode steps are not the float model's)."""
    import torch
    from transformers import AutoModelForCausalLM, GgufConfig

    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(path), gguf_file=os.path.basename(path), dtype=torch.float32,
        quantization_config=GgufConfig(dequantize=True))
    return model.eval()


def reference() -> tuple[dict[str, Any], np.ndarray]:
    """The reference values: (the JSON part, the logits rows)."""
    import torch

    path = packaged_gguf(SMOLLM2_PACKAGE)
    tokenizer = BPETokenizer.from_gguf(GGUFFile(path).metadata)
    chat_ids = tokenizer.encode(tokenizer.apply_chat_template(CHAT))
    short_ids = tokenizer.encode(SHORT)
    torch.manual_seed(0)
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    model = load_transformers(path)
    with torch.no_grad():
        logits = model(torch.tensor([chat_ids])).logits[0].numpy()
        rows = np.stack([logits[i] for i in LOGIT_ROWS]).astype(np.float32)

        def greedy(ids: list[int], n: int) -> list[int]:
            """n tokens, each the argmax of a whole forward pass over all before it. (Not
            model.generate: its cached decode steps, here, leave the float model's argmax at
            the 28th token of the poem, where the two best logits are 0.1 apart.)"""
            out = list(ids)
            for _ in range(n):
                out.append(int(model(torch.tensor([out])).logits[0, -1].argmax()))
            return out[len(ids):]
        values = {
            "model": os.path.basename(path), "chat": CHAT, "chat_ids": chat_ids,
            "logit_rows": list(LOGIT_ROWS), "greedy": greedy(chat_ids, GREEDY),
            "argmax": logits.argmax(-1).tolist(),
            "short": SHORT, "short_ids": short_ids, "short_greedy": greedy(short_ids,
                                                                           SHORT_GREEDY),
        }
    return values, rows


def main() -> None:
    values, rows = reference()
    DATA.mkdir(exist_ok=True)
    JSON.write_text(json.dumps(values, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    np.save(LOGITS, rows)
    print(f"wrote {JSON.relative_to(ROOT)} and {LOGITS.relative_to(ROOT)}: "
          f"{len(values['chat_ids'])} prompt tokens, greedy {values['greedy']}")


if __name__ == "__main__":
    main()
