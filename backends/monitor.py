"""Background loops that keep endpoint state fresh: active health checks, /metrics scraping and capability
discovery (backends/capabilities.py: at startup, when an endpoint comes back, when its counters reset, and every
`discovery.recheck_s`).

Both use their own small httpx client so a saturated relay pool can never starve them, and both
swallow and record every error: a monitor loop that dies would silently freeze routing decisions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Awaitable, Callable

import httpx
from specgate.backends.capabilities import discover, expected
from specgate.backends.pool import Endpoint, Pool, PoolSet
from specgate.backends.sglang import discover_sglang, parse_sglang_metrics
from specgate.backends.vllm_metrics import EngineSnapshot, parse_vllm_metrics
from specgate.controllers.capabilities import EngineFacts, Expected, mismatches

from specgate.config import DiscoveryConfig, HealthConfig, PoolConfig, ScrapeConfig

__all__ = ["EndpointMonitor"]


def _client(context: ssl.SSLContext | None, server_name: str | None) -> httpx.AsyncClient:
    hooks = {}
    if server_name:

        async def sni(request: httpx.Request) -> None:
            # Verify the certificate against (and send SNI for) the configured name, as the relay does.
            request.extensions["sni_hostname"] = server_name

        hooks["request"] = [sni]
    return httpx.AsyncClient(
        limits=httpx.Limits(max_connections=64, max_keepalive_connections=32),
        # The system's CAs by default, as the relay's client (httpx alone would use certifi's).
        verify=context if context is not None else ssl.create_default_context(),
        trust_env=False,
        event_hooks=hooks,
    )


log = logging.getLogger("specgate.monitor")


def scrape_failure(exc: Exception) -> str:
    """The metric label for why a scrape gave no reading."""
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.TransportError):
        return "connect"
    if isinstance(exc, httpx.HTTPStatusError):
        return "status"
    if isinstance(exc, ValueError):
        return "parse"
    return "other"


class EndpointMonitor:
    def __init__(
        self,
        pools: PoolSet,
        health: HealthConfig,
        scrape: ScrapeConfig,
        *,
        on_snapshot: Callable[[Endpoint, EngineSnapshot | None, EngineSnapshot], None] | None = None,
        on_health: Callable[[Endpoint], None] | None = None,
        on_scrape_failed: Callable[[Endpoint, str], None] | None = None,
        discovery: DiscoveryConfig | None = None,
        on_facts: Callable[[Endpoint, EngineFacts | None], None] | None = None,
        tested_versions: tuple[str, ...] = (),
    ) -> None:
        self._pools = pools
        self._health = health
        self._scrape = scrape
        self._on_snapshot = on_snapshot
        self._on_health = on_health
        self._on_scrape_failed = on_scrape_failed
        self._retiring: set[Endpoint] = set()
        self._live_before: set[Endpoint] = set()
        self._discovery = discovery if discovery is not None else DiscoveryConfig(enabled=False)
        self._on_facts = on_facts
        self._tested = tested_versions
        self._expected: dict[str, Expected] = {}
        self._models: dict[str, str] = {}
        self._sglang: set[str] = set()
        self._configs: dict[str, PoolConfig] = {}
        # One client per pool: its TLS settings are the relay's (backends/tls.py), and like the relay it ignores the
        # HTTP(S)_PROXY variables, so that both reach (and judge) an endpoint the same way.
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._learn(pools.pools)
        self._tasks: list[asyncio.Task[None]] = []
        self._discovering: dict[Endpoint, asyncio.Task[None]] = {}
        # Clients a reload replaced, closed once it is installed.
        self._retired: list[httpx.AsyncClient] = []

    def _learn(self, pools: list[Pool]) -> None:
        for p in pools:
            before = self._configs.get(p.name)
            if before is None or before.tls != p.config.tls:
                self._clients[p.name] = _client(p.ssl_context, p.config.tls.server_name)
            self._configs[p.name] = p.config
            self._expected[p.name] = expected(p.config, self._tested if p.config.engine == "vllm" else ())
            self._models[p.name] = p.config.model
            if p.config.engine == "sglang":
                self._sglang.add(p.name)
            else:
                self._sglang.discard(p.name)

    async def stage(self, staged: PoolSet) -> None:
        """Before a reloaded config's pools take traffic: know them (clients, expected facts), and health-check the
        endpoints that are new, so that one that does not answer gets none. Pools on their way out keep their
        clients until `installed`."""
        live = self._live_before = set(self._pools.endpoints())
        superseded = {name: self._clients.get(name) for name in self._configs}
        self._learn(staged.pools)
        self._retired = [c for name, c in superseded.items() if c is not None and self._clients.get(name) is not c]
        await asyncio.gather(*(self.check(ep) for ep in staged.endpoints() if ep not in live))

    async def installed(self, changed_pools: set[str]) -> None:
        """After the reload's pools are live: forget removed pools, close clients no longer used, and rediscover the
        endpoints of pools whose config changed (their facts were judged against the old one)."""
        # A round that started before the swap may still finish for endpoints the reload removed: their results must
        # not bring back the series it dropped (callbacks skip them). Set before this method's first await, which is
        # the first chance such a round has to run after the swap; a reload that failed never gets here.
        self._retiring = self._live_before - set(self._pools.endpoints())
        names = {p.name for p in self._pools.pools}
        gone = [name for name in self._configs if name not in names]
        for name in gone:
            self._retired.append(self._clients.pop(name))
            for table in (self._configs, self._expected, self._models):
                table.pop(name, None)
            self._sglang.discard(name)
        retired, self._retired = self._retired, []
        await asyncio.gather(*(c.aclose() for c in retired), return_exceptions=True)
        for ep in self._pools.endpoints():
            if ep.pool in changed_pools and ep.healthy:
                self._rediscover(ep, "its pool's config was reloaded")

    async def start(self) -> None:
        # One health round (and a discovery of what answered) before serving, so /readyz, picking and the k sent to
        # each pool start from facts, not guesses.
        await self.check_all()
        # Bounded: a busy engine must not hold the gateway's start. Endpoints left unknown are discovered in the
        # background after the next health check.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._discovery.timeout_s):
                await self.discover_all()
        self._tasks = [
            asyncio.create_task(self._loop(self.check_all, self._health.interval_s), name="health-checks"),
            asyncio.create_task(self._loop(self.scrape_all, self._scrape.interval_s), name="metrics-scrape"),
        ]
        if self._discovery.enabled:
            self._tasks.append(
                asyncio.create_task(self._loop(self.discover_all, self._discovery.recheck_s), name="discovery")
            )

    async def stop(self) -> None:
        tasks = [*self._tasks, *self._discovering.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks = []
        self._discovering.clear()
        await asyncio.gather(*(c.aclose() for c in self._clients.values()))

    async def discover_all(self) -> None:
        # Not those being discovered in the background already: two rounds of probes at once blur each other.
        todo = [ep for ep in self._pools.endpoints() if ep.healthy is not False and ep not in self._discovering]
        await asyncio.gather(*(self.discover(ep) for ep in todo))

    async def discover(self, ep: Endpoint) -> None:
        """Learn the endpoint's capabilities and compare them with its pool's config. Never raises."""
        if not self._discovery.enabled:
            return
        if ep.pool in self._sglang:
            facts = await discover_sglang(
                self._clients[ep.pool], ep.url, timeout_s=self._discovery.timeout_s, headers=ep.headers
            )
        else:
            facts = await discover(
                self._clients[ep.pool],
                ep.url,
                self._models[ep.pool],
                probe=self._discovery.probe,
                timeout_s=self._discovery.timeout_s,
                headers=ep.headers,
            )
        before = ep.facts
        ep.facts = facts
        found = tuple(mismatches(self._expected[ep.pool], facts))
        if found and found != ep.mismatches:
            log.warning(
                "endpoint contradicts its pool's config",
                extra={"pool": ep.pool, "endpoint": ep.url, "mismatches": list(found)},
            )
        ep.mismatches = found
        if self._on_facts and ep not in self._retiring:
            self._on_facts(ep, before)

    def _rediscover(self, ep: Endpoint, why: str) -> None:
        """Discovery in the background (a health check or scrape must not wait for probe requests)."""
        if not self._discovery.enabled or ep in self._discovering:
            return
        log.info("rediscovering endpoint capabilities", extra={"pool": ep.pool, "endpoint": ep.url, "reason": why})
        task = asyncio.create_task(self.discover(ep), name=f"discover {ep.url}")
        self._discovering[ep] = task
        task.add_done_callback(lambda _t: self._discovering.pop(ep, None))

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
            resp = await self._clients[ep.pool].get(
                f"{ep.url}/health", headers=ep.headers, timeout=self._health.timeout_s
            )
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
            if ep.healthy and before is False:
                self._rediscover(ep, "endpoint came back (a restart may have changed its flags)")
        if ep.healthy and ep.facts is None and self._tasks:
            self._rediscover(ep, "not discovered yet")
        if self._on_health and ep not in self._retiring:
            self._on_health(ep)

    async def scrape(self, ep: Endpoint) -> None:
        if ep.healthy is False:
            return
        try:
            resp = await self._clients[ep.pool].get(
                f"{ep.url}/metrics", headers=ep.headers, timeout=self._scrape.timeout_s
            )
            resp.raise_for_status()
            snap = parse_sglang_metrics(resp.text) if ep.pool in self._sglang else parse_vllm_metrics(resp.text)
        except (httpx.HTTPError, ValueError) as exc:
            log.debug("scrape failed", extra={"endpoint": ep.url, "error": type(exc).__name__})
            if self._on_scrape_failed and ep not in self._retiring:
                self._on_scrape_failed(ep, scrape_failure(exc))
            return
        previous = ep.snapshot
        ep.snapshot = snap
        ep.snapshot_at = time.monotonic()
        if previous is not None and snap.restarted_since(previous):
            self._rediscover(ep, "engine counters reset (restart)")
        if self._on_snapshot and ep not in self._retiring:
            self._on_snapshot(ep, previous, snap)
