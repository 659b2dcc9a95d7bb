"""Semantic search with all-MiniLM-L6-v2 on tinyfw: rank a small built-in set of documents by
how close their meaning is to a query, not by the words they share.

    .venv/bin/python examples/search.py "how do plants make food"
    .venv/bin/python examples/search.py "a fast car" --top 3 --device CL

Each document and the query become unit vectors (examples/embed.py shows how); a document's
score is its cosine similarity to the query, the dot product of the two vectors, and the
documents are printed best first. "how do plants make food" finds the photosynthesis document
first though it shares no word with it. The query is embedded in the same batch as the
documents: one run of the model, one set of compiled kernels.
"""
from __future__ import annotations

import argparse

from tinyfw.models.bert import SentenceEncoder

DEVICES = ["CPU", "CL", "CUDA", "WEBGPU", "CUDAEMU", "NUMPY"]
DOCUMENTS = [
    "Photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen.",
    "The Eiffel Tower was finished in 1889 for the World's Fair in Paris.",
    "A sports car accelerates from zero to 100 km/h in under four seconds.",
    "Regular exercise lowers blood pressure and improves sleep.",
    "The central bank raised interest rates to slow inflation.",
    "Python lists can grow and shrink; tuples cannot be changed.",
    "Volcanoes erupt when magma rises through cracks in the crust.",
    "The recipe needs flour, eggs, butter and a pinch of salt.",
    "Penguins cannot fly, but they swim fast in cold water.",
    "A neural network learns its weights by gradient descent.",
    "The train to Berlin leaves from platform 4 at 9:15.",
    "Mozart wrote his first symphony when he was eight years old.",
]


def rank(query: str, documents: list[str], encoder: SentenceEncoder) -> list[tuple[float, str]]:
    """(score, document) for every document, best first; score is the cosine similarity."""
    vectors = encoder.embed([query, *documents])  # row 0 is the query
    scores = (vectors[1:] @ vectors[0]).numpy().tolist()
    return sorted(zip(scores, documents), key=lambda pair: -pair[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rank a small built-in set of documents by "
                                     "meaning against a query, with all-MiniLM-L6-v2.")
    parser.add_argument("query", help="what to search for")
    parser.add_argument("--top", type=int, default=5, help="how many results to print")
    parser.add_argument("--device", choices=DEVICES, default=None,
                        help="tinyfw's device (default: $DEVICE, else CPU)")
    args = parser.parse_args(argv)
    encoder = SentenceEncoder(device=args.device)
    print(f"query: {args.query}")
    for place, (score, document) in enumerate(rank(args.query, DOCUMENTS, encoder)[:args.top]):
        print(f"{place + 1:>2}. {score:.3f}  {document}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
