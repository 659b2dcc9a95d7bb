"""Sentences per second of all-MiniLM-L6-v2 (tinyfw/models/bert.py) for one batch of 32
sentences: tinyfw on its CPU device, as it is and with TinyJit, against transformers' BertModel
on torch with 1 and with 2 threads, in one run.

Run from the repo root:  .venv/bin/python -m bench.minilm  (or .venv/bin/python
bench/minilm.py). Options: --rounds N (timed rounds, default 7), --quick (3 rounds).

Every column does the whole job a user asks for: the 32 sentences to token ids (tinyfw's
WordPiece in Python; the `tokenizers` library's Rust for torch), the encoder, mean pooling and
L2 normalization, and the (32, 384) embeddings read back as numpy. The TinyJit column picks
the word embeddings on the host first (a jitted function would make that pick a one-hot
product with the whole 30522-row table) and replays the rest: BertModel.from_words, pooling,
normalization. Before timing, each column's embeddings are compared with torch's. Each cell is
the median of the rounds, after two warm-up calls (compiling, and the JIT's capture); the rounds
take turns across the columns, so a change in the machine's load hits every column alike.
The two tokenizers are also timed alone, on the same batch.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# bench.run drops OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE before numpy loads (see bench/README.md)
from bench.run import DROPPED_ENV, cpu_name  # noqa: E402, I001

import numpy as np  # noqa: E402

from tinyfw import Tensor, TinyJit, dtypes  # noqa: E402
from tinyfw.models.bert import SentenceEncoder, mean_pool, minilm_folder  # noqa: E402

SENTENCES = [
    "A man is playing a guitar on the street.", "The cat sleeps on the sofa all afternoon.",
    "Interest rates rose again this quarter.", "How do I reset my password?",
    "Photosynthesis turns sunlight into sugar.", "The train to Berlin leaves at 9:15.",
    "She finished the marathon in under four hours.", "Add two eggs and a cup of flour.",
    "The museum opens at ten on weekdays.", "Our team won the match three to one.",
    "Volcanoes erupt when magma rises through the crust.", "Please send me the report by Friday.",
    "The new phone has a larger battery.", "Penguins swim fast in cold water.",
    "A neural network learns by gradient descent.", "The river flooded the lower town.",
    "He plays the piano every evening.", "The flight was delayed by two hours.",
    "Wear a coat, it is cold outside.", "The library has thousands of old maps.",
    "Prices of vegetables went up in winter.", "The children built a castle of sand.",
    "This laptop overheats when gaming.", "The doctor recommended more sleep.",
    "Mozart wrote his first symphony at eight.", "The bridge was closed for repairs.",
    "I would like a table for two, please.", "Electric cars need fewer repairs.",
    "The garden is full of roses in June.", "Turn left after the second traffic light.",
    "The committee approved the budget.", "Stars are born in clouds of gas and dust.",
]
Run = Callable[[], np.ndarray]


def tinyfw_plain(encoder: SentenceEncoder) -> Run:
    """SentenceEncoder.embed as a user calls it: the graph built and scheduled every call."""
    return lambda: encoder.embed(SENTENCES).numpy()


def tinyfw_jitted(encoder: SentenceEncoder) -> Run:
    """Tokenize and pick the word rows on the host, then replay the captured kernels."""
    model = encoder.model

    @TinyJit
    def encode(words: Tensor, mask: Tensor) -> Tensor:
        return mean_pool(model.from_words(words, mask), mask).normalize(p=2, dim=1)

    def run() -> np.ndarray:
        batch = encoder.tokenizer.batch_encode(SENTENCES)
        ids = Tensor(batch.input_ids, dtype=dtypes.int32)
        mask = Tensor(batch.attention_mask, dtype=dtypes.int32).realize()
        return encode(model.embeddings.lookup(ids).realize(), mask).numpy()
    return run


def torch_run(threads: int) -> tuple[Run, str]:
    """transformers' BertModel and fast tokenizer on torch, with `threads` threads."""
    import torch
    import transformers
    folder = str(minilm_folder())
    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    model = transformers.BertModel.from_pretrained(folder).eval()

    def run() -> np.ndarray:
        torch.set_num_threads(threads)  # set each call: the columns take turns
        batch = tokenizer(SENTENCES, padding=True, truncation=True, max_length=256,
                          return_tensors="pt")
        with torch.inference_mode():
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()
    return run, f"torch {torch.__version__}, transformers {transformers.__version__}"


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 rounds: a smoke test")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    encoder = SentenceEncoder(device="CPU")
    torch_1, versions = torch_run(1)
    torch_2, _ = torch_run(2)
    columns: dict[str, Run] = {"tinyfw": tinyfw_plain(encoder),
                               "tinyfw TinyJit": tinyfw_jitted(encoder),
                               "torch 1 thread": torch_1, "torch 2 threads": torch_2}
    tokens = encoder.tokenizer.batch_encode(SENTENCES)
    print(f"date: {datetime.date.today()}  cpu: {cpu_name()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, load average "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(f"{versions}; tinyfw: device CPU (C compiled by the system cc; kernels past 2**20 "
          "iterations share their outer loop with the second core)")
    print("OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE: " +
          (f"dropped {DROPPED_ENV}" if DROPPED_ENV else "not set"))
    print(f"batch: {len(SENTENCES)} sentences, padded to {len(tokens.input_ids[0])} tokens "
          f"({sum(map(sum, tokens.attention_mask))} real tokens)")

    reference = torch_1()
    for name, run in columns.items():  # two warm-up calls each: compile, capture
        first, second = run(), run()
        worst = max(float(np.abs(first - reference).max()), float(np.abs(second - reference).max()))
        print(f"{name}: largest difference from torch's embeddings {worst:.1e}")
    times: dict[str, list[float]] = {name: [] for name in columns}
    for _ in range(rounds):
        for name, run in columns.items():
            times[name].append(timed(run))
    median = {name: statistics.median(t) for name, t in times.items()}

    t_torch = median["torch 1 thread"]
    width = max(map(len, columns))
    print(f"\n{'framework'.ljust(width)}  {'s/batch':>8}  {'sent/s':>8}  {'vs torch 1t':>11}")
    for name, t in median.items():
        print(f"{name.ljust(width)}  {t:8.3f}  {len(SENTENCES) / t:8.1f}  "
              f"{t / t_torch:10.1f}x")
    import tokenizers
    library = tokenizers.Tokenizer.from_file(str(minilm_folder() / "tokenizer.json"))
    library.no_padding()
    library.enable_truncation(256)
    mine = statistics.median(timed(lambda: encoder.tokenizer.batch_encode(SENTENCES))
                             for _ in range(20))
    theirs = statistics.median(timed(lambda: library.encode_batch(SENTENCES)) for _ in range(20))
    print(f"\ntokenizing the batch alone: tinyfw's WordPiece {mine * 1e3:.2f} ms, the tokenizers "
          f"library {theirs * 1e3:.2f} ms")
    print(f"vs torch 1t: time per batch over torch's with 1 thread; median of {rounds} rounds")
    print("load average at the end: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
