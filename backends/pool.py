"""Pools of engine endpoints: their live state and how the gateway picks one.

An `Endpoint` holds what the gateway knows of one engine: requests outstanding from this gateway,
health (from active checks and from failed connects), and the last scrape of its /metrics.
A `PoolSet` maps served model names to pools. State changes happen on the event loop only.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from specgate.backends.tls import ssl_context
from specgate.backends.vllm_metrics import EngineSnapshot
from specgate.controllers.attribution import InFlightShares
from specgate.controllers.breaker import BreakerSettings, CircuitBreaker
from specgate.controllers.capabilities import EngineFacts
from specgate.controllers.picker import EndpointLoad, Scoring, pick_endpoint
from specgate.controllers.prefix_memory import PlacementMemory

from specgate.config import GatewayConfig, PoolConfig

__all__ = ["Endpoint", "Pool", "PoolSet"]


@dataclass(slots=True, eq=False)
class Endpoint:
    url: str
    pool: str
    outstanding: int = 0
    # None until the first health check answers.
    healthy: bool | None = None
    consecutive_failures: int = 0
    consecutive_successes: int = 0
    last_error: str | None = None
    snapshot: EngineSnapshot | None = None
    snapshot_at: float = 0.0
    breaker: CircuitBreaker = field(default_factory=CircuitBreaker)
    # What discovery verified (backends/capabilities.py); None until it has run. `mismatches`: where the endpoint
    # contradicts its pool's config.
    facts: EngineFacts | None = None
    mismatches: tuple[str, ...] = ()
    # This gateway's requests in flight here, by route, between two scrapes (counter-based acceptance).
    inflight: InFlightShares = field(default_factory=InFlightShares)
    # The pool's credentials (`pools[].auth`), sent with every request, health check and scrape. Never logged.
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    def load(self, now: float, stale_after_s: float) -> EndpointLoad:
        snap = self.snapshot
        fresh = snap is not None and now - self.snapshot_at <= stale_after_s
        return EndpointLoad(
            outstanding=self.outstanding,
            # An endpoint not yet checked may take traffic; a failed one, or one whose breaker is open, may not.
            healthy=self.healthy is not False and self.breaker.allows(now),
            running=snap.running if fresh and snap else None,
            waiting=snap.waiting if fresh and snap else None,
            kv_usage=snap.kv_usage if fresh and snap else None,
        )

    def record_health(self, ok: bool, error: str | None, *, unhealthy_after: int, healthy_after: int) -> None:
        if ok:
            self.consecutive_successes += 1
            self.consecutive_failures = 0
            self.last_error = None
            if self.healthy is not True and self.consecutive_successes >= healthy_after:
                self.healthy = True
        else:
            self.consecutive_failures += 1
            self.consecutive_successes = 0
            self.last_error = error
            if self.healthy is None or self.consecutive_failures >= unhealthy_after:
                self.healthy = False

    def describe(self) -> dict[str, object]:
        """What /readyz and GET /admin/pools show of the endpoint."""
        return {
            "url": self.url,
            "healthy": self.healthy,
            "outstanding": self.outstanding,
            "error": self.last_error,
            "capabilities": self.facts.as_dict() if self.facts is not None else None,
            "mismatches": list(self.mismatches),
        }

    def eject(self, error: str) -> None:
        """A refused connection is definitive: stop sending here until a health check passes."""
        self.healthy = False
        self.consecutive_successes = 0
        self.last_error = error


@dataclass(slots=True, eq=False)
class Pool:
    config: PoolConfig
    endpoints: list[Endpoint]
    stale_after_s: float
    _rotation: int = field(default=0)
    # The pool's TLS settings (backends/tls.py), shared by the relay and the monitor; None: the defaults.
    ssl_context: ssl.SSLContext | None = None
    # Scorer weights and load bound (config `picking`).
    scoring: Scoring = field(default_factory=Scoring)
    # Where each affinity key last went (config `picking.placement_memory`): a spilled conversation stays put.
    placements: PlacementMemory = field(default_factory=lambda: PlacementMemory(0))

    @property
    def name(self) -> str:
        return self.config.name

    def pick(self, exclude: set[Endpoint] | None = None, affinity: int | None = None) -> Endpoint | None:
        """The endpoint for the next try; `affinity`: the request's prefix key (controllers/prefix_key.py)."""
        now = time.monotonic()
        loads = [ep.load(now, self.stale_after_s) for ep in self.endpoints]
        skip = {i for i, ep in enumerate(self.endpoints) if ep in exclude} if exclude else ()
        self._rotation += 1
        names = [ep.url for ep in self.endpoints] if affinity is not None else []
        last = self.placements.get(affinity) if affinity is not None else None
        index = pick_endpoint(
            loads,
            skip,
            rotation=self._rotation,
            scoring=self.scoring,
            names=names,
            affinity=affinity,
            last=last,
            active=self._active_conversations(names) if affinity is not None and last is None else None,
        )
        if index is None:
            return None
        chosen = self.endpoints[index]
        if affinity is not None:
            self.placements.put(affinity, chosen.url, time.time())
        return chosen

    def _active_conversations(self, names: list[str]) -> list[int] | None:
        """Conversations each endpoint carries, for placing a new one; None without a memory (every key looks new)."""
        if self.placements.capacity == 0 or self.scoring.new_bound is None:
            return None
        return self.placements.active(names, time.time())

    def has_healthy_endpoint(self) -> bool:
        return any(ep.healthy for ep in self.endpoints)

    def describe(self) -> dict[str, object]:
        spec = self.config.speculation
        return {
            "model": self.config.model,
            "engine": self.config.engine,
            "speculation": {"method": spec.method, "max_k": spec.max_k, "per_request_k": spec.per_request_k},
            # What specgate acts on: False when an endpoint was found without the plugin.
            "per_request_k": self.per_request_k,
            "healthy_endpoints": sum(1 for ep in self.endpoints if ep.healthy),
            "endpoints": [{**ep.describe(), "acceptance_from": self.acceptance_from(ep)} for ep in self.endpoints],
        }

    def acceptance_from(self, ep: Endpoint) -> str:
        """Where a route's acceptance at this endpoint is learnt: "per_request" (each answer's speculation metrics),
        "counters" (the engine's counters shared between routes, controllers/attribution.py) or, for SGLang,
        "pool_gauge" (only the pool's mean, exported, no route's own). `auto` takes the counters only where discovery
        found the answers without metrics."""
        if self.config.engine == "sglang":
            return "pool_gauge"  # neither per-request figures nor counters (backends/sglang.py)
        source = self.config.speculation.acceptance_from
        if source != "auto":
            return source
        return "counters" if ep.facts is not None and ep.facts.per_request_metrics is False else "per_request"

    @property
    def per_request_k(self) -> bool:
        """Whether a per-request k sent to this pool is applied: the config says the plugin is loaded and no
        endpoint was found without it. One endpoint without it makes the whole pool a stock engine (requests are
        not pinned to endpoints, so a cap could land where it is ignored)."""
        if not self.config.speculation.per_request_k:
            return False
        return not any(ep.facts is not None and ep.facts.plugin is False for ep in self.endpoints)


