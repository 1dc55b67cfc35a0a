"""API keys -> tenants, and per-tenant request and token limits shared by all replicas.

Keys are never stored or compared in clear: config and Redis hold SHA-256 hex digests (`specgate hash-key`), and a
presented key is hashed before lookup. Keys are read from `Authorization: Bearer <key>` (what OpenAI clients send)
or `x-api-key`. Limits are fixed one-minute windows in the state store (atomic INCRBY in Redis, so they hold across
replicas); tokens are charged after the answer (prompt + completion) and a tenant over its token budget is refused
until the window turns. When Redis is away, each replica limits on its own counters (a limit per replica rather
than none) and says so in its log and `specgate_state_store_up`.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from typing import Protocol

from specgate.backends.state_store import MemoryStateStore, StateStore, StoreUnavailable
from specgate.runtime.metrics import GatewayMetrics

from specgate.config import AuthConfig, TenantLimits
from specgate.errors import RateLimited, Unauthorized

__all__ = ["Authenticator", "RateLimiter", "hash_key"]

log = logging.getLogger("specgate.auth")
WINDOW_S = 60
_CACHE_S = 30.0


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class _Headers(Protocol):
    def get(self, key: str, /) -> str | None: ...


def presented_key(headers: _Headers) -> str | None:
    get = headers.get
    auth = get("authorization") or ""
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return get("x-api-key") or None


class Authenticator:
    def __init__(self, config: AuthConfig, store: StateStore, metrics: GatewayMetrics) -> None:
        self.required = config.key_required()
        self._keys = {k.sha256: k.tenant for k in config.api_keys}
        self._store = store
        self._metrics = metrics
        # sha256 -> (tenant or None, expiry): keys added in Redis are found without a round trip per request.
        self._cache: dict[str, tuple[str | None, float]] = {}

    async def tenant(self, headers: _Headers) -> str | None:
        """The caller's tenant; None for anonymous calls when keys are optional. Raises Unauthorized (401)."""
        key = presented_key(headers)
        if key is None:
            if self.required:
                self._metrics.auth_failures.labels("missing").inc()
                raise Unauthorized("this gateway needs an API key: send 'Authorization: Bearer <key>'")
            return None
        digest = hash_key(key)
        tenant = self._keys.get(digest)
        if tenant is None:
            tenant = await self._lookup(digest)
        if tenant is None and self.required:
            self._metrics.auth_failures.labels("invalid").inc()
            raise Unauthorized("invalid API key")
        # Keys optional: OpenAI clients always send one, so an unknown key is simply anonymous.
        return tenant

    async def _lookup(self, digest: str) -> str | None:
        now = time.monotonic()
        cached = self._cache.get(digest)
        if cached is not None and cached[1] > now:
            return cached[0]
        try:
            tenant = await self._store.tenant_for_key(digest)
        except StoreUnavailable:
            return cached[0] if cached else None
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = (tenant, now + (_CACHE_S if tenant else 5.0))
        return tenant


class RateLimiter:
    def __init__(self, tenants: dict[str, TenantLimits], store: StateStore, metrics: GatewayMetrics) -> None:
        self._limits = tenants
        self._store = store
        self._local = MemoryStateStore()
        self._metrics = metrics

    def reconfigure(self, tenants: dict[str, TenantLimits]) -> None:
        """A reloaded config's limits; the windows counted so far (in the store, or here) carry on."""
        self._limits = tenants

    async def _add(self, key: str, amount: int) -> tuple[int, float]:
        try:
            return await self._store.add_to_window(key, amount, WINDOW_S)
        except StoreUnavailable:
            return await self._local.add_to_window(key, amount, WINDOW_S)

    async def admit(self, tenant: str | None) -> dict[str, str]:
        """Count one request; returns the x-ratelimit-* headers, or raises RateLimited (429, Retry-After)."""
        limits = self._limits.get(tenant) if tenant else None
        if limits is None or tenant is None:
            return {}
        headers: dict[str, str] = {}
        if limits.requests_per_min is not None:
            used, reset = await self._add(f"{tenant}:req", 1)
            headers |= _headers("requests", limits.requests_per_min, used, reset)
            if used > limits.requests_per_min:
                self._refuse(tenant, "requests", reset, headers)
        if limits.tokens_per_min is not None:
            used, reset = await self._add(f"{tenant}:tok", 0)
            headers |= _headers("tokens", limits.tokens_per_min, used, reset)
            if used >= limits.tokens_per_min:
                self._refuse(tenant, "tokens", reset, headers)
        return headers

    async def charge(self, tenant: str | None, tokens: int) -> None:
        limits = self._limits.get(tenant) if tenant else None
        if limits is None or limits.tokens_per_min is None or tokens <= 0:
            return
        await self._add(f"{tenant}:tok", tokens)

    def _refuse(self, tenant: str, what: str, reset: float, headers: dict[str, str]) -> None:
        self._metrics.rate_limited.labels(tenant, what).inc()
        err = RateLimited(
            f"rate limit reached for {what} per minute; retry after {math.ceil(reset)} s",
            retry_after_s=max(1, math.ceil(reset)),
        )
        err.extra_headers = headers
        raise err


def _headers(what: str, limit: int, used: int, reset: float) -> dict[str, str]:
    return {
        f"x-ratelimit-limit-{what}": str(limit),
        f"x-ratelimit-remaining-{what}": str(max(0, limit - used)),
        f"x-ratelimit-reset-{what}": f"{max(0.0, reset):.0f}s",
    }
