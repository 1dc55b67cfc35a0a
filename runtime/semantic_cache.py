"""Semantic cache: a near-duplicate of a cached request is answered with the cached answer. Opt-in per route, off
by default (docs/cache.md: its precision on a labelled set is what an operator should read before turning it on).

A request is a near-duplicate of a kept one when everything but its text is identical (the *scope*: API, route,
tenant, model, sampling parameters, the roles of its messages) and the embeddings of its text are at least
`threshold` apart in cosine similarity. The index only points at entries of the exact cache
(runtime/response_cache.py): the answer itself, its bounds, expiry and sharing between replicas stay there; an index
entry whose answer has gone is a miss. The index is this replica's own (bounded, least recently added go first).

Embedders (`Embedder`): `HashedEmbedder`, built in: word unigrams and bigrams hashed into a fixed-size vector,
lexical, catches re-typed, re-cased, re-punctuated and lightly re-worded prompts, not paraphrases; or an
OpenAI-compatible `/v1/embeddings` endpoint (backends/embeddings.py).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import orjson
from specgate.controllers.classifier import content_text

__all__ = ["Embedder", "HashedEmbedder", "Match", "SemanticIndex", "semantic_scope", "semantic_text"]

_WORD = re.compile(r"\w+", re.UNICODE)


class Embedder(Protocol):
    async def embed(self, text: str) -> np.ndarray | None:
        """A unit-length vector for `text`, or None when none can be had (the lookup is then a miss)."""
        ...


class HashedEmbedder:
    """Lexical embedding: lower-cased word unigrams and bigrams, sublinear counts, hashed (CRC-32) into `dims`
    buckets, L2-normalised. Deterministic across processes; ~20 us for a short prompt."""

    def __init__(self, dims: int = 4096) -> None:
        self.dims = dims

    def vector(self, text: str) -> np.ndarray:
        words = _WORD.findall(text.lower())
        counts: dict[int, int] = {}
        for feature in (*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))):
            bucket = zlib.crc32(feature.encode()) % self.dims
            counts[bucket] = counts.get(bucket, 0) + 1
        vec = np.zeros(self.dims, dtype=np.float32)
        for bucket, n in counts.items():
            vec[bucket] = 1.0 + math.log(n)
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    async def embed(self, text: str) -> np.ndarray | None:
        return self.vector(text)


def semantic_text(api: str, body: Mapping[str, Any]) -> str:
    """The text compared: every message's text in order, or the prompt."""
    if api == "chat":
        return "\n".join(content_text(m.get("content")) for m in body.get("messages", []) if isinstance(m, dict))
    prompt = body.get("prompt")
    return prompt if isinstance(prompt, str) else ""


def semantic_scope(api: str, route: str, tenant: str | None, canonical: bytes) -> bytes | None:
    """Everything but the text, as a digest: two requests are compared only within one scope. None for bodies the
    semantic cache does not take (several prompts, non-text content)."""
    body = orjson.loads(canonical)
    if api == "chat":
        messages = body.pop("messages", None)
        if not isinstance(messages, list):
            return None
        # The roles (and any non-text fields such as tool calls) must match exactly; only the texts may differ.
        body["messages"] = [
            {k: v for k, v in m.items() if k != "content"} | {"content": isinstance(m.get("content"), str | list)}
            for m in messages
            if isinstance(m, dict)
        ]
    else:
        if not isinstance(body.pop("prompt", None), str):
            return None
    h = hashlib.blake2b(digest_size=16)
    for part in (api, route, tenant or ""):
        h.update(len(part).to_bytes(4, "big") + part.encode())
    h.update(orjson.dumps(body, option=orjson.OPT_SORT_KEYS))
    return h.digest()


@dataclass(frozen=True, slots=True)
class Match:
    key: bytes  # the exact cache's key of the kept answer
    similarity: float


class SemanticIndex:
    """Per scope, the vectors of kept answers and their exact-cache keys. Bounded to `max_entries` over all scopes
    (the oldest go first) and to entries younger than `ttl_s` (the exact cache forgets them then anyway)."""

    def __init__(
        self, threshold: float, max_entries: int, ttl_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.threshold = threshold
        self.max_entries = max_entries
        self.ttl_s = ttl_s
        self._clock = clock
        # key -> (scope, vector, added at); insertion order is age order.
        self._entries: OrderedDict[bytes, tuple[bytes, np.ndarray, float]] = OrderedDict()
        self._by_scope: dict[bytes, dict[bytes, np.ndarray]] = {}
        # Lookups that missed, waiting for their fresh answer to be kept: key -> (scope, vector).
        self._pending: OrderedDict[bytes, tuple[bytes, np.ndarray]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def nearest(self, scope: bytes, vector: np.ndarray) -> Match | None:
        """The most similar kept request of the scope at or above the threshold, if any."""
        members = self._by_scope.get(scope)
        if not members:
            return None
        now = self._clock()
        keys = [k for k in members if now - self._entries[k][2] <= self.ttl_s]
        if not keys:
            return None
        sims = np.stack([members[k] for k in keys]) @ vector
        best = int(np.argmax(sims))
        similarity = float(sims[best])
        return Match(keys[best], similarity) if similarity >= self.threshold else None

    def expect(self, key: bytes, scope: bytes, vector: np.ndarray) -> None:
        """A miss whose answer may be kept under `key`: index it when `commit(key)` says it was."""
        self._pending[key] = (scope, vector)
        self._pending.move_to_end(key)
        while len(self._pending) > self.max_entries:
            self._pending.popitem(last=False)

    def commit(self, key: bytes) -> None:
        pending = self._pending.pop(key, None)
        if pending is None:
            return
        scope, vector = pending
        self.forget(key)
        self._entries[key] = (scope, vector, self._clock())
        self._by_scope.setdefault(scope, {})[key] = vector
        while len(self._entries) > self.max_entries:
            self.forget(next(iter(self._entries)))

    def forget(self, key: bytes) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        members = self._by_scope.get(entry[0])
        if members is not None:
            members.pop(key, None)
            if not members:
                del self._by_scope[entry[0]]
