"""Background loops that keep endpoint state fresh: active health checks and /metrics scraping.

Both use their own small httpx client so a saturated relay pool can never starve them, and both
swallow and record every error: a monitor loop that dies would silently freeze routing decisions.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import httpx
from specgate.backends.pool import Endpoint, PoolSet
from specgate.backends.vllm_metrics import EngineSnapshot, parse_vllm_metrics

from specgate.config import HealthConfig, ScrapeConfig

__all__ = ["EndpointMonitor"]

log = logging.getLogger("specgate.monitor")


class EndpointMonitor:
    def __init__(
        self,
        pools: PoolSet,
        health: HealthConfig,
        scrape: ScrapeConfig,
        *,
        on_snapshot: Callable[[Endpoint, EngineSnapshot | None, EngineSnapshot], None] | None = None,
        on_health: Callable[[Endpoint], None] | None = None,
    ) -> None:
        self._pools = pools
        self._health = health
        self._scrape = scrape
        self._on_snapshot = on_snapshot
        self._on_health = on_health
        self._client = httpx.AsyncClient(limits=httpx.Limits(max_connections=64, max_keepalive_connections=32))
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        # One health round before serving, so /readyz and picking start from facts, not guesses.
        await self.check_all()
        self._tasks = [
            asyncio.create_task(self._loop(self.check_all, self._health.interval_s), name="health-checks"),
            asyncio.create_task(self._loop(self.scrape_all, self._scrape.interval_s), name="metrics-scrape"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self._client.aclose()

    async def _loop(self, fn: Callable[[], Awaitable[None]], interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await fn()
            except Exception:  # pragma: no cover - defensive; each check handles its own errors
                log.exception("monitor round failed")

    async def check_all(self) -> None:
        await asyncio.gather(*(self.check(ep) for ep in self._pools.endpoints()))

    async def scrape_all(self) -> None:
        await asyncio.gather(*(self.scrape(ep) for ep in self._pools.endpoints()))

    async def check(self, ep: Endpoint) -> None:
        error: str | None = None
        try:
            resp = await self._client.get(f"{ep.url}/health", timeout=self._health.timeout_s)
            if resp.status_code != 200:
                error = f"health check answered HTTP {resp.status_code}"
        except httpx.HTTPError as exc:
            error = f"health check failed: {type(exc).__name__}"
        before = ep.healthy
        ep.record_health(
            error is None,
            error,
            unhealthy_after=self._health.unhealthy_after,
            healthy_after=self._health.healthy_after,
        )
        if ep.healthy != before:
            log.info(
                "endpoint health changed",
                extra={"pool": ep.pool, "endpoint": ep.url, "healthy": ep.healthy, "reason": error},
            )
        if self._on_health:
            self._on_health(ep)

    async def scrape(self, ep: Endpoint) -> None:
        if ep.healthy is False:
            return
        try:
            resp = await self._client.get(f"{ep.url}/metrics", timeout=self._scrape.timeout_s)
            resp.raise_for_status()
            snap = parse_vllm_metrics(resp.text)
        except (httpx.HTTPError, ValueError) as exc:
            log.debug("scrape failed", extra={"endpoint": ep.url, "error": type(exc).__name__})
            return
        previous = ep.snapshot
        ep.snapshot = snap
        ep.snapshot_at = time.monotonic()
        if self._on_snapshot:
            self._on_snapshot(ep, previous, snap)