class PoolSet:
    def __init__(self, config: GatewayConfig, carry: PoolSet | None = None) -> None:
        """`carry`: the set a reloaded config replaces; its endpoints still listed under the same pool are reused, with
        their health, breaker, load and discovered facts (the new config's credentials and breaker settings)."""
        stale = config.scrape.interval_s * config.scrape.stale_after_intervals
        b = config.breaker
        settings = BreakerSettings(b.failure_threshold, b.open_s, b.max_open_s)
        picking = config.picking
        scoring = Scoring(
            load=picking.weights.load,
            prefix=picking.weights.prefix,
            load_bound=picking.load_bound,
            load_slack=picking.load_slack,
            new_bound=picking.new_prefix_bound,
        )
        known = {(ep.pool, ep.url): ep for ep in carry.endpoints()} if carry is not None else {}
        memories = {pool.name: pool.placements for pool in carry.pools} if carry is not None else {}
        window_s = picking.conversation_window_s

        def placements(p: PoolConfig) -> PlacementMemory:
            kept = memories.get(p.name)
            if kept is not None and (kept.capacity, kept.window_s) == (picking.placement_memory, window_s):
                return kept
            return PlacementMemory(picking.placement_memory, window_s)

        def endpoint(p: PoolConfig, url: str) -> Endpoint:
            ep = known.get((p.name, url))
            if ep is None:
                return Endpoint(url, p.name, breaker=CircuitBreaker(settings), headers=p.auth.header_values())
            ep.breaker.settings, ep.headers = settings, p.auth.header_values()
            return ep

        self.pools: list[Pool] = [
            Pool(
                p,
                [endpoint(p, url) for url in p.endpoints],
                stale,
                ssl_context=ssl_context(p.tls) if p.tls.configured else None,
                scoring=scoring,
                placements=placements(p),
            )
            for p in config.pools
        ]
        self._index()

    def _index(self) -> None:
        self._by_name = {pool.name: pool for pool in self.pools}
        self._by_model: dict[str, list[Pool]] = {}
        for pool in self.pools:
            self._by_model.setdefault(pool.config.model, []).append(pool)

    def install(self, staged: PoolSet) -> None:
        """Serve `staged`'s pools from now on (a config reload), in place: everything holding this set sees them at
        once. Requests already planned keep their Pool objects, and with them the endpoints they started on."""
        self.pools = staged.pools
        self._index()

    def models(self) -> list[str]:
        return list(self._by_model)

    def pools_for(self, model: str) -> list[Pool] | None:
        return self._by_model.get(model)

    def pool(self, name: str) -> Pool | None:
        return self._by_name.get(name)

    def endpoints(self) -> list[Endpoint]:
        return [ep for pool in self.pools for ep in pool.endpoints]
