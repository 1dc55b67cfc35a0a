"""Precision and recall of the semantic cache's match rule on a labelled set (docs/cache.md).

`data/semantic/pairs.jsonl`: 60 pairs of requests, 30 that should be answered alike (the same request retyped,
re-cased, re-punctuated or lightly reworded) and 30 that should not (one entity, number, operation or a negation
changed; another question on the same topic). For each threshold: precision (of the pairs the rule would answer
from cache, the share that should be) and recall (of the pairs that should, the share it does). A false match
serves one request the answer to another, so precision is the figure to hold near 1.

    python bench/semantic_precision.py [--embedding-url URL --embedding-model NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import numpy as np
from specgate.backends.embeddings import EndpointEmbedder
from specgate.runtime.semantic_cache import Embedder, HashedEmbedder

PAIRS = Path(__file__).resolve().parent.parent / "data" / "semantic" / "pairs.jsonl"
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98)


async def similarities(embedder: Embedder, pairs: list[dict[str, object]]) -> list[float]:
    out = []
    for pair in pairs:
        a, b = await embedder.embed(str(pair["a"])), await embedder.embed(str(pair["b"]))
        assert a is not None and b is not None
        out.append(float(np.dot(a, b)))
    return out


def table(sims: list[float], labels: list[bool]) -> str:
    rows = ["| threshold | matched | precision | recall |", "| --- | --- | --- | --- |"]
    positives = sum(labels)
    for t in THRESHOLDS:
        chosen = [m for s, m in zip(sims, labels, strict=True) if s >= t]
        precision = sum(chosen) / len(chosen) if chosen else float("nan")
        rows.append(f"| {t:.2f} | {len(chosen)} | {precision:.3f} | {sum(chosen) / positives:.3f} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedding-url", default=None)
    ap.add_argument("--embedding-model", default=None)
    args = ap.parse_args()
    pairs = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    embedder: Embedder = (
        EndpointEmbedder(args.embedding_url, args.embedding_model or "", None, 30.0)
        if args.embedding_url
        else HashedEmbedder()
    )
    sims = asyncio.run(similarities(embedder, pairs))
    labels = [bool(p["match"]) for p in pairs]
    name = args.embedding_model or "built-in hashed lexical embedding"
    print(f"{name}: {len(pairs)} pairs ({sum(labels)} should match)\n")
    print(table(sims, labels))
    worst = sorted((s, p["a"], p["b"]) for s, p in zip(sims, pairs, strict=True) if not p["match"])[-3:]
    print("\nmost similar pairs that should not match:")
    for s, a, b in reversed(worst):
        print(f"  {s:.3f}  {a!r} / {b!r}")


if __name__ == "__main__":
    main()
