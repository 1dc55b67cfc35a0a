"""Semantic cache: a near-duplicate of a cached request is answered with the cached answer. Opt-in per route, off
by default (docs/cache.md: its precision on a labelled set is what an operator should read before turning it on).

A request is a near-duplicate of a kept one when everything but its text is identical (the *scope*: API, route,
tenant, model, sampling parameters, the roles of its messages) and the embeddings of its text are at least
`threshold` apart in cosine similarity. The index only points at entries of the exact cache
(runtime/response_cache.py): the answer itself, its bounds, expiry and sharing between replicas stay there; an index
entry whose answer has gone is a miss. The index is bounded (least recently added go first); with several replicas on
a shared store each tells the others what it indexed (`SemanticLog`, runtime/replica_logs.py), so a near-duplicate
of a request answered on one replica is a hit on every replica.

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
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import orjson
from specgate.controllers.classifier import content_text

__all__ = ["Embedder", "HashedEmbedder", "Match", "SemanticIndex", "SemanticLog", "semantic_scope", "semantic_text"]

_WORD = re.compile(r"\w+", re.UNICODE)


class Embedder(Protocol):
    async def embed(self, text: str) -> np.ndarray | None:
        """A unit-length vector for `text`, or None when none can be had (the lookup is then a miss)."""
        ...


class HashedEmbedder:
    """Lexical embedding: lower-cased word unigrams and bigrams, sublinear counts, hashed (CRC-32) into `dims`
    buckets, L2-normalised. Deterministic across processes. 1,024 buckets keep an index of 2,000 requests at 8 MB."""

    def __init__(self, dims: int = 1024) -> None:
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


class _Scope:
    """One scope's vectors as the rows of one matrix (grown by doubling, a removed row filled by the last), so a
    lookup is one matrix-vector product, not a stack of every vector."""

    def __init__(self, dims: int) -> None:
        self.keys: list[bytes] = []
        self.added: list[float] = []
        self.rows = np.zeros((4, dims), dtype=np.float32)
        self.where: dict[bytes, int] = {}

    def add(self, key: bytes, vector: np.ndarray, now: float) -> None:
        n = len(self.keys)
        if n == len(self.rows):
            self.rows = np.concatenate([self.rows, np.zeros_like(self.rows)])
        self.rows[n] = vector
        self.keys.append(key)
        self.added.append(now)
        self.where[key] = n

    def remove(self, key: bytes) -> None:
        i = self.where.pop(key)
        last = len(self.keys) - 1
        if i != last:
            moved = self.keys[last]
            self.rows[i] = self.rows[last]
            self.keys[i], self.added[i] = moved, self.added[last]
            self.where[moved] = i
        self.keys.pop()
        self.added.pop()

    def best(self, vector: np.ndarray, oldest: float) -> tuple[bytes, float] | None:
        n = len(self.keys)
        if n == 0 or vector.shape[0] != self.rows.shape[1]:
            return None
        sims = self.rows[:n] @ vector
        sims[np.asarray(self.added) < oldest] = -np.inf  # expired: the exact cache has let them go
        i = int(np.argmax(sims))
        return (self.keys[i], float(sims[i])) if np.isfinite(sims[i]) else None


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
        # key -> scope; insertion order is age order.
        self._entries: OrderedDict[bytes, bytes] = OrderedDict()
        self._scopes: dict[bytes, _Scope] = {}
        # Lookups that missed, waiting for their fresh answer to be kept: key -> (scope, vector).
        self._pending: OrderedDict[bytes, tuple[bytes, np.ndarray]] = OrderedDict()
        # Entries indexed here, not yet told to the other replicas (`SemanticLog`); kept only while shared.
        self._outbox: deque[tuple[bytes, bytes, np.ndarray, float]] = deque(maxlen=max(1, max_entries))
        self.shared = False

    def __len__(self) -> int:
        return len(self._entries)

    def nearest(self, scope: bytes, vector: np.ndarray) -> Match | None:
        """The most similar kept request of the scope at or above the threshold, if any."""
        members = self._scopes.get(scope)
        if members is None:
            return None
        found = members.best(vector, self._clock() - self.ttl_s)
        if found is None or found[1] < self.threshold:
            return None
        return Match(*found)

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
        self._add(key, scope, vector, self._clock())
        if self.shared:
            self._outbox.append((key, scope, vector, time.time()))

    def merge(self, key: bytes, scope: bytes, vector: np.ndarray, wall_at: float) -> bool:
        """Another replica indexed `key` at wall-clock time `wall_at`: indexed here too unless known or expired."""
        age = max(0.0, time.time() - wall_at)
        members = self._scopes.get(scope)
        if key in self._entries or age >= self.ttl_s or (members is not None and members.rows.shape[1] != len(vector)):
            return False
        self._add(key, scope, vector, self._clock() - age)
        return True

    def drain(self) -> list[tuple[bytes, bytes, np.ndarray, float]]:
        """Entries indexed here since the last drain: (key, scope, vector, wall-clock time)."""
        out = list(self._outbox)
        self._outbox.clear()
        return out

    def _add(self, key: bytes, scope: bytes, vector: np.ndarray, added: float) -> None:
        self.forget(key)
        self._entries[key] = scope
        if scope not in self._scopes:
            self._scopes[scope] = _Scope(vector.shape[0])
        self._scopes[scope].add(key, vector, added)
        while len(self._entries) > self.max_entries:
            self.forget(next(iter(self._entries)))

    def forget(self, key: bytes) -> None:
        scope = self._entries.pop(key, None)
        if scope is None:
            return
        members = self._scopes[scope]
        members.remove(key)
        if not members.keys:
            del self._scopes[scope]


class SemanticLog:
    """The index shared between replicas (runtime/replica_logs.py): entries indexed here out, the others' in."""

    name = "semantic"

    def __init__(self, index: SemanticIndex) -> None:
        self._index = index
        index.shared = True

    def outgoing(self) -> list[bytes]:
        return [
            orjson.dumps([key.hex(), scope.hex(), at, vector.astype(np.float32).tobytes().hex()])
            for key, scope, vector, at in self._index.drain()
        ]

    def take(self, raw: bytes) -> bool:
        try:
            key, scope, at, vector = orjson.loads(raw)
            decoded = np.frombuffer(bytes.fromhex(vector), dtype=np.float32)
            return self._index.merge(bytes.fromhex(key), bytes.fromhex(scope), decoded, float(at))
        except (orjson.JSONDecodeError, TypeError, ValueError):
            return False  # another version's shape or garbage: skipped
