"""Exact response cache: a repeated identical request is answered from memory instead of being generated again.

- Key: the model, the route, the tenant (one tenant never gets another's answer), the API, whether it streams,
  and the client's body with its keys sorted, less what cannot change the answer (speculation settings: drafts never
  change the output; `stream_options`; `user`).
- Only answers that the same request would reproduce: temperature 0 or a fixed `seed` (the engine's own seeded
  sampling), unless the route opts in (`routing.routes[].cache: always`).
- Only complete, successful answers: a 200 body, or a stream that ended with `[DONE]`, kept as the events the client
  got and replayed with the same chunking (usage included).
- Bounded: entries expire after `ttl_s`; least recently used entries go when `max_entries` or `max_bytes` would be
  exceeded; an answer over `max_entry_bytes` is not kept.
- The client's `Cache-Control: no-cache` skips the lookup (the fresh answer is kept); `no-store` skips both.

In this replica's memory; runtime/shared_cache.py adds the shared store. Pure data structure.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

__all__ = [
    "CachedAnswer",
    "ResponseCache",
    "cache_control",
    "cache_key",
    "canonical_body",
    "decode_answer",
    "deterministic",
    "encode_answer",
]

# Body keys that never change what the engine writes (`stream_options` does: whether the usage chunk comes).
_IGNORED = frozenset({"user"})
# vllm_xargs keys that only steer speculation (the output is the same whatever k).
_SPECULATION_XARGS = frozenset({"num_speculative_tokens", "specgate_k_schedule"})


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """A complete answer: a JSON body, or the SSE events of a stream in the order (and grouping) they were sent."""

    status: int
    body: bytes | None
    events: tuple[bytes, ...]
    headers: tuple[tuple[bytes, bytes], ...]
    stored_at: float

    @property
    def size(self) -> int:
        return len(self.body or b"") + sum(len(e) for e in self.events) + sum(len(k) + len(v) for k, v in self.headers)


def encode_answer(status: int, body: bytes | None, events: tuple[bytes, ...]) -> bytes:
    """For the shared store: JSON, the bytes as latin-1 text (one character per byte, nothing lost)."""
    return orjson.dumps(
        {
            "s": status,
            "b": body.decode("latin-1") if body is not None else None,
            "e": [e.decode("latin-1") for e in events],
        }
    )


def decode_answer(raw: bytes, now: float) -> CachedAnswer | None:
    """None for anything that is not what `encode_answer` wrote (another version, a damaged value)."""
    try:
        data = orjson.loads(raw)
        status, body, events = data["s"], data["b"], data["e"]
        if not isinstance(status, int) or not isinstance(events, list) or not (body is None or isinstance(body, str)):
            return None
        return CachedAnswer(
            status,
            body.encode("latin-1") if body is not None else None,
            tuple(e.encode("latin-1") for e in events),
            (),
            now,
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, UnicodeEncodeError):
        return None


def deterministic(body: Mapping[str, Any]) -> bool:
    """Whether the same request gets the same answer: greedy decoding, or sampling with a fixed seed."""
    temperature = body.get("temperature")
    seed = body.get("seed")
    greedy = isinstance(temperature, int | float) and not isinstance(temperature, bool) and temperature == 0
    return greedy or (isinstance(seed, int) and not isinstance(seed, bool))


def canonical_body(body: Mapping[str, Any]) -> bytes:
    """The client's body as it decides the answer: keys sorted, speculation settings and `user` left out. Taken
    before the gateway shapes the body (the k it adds must not split the cache)."""
    out = {k: v for k, v in body.items() if k not in _IGNORED}
    xargs = out.get("vllm_xargs")
    if isinstance(xargs, dict):
        kept = {k: v for k, v in xargs.items() if k not in _SPECULATION_XARGS}
        if kept:
            out["vllm_xargs"] = kept
        else:
            del out["vllm_xargs"]
    return orjson.dumps(out, option=orjson.OPT_SORT_KEYS)


def cache_key(api: str, route: str, tenant: str | None, canonical: bytes) -> bytes:
    """A digest of everything that decides the answer (the body's own `stream` and `model` included)."""
    h = hashlib.blake2b(digest_size=24)
    for part in (api.encode(), route.encode(), (tenant or "").encode()):
        h.update(len(part).to_bytes(4, "big"))
        h.update(part)
    h.update(canonical)
    return h.digest()


CacheMode = Literal["use", "refresh", "bypass"]


def cache_control(header: str | None) -> CacheMode:
    """The client's Cache-Control: `no-store` -> bypass (neither read nor kept), `no-cache` -> refresh (not read,
    kept), else use."""
    if not header:
        return "use"
    directives = {d.strip().split("=", 1)[0].lower() for d in header.split(",")}
    if "no-store" in directives:
        return "bypass"
    if "no-cache" in directives:
        return "refresh"
    return "use"


class ResponseCache:
    """LRU with a time to live, bounded in entries and bytes."""

    def __init__(
        self,
        ttl_s: float,
        max_entries: int,
        max_bytes: int,
        max_entry_bytes: int,
        clock: Any = time.monotonic,
        on_evict: Any = None,
    ) -> None:
        self._on_evict = on_evict
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self._clock = clock
        self._entries: OrderedDict[bytes, CachedAnswer] = OrderedDict()
        self.bytes = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> CachedAnswer | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._clock() - entry.stored_at > self.ttl_s:
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return entry

    def put(
        self,
        key: bytes,
        status: int,
        body: bytes | None,
        events: tuple[bytes, ...] = (),
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> bool:
        """Keep an answer; False when it is too big to keep."""
        entry = CachedAnswer(status, body, events, headers, self._clock())
        if entry.size > self.max_entry_bytes:
            return False
        if key in self._entries:
            self._drop(key)
        self._entries[key] = entry
        self.bytes += entry.size
        while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
            oldest = next(iter(self._entries))
            self._drop(oldest)
            self.evictions += 1
            if self._on_evict is not None:
                self._on_evict()
        return True

    def _drop(self, key: bytes) -> None:
        entry = self._entries.pop(key)
        self.bytes -= entry.size
