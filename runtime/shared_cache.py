"""The response cache as the gateway uses it: this replica's memory first, then the shared store (Redis), which
every replica reads and writes so that an answer generated on one is a hit on the others. Fails open: a store
that is away or slow costs a miss, never a failed request (counted in `specgate_cache_errors_total`)."""

from __future__ import annotations

import asyncio
import logging
import time

from specgate.backends.state_store import StateStore, StoreUnavailable
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.response_cache import CachedAnswer, ResponseCache, decode_answer, encode_answer
from specgate.runtime.semantic_cache import SemanticIndex

__all__ = ["SharedCache"]

log = logging.getLogger("specgate.cache")


class SharedCache:
    def __init__(
        self,
        local: ResponseCache,
        store: StateStore,
        metrics: GatewayMetrics,
        semantic: SemanticIndex | None = None,
    ) -> None:
        self.local = local
        # Near-duplicate lookups (runtime/semantic_cache.py): an answer kept under a key a semantic lookup missed
        # on is indexed for the next near-duplicate.
        self.semantic = semantic
        self._store = store
        self._shared = store.kind != "memory"
        self._metrics = metrics
        self._writes: set[asyncio.Task[None]] = set()

    async def get(self, key: bytes) -> CachedAnswer | None:
        hit = self.local.get(key)
        if hit is not None or not self._shared:
            return hit
        try:
            raw = await self._store.cache_get(key)
        except StoreUnavailable as exc:
            self._failed("read", exc)
            return None
        found = decode_answer(raw, time.monotonic()) if raw is not None else None
        if found is not None:
            self.local.put(key, found.status, found.body, found.events)  # warm this replica
        return found

    def put(self, key: bytes, status: int, body: bytes | None, events: tuple[bytes, ...] = ()) -> None:
        """Keep it here at once, and in the store in the background (the answer has been sent already)."""
        if not self.local.put(key, status, body, events):
            return
        if self.semantic is not None:
            self.semantic.commit(key)
        if not self._shared:
            return
        task = asyncio.create_task(self._share(key, encode_answer(status, body, events)))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _share(self, key: bytes, value: bytes) -> None:
        try:
            await self._store.cache_put(key, value, self.local.ttl_s)
        except StoreUnavailable as exc:
            self._failed("write", exc)

    def _failed(self, what: str, exc: StoreUnavailable) -> None:
        self._metrics.cache_errors.labels(what).inc()
        log.warning("response cache store failed; serving without it", extra={"operation": what, "error": str(exc)})
