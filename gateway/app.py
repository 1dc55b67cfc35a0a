"""The ASGI application: routes of the OpenAI-compatible surface plus health, readiness and metrics.

`create_app(config)` builds everything from one validated config; nothing is global, so tests can run
several gateways in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import logging
import signal
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from opentelemetry.sdk.trace.export import SpanExporter
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from specgate.backends.embeddings import EndpointEmbedder
from specgate.backends.monitor import EndpointMonitor
from specgate.backends.pool import Endpoint, Pool, PoolSet
from specgate.backends.record_stream import RedisStreamSink, stream_key
from specgate.backends.spec_cap import TESTED_VLLM
from specgate.backends.state_store import make_store, redis_client
from specgate.backends.vllm_metrics import EngineSnapshot, SpecDelta, preemption_delta, spec_delta, step_delta
from specgate.controllers.attribution import attribute
from specgate.controllers.capabilities import CAPABILITIES, EngineFacts, lost
from specgate.controllers.kv_pressure import KvReading
from specgate.controllers.observations import Observation, ObservationSink
from specgate.gateway.admin import admin_router
from specgate.gateway.auth import Authenticator, RateLimiter, presented_key
from specgate.gateway.generation import PATHS, GenerationHandler, GenerationLimits, request_id
from specgate.gateway.openapi import generation_paths
from specgate.runtime.alerts import AlertDispatcher
from specgate.runtime.classifier_files import ClassifierLoadError
from specgate.runtime.classify import RequestClassifier
from specgate.runtime.control_loop import ControlLoop
from specgate.runtime.coordination import StoreCoordinator
from specgate.runtime.dispatch import Dispatcher, Plan
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.recorder import FileSink, RecordSink, WorkloadRecorder
from specgate.runtime.relay import Relay, RelayResult, StreamRelay
from specgate.runtime.reload import ConfigReloader, ConfigWatcher
from specgate.runtime.replica_logs import LogSync, PlacementLog, SharedLog
from specgate.runtime.requests import Api, ParsedRequest
from specgate.runtime.response_cache import ResponseCache
from specgate.runtime.semantic_cache import Embedder, HashedEmbedder, SemanticIndex, SemanticLog
from specgate.runtime.shared_cache import SharedCache
from specgate.runtime.tracing import Tracing
from specgate.runtime.worker_metrics import WorkerMetrics
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from specgate.config import ConfigError, GatewayConfig
from specgate.errors import (
    GatewayError,
    InvalidRequest,
    Overloaded,
    RateLimited,
    Unauthorized,
    error_body,
)

__all__ = ["create_app"]

log = logging.getLogger("specgate.access")
_JSON = "application/json"


class RequestIdMiddleware:
    """Echo the client's `x-request-id` (or make one) on every response, errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        asked = ""
        for key, value in scope["headers"]:
            if key == b"x-request-id":
                asked = value.decode("latin-1")
                break
        rid = request_id(asked)
        scope.setdefault("state", {})["request_id"] = rid
        encoded = rid.encode("latin-1")

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-request-id", encoded)]
            await send(message)

        await self.app(scope, receive, send_with_id)


def record_sink(config: GatewayConfig) -> RecordSink:
    """Where the workload record goes (`recording.sink`)."""
    rec = config.recording
    if rec.sink == "redis" and config.state.redis_url:
        client = redis_client(config.state.redis_url, config.state.timeout_s)
        return RedisStreamSink(client, stream_key(config.state.namespace), rec.stream_max_len)
    return FileSink(Path(rec.path), rec.max_bytes, rec.backups)


def _error_response(exc: GatewayError) -> Response:
    return Response(exc.body(), status_code=exc.status, media_type=_JSON, headers=exc.headers())


class Gateway:
    """Per-app state, wired from one config; serves the generation handler as its `GenerationDeps`."""

    def __init__(self, config: GatewayConfig, span_exporter: SpanExporter | None = None) -> None:
        self.config = config
        self.tracing = Tracing(config.tracing, span_exporter)
        self.metrics = GatewayMetrics()
        self.metrics.init_series(
            [p.name for p in config.pools],
            config.routing.route_names(),
            [r.name for r in config.alerts.receivers] + (["alertmanager"] if config.alerts.alertmanager else []),
        )
        self.pools = PoolSet(config)
        self.classifier = RequestClassifier(config.classifier, self.metrics, config.routing.class_labels())
        self.dispatcher = Dispatcher(config, self.pools, self.classifier)
        self.relay = Relay(config, self.metrics)
        self.sink = ObservationSink()
        self.alerts = AlertDispatcher(config.alerts, self.metrics)
        self.store = make_store(config.state)
        self.coordinator = StoreCoordinator(self.store, config.state.lease_ttl_s, self.metrics)
        self.control = ControlLoop(
            config, self.pools, self.sink, self.dispatcher, self.metrics, self.coordinator, self.alerts
        )
        self.auth = Authenticator(config.auth, self.store, self.metrics)
        self.limiter = RateLimiter(config.auth.tenants, self.store, self.metrics)
        self._background: set[asyncio.Task[None]] = set()
        self._active = 0
        self._per_tenant: dict[str, int] = {}
        self.monitor = EndpointMonitor(
            self.pools,
            config.health,
            config.scrape,
            on_health=self._export_health,
            on_snapshot=self._on_snapshot,
            on_scrape_failed=self._on_scrape_failed,
            discovery=config.discovery,
            on_facts=self._on_facts,
            tested_versions=TESTED_VLLM,
        )
        self.ready = False
        self.limits = GenerationLimits(
            config.server.max_body_bytes, config.timeouts.client_body_s, config.server.expose_engine_metrics
        )
        c = config.cache
        local = ResponseCache(
            c.ttl_s, c.max_entries, c.max_bytes, c.max_entry_bytes, on_evict=self.metrics.cache_evictions.inc
        )
        sc = c.semantic
        semantic = SemanticIndex(sc.threshold, sc.max_entries, c.ttl_s) if c.enabled and sc.enabled else None
        self.embedder: Embedder | None = None
        if semantic is not None:
            key = sc.embedding_api_key.get_secret_value() if sc.embedding_api_key else None
            self.embedder = (
                EndpointEmbedder(sc.embedding_url, sc.embedding_model or "", key, sc.embedding_timeout_s)
                if sc.embedding_url
                else HashedEmbedder()
            )
        self.cache = SharedCache(local, self.store, self.metrics, semantic) if c.enabled else None
        # What replicas tell each other off the request path (nothing to do with the in-memory store): where
        # conversations moved (prefix affinity) and the semantic cache's index.
        logs: list[SharedLog] = [PlacementLog(self.pools)]
        if semantic is not None and self.store.kind != "memory":
            logs.append(SemanticLog(semantic))
        self.replica_logs = LogSync(self.store, logs, self.metrics)
        self.recorder = (
            WorkloadRecorder(record_sink(config), on_drop=self.metrics.records_dropped.inc)
            if config.recording.enabled
            else None
        )
        self._semantic_on = semantic is not None
        self._route_cache: dict[str, str] = {}
        self._route_semantic: set[str] = set()
        self._route_options(config)
        self.reloader: ConfigReloader | None = None
        self.watcher: ConfigWatcher | None = None
        self.worker_metrics: WorkerMetrics | None = None

    def _route_options(self, config: GatewayConfig) -> None:
        self._route_cache = {name: config.routing.route(name).cache for name in config.routing.route_names()}
        opted = {n for n in config.routing.route_names() if config.routing.route(n).semantic_cache}
        self._route_semantic = opted if self._semantic_on else set()

    def reloadable(self, source: Callable[[], GatewayConfig], watch: Path | None = None) -> None:
        """Let the config be reloaded from `source` (SIGHUP, POST /admin/config/reload, and a poll of `watch`)."""
        self.reloader = ConfigReloader(source, lambda: self.config, self.apply_config, self.metrics)
        self.watcher = ConfigWatcher(watch, self.reloader) if watch is not None else None

    async def apply_config(self, new: GatewayConfig) -> None:
        """Serve a reloaded config that runtime/reload.py has validated and found reloadable. Everything it needs is
        built (and new endpoints health-checked) before anything changes; then one synchronous swap, so that no
        request sees half of it. Raises ConfigError, with the old config untouched, when a part cannot be built."""
        old = self.config
        classifier = self.classifier
        if (new.classifier, new.routing.class_labels()) != (old.classifier, old.routing.class_labels()):
            try:
                classifier = RequestClassifier(new.classifier, self.metrics, new.routing.class_labels())
            except ClassifierLoadError as exc:
                raise ConfigError([f"classifier: {exc}"]) from None
            if classifier.load_error is not None:
                # At a start the gateway serves by rules alone; a reload keeps the classifier that works.
                raise ConfigError([f"classifier: {classifier.load_error}"])
        staged = PoolSet(new, carry=self.pools)
        dispatcher = Dispatcher(new, self.pools, classifier)
        alerts = self.alerts
        # Drift settings are the control loop's; only a change in where and how alerts go needs a new dispatcher
        # (the old one's queued deliveries get a short grace when it stops).
        if new.alerts.model_copy(update={"drift": old.alerts.drift}) != old.alerts:
            alerts = AlertDispatcher(new.alerts, self.metrics)
            await alerts.start()
        await self.monitor.stage(staged)
        if alerts is not self.alerts:
            alerts.carry_from(self.alerts)  # after the last await: no alert fired meanwhile is left behind
        before = {p.name: p for p in old.pools}
        changed_pools = {p.name for p in new.pools if p.name in before and before[p.name] != p}
        gone = {
            "pool": {p.name for p in old.pools} - {p.name for p in new.pools},
            "route": set(old.routing.route_names()) - set(new.routing.route_names()),
            "endpoint": {ep.url for ep in self.pools.endpoints()} - {ep.url for ep in staged.endpoints()},
        }
        # The swap: nothing below awaits until it is done. The controller first: building it is the one step that
        # could still fail, and then nothing has changed.
        try:
            self.control.reconfigure(new, dispatcher, alerts)
        except Exception:
            if alerts is not self.alerts:
                await alerts.stop()
            raise
        self.pools.install(staged)
        self.classifier, self.dispatcher = classifier, dispatcher
        self.relay.reconfigure(new)
        old_alerts, self.alerts = self.alerts, alerts
        self.auth = Authenticator(new.auth, self.store, self.metrics)
        self.limiter.reconfigure(new.auth.tenants)
        self.limits = dataclasses.replace(self.limits, client_body_s=new.timeouts.client_body_s)
        self.config = new
        self._route_options(new)
        for label, values in gone.items():
            self.metrics.forget(label, values)
        self.metrics.init_series(
            [p.name for p in new.pools],
            new.routing.route_names(),
            [r.name for r in new.alerts.receivers] + (["alertmanager"] if new.alerts.alertmanager else []),
        )
        await self.monitor.installed(changed_pools)
        if old_alerts is not alerts:
            await old_alerts.stop()

    def route_semantic(self, route: str) -> bool:
        """Whether near-duplicates of the route's kept requests are answered from them."""
        return route in self._route_semantic

    def route_cache(self, route: str) -> str:
        return self._route_cache.get(route, "auto")

    async def authenticate(self, headers: Mapping[str, str]) -> str | None:
        return await self.auth.tenant(headers)

    async def rate_limit(self, tenant: str | None) -> dict[str, str]:
        return await self.limiter.admit(tenant)

    def plan(self, parsed: ParsedRequest, headers: Mapping[str, str], tenant: str | None) -> Plan:
        return self.dispatcher.plan(parsed, headers, tenant)

    async def send(self, parsed: ParsedRequest, pool: Pool, headers: dict[str, str]) -> RelayResult | StreamRelay:
        return await self.relay.send(parsed, pool, headers)

    def _export_health(self, ep: Endpoint) -> None:
        self.metrics.endpoint_healthy.labels(ep.pool, ep.url).set(1 if ep.healthy else 0)

    def _on_facts(self, ep: Endpoint, before: EngineFacts | None) -> None:
        facts = ep.facts
        if facts is None:
            return
        m = self.metrics
        for name in CAPABILITIES:
            value = getattr(facts, name)
            if value is None:
                with contextlib.suppress(KeyError):
                    m.endpoint_capability.remove(ep.pool, ep.url, name)
            else:
                m.endpoint_capability.labels(ep.pool, ep.url, name).set(1 if value else 0)
        m.endpoint_mismatches.labels(ep.pool, ep.url).set(len(ep.mismatches))
        for name in lost(before, facts):
            m.capability_lost.labels(ep.pool, ep.url, name).inc()
            log.warning(
                "endpoint lost a verified capability", extra={"pool": ep.pool, "endpoint": ep.url, "capability": name}
            )

    def _on_scrape_failed(self, ep: Endpoint, reason: str) -> None:
        self.metrics.engine_scrape_failures.labels(ep.pool, ep.url, reason).inc()

    def _on_snapshot(self, ep: Endpoint, previous: EngineSnapshot | None, snap: EngineSnapshot) -> None:
        steps = step_delta(previous, snap)
        if steps is not None:
            self.control.engine_steps(ep.pool, steps)
        if snap.accept_length is not None:
            self.metrics.engine_accept_length.labels(ep.pool, ep.url).set(snap.accept_length)
        preempted = preemption_delta(previous, snap)
        self.control.engine_kv(ep.pool, KvReading(snap.kv_usage, preempted, snap.kv_capacity_tokens, snap.running))
        if previous is None and snap.drafts:
            # The first scrape of an engine: its counters since it started are the pool's acceptance history, which
            # routes borrow from (a restarted gateway does not start every route from nothing).
            self.control.engine_acceptance(ep.pool, snap.drafts, snap.accepted_per_pos)
        # Every scrape closes the interval of in-flight shares, used or not.
        weights = ep.inflight.take(time.monotonic())
        delta = spec_delta(previous, snap)
        if delta is None:
            return
        self.control.engine_acceptance(ep.pool, delta.drafts, delta.accepted_per_pos)
        pool = self.pools.pool(ep.pool)
        if pool is not None and pool.acceptance_from(ep) == "counters":
            self._attribute(ep.pool, delta, weights)
        m = self.metrics
        m.engine_draft_tokens.labels(ep.pool, ep.url).inc(delta.draft_tokens)
        m.engine_accepted_tokens.labels(ep.pool, ep.url).inc(delta.accepted_tokens)
        m.engine_drafts.labels(ep.pool, ep.url).inc(delta.drafts)
        if delta.reset:
            m.engine_counter_resets.labels(ep.pool, ep.url).inc()

    def _counted(self, obs: Observation) -> bool:
        pool = self.pools.pool(obs.pool)
        return pool is not None and pool.config.speculation.acceptance_from == "counters"

    def _attribute(self, pool: str, delta: SpecDelta, weights: dict[str, float]) -> None:
        """Routes' shares of the endpoint's counters over the interval: their acceptance evidence."""
        m = self.metrics
        shares = attribute(delta.drafts, delta.draft_tokens, delta.accepted_tokens, delta.accepted_per_pos, weights)
        for route, share in shares.items():
            self.control.route_acceptance(route, pool, share.drafts, share.accepted_per_pos)
            m.child(m.attributed_draft_tokens, route, pool).inc(share.draft_tokens)
            m.child(m.attributed_accepted_tokens, route, pool).inc(share.accepted_tokens)

    async def _flush(self) -> None:
        """Last controller step on shutdown: this replica's remaining observations reach the shared store (or the
        controller), and the token charges still running finish."""
        await asyncio.gather(*self._background, return_exceptions=True)
        if not len(self.sink):
            return
        try:
            async with asyncio.timeout(max(1.0, self.config.state.timeout_s * 3)):
                await self.control.step()
        except Exception:
            log.exception("final flush of observations failed", extra={"pending": len(self.sink)})

    def admit(self, tenant: str | None) -> str:
        """Take a slot (in total, and for the tenant); returns the key `release` gives back."""
        if self._active >= self.config.server.max_concurrent_requests:
            self.metrics.overloaded.inc()
            raise Overloaded(
                "the gateway is at its concurrent request limit", retry_after_s=self.config.server.retry_after_s
            )
        key = tenant or ""
        limits = self.config.auth.tenants.get(key)
        cap = limits.max_concurrent if limits is not None else None
        if cap is not None and self._per_tenant.get(key, 0) >= cap:
            self.metrics.rate_limited.labels(key, "concurrent").inc()
            raise RateLimited(f"at most {cap} concurrent requests for this key", retry_after_s=1)
        self._active += 1
        self._per_tenant[key] = self._per_tenant.get(key, 0) + 1
        return key

    def release(self, admitted: str | None) -> None:
        if admitted is None:
            return
        self._active -= 1
        left = self._per_tenant.get(admitted, 1) - 1
        if left:
            self._per_tenant[admitted] = left
        else:
            self._per_tenant.pop(admitted, None)

    def charge(self, tenant: str | None, obs: Observation) -> None:
        """Tokens count against the tenant's budget after the answer; off the request path."""
        if tenant is None:
            return
        task = asyncio.create_task(self.limiter.charge(tenant, obs.prompt_tokens + obs.completion_tokens))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def record(self, obs: Observation, tenant: str | None = None) -> None:
        if self.recorder is not None:
            self.recorder.add(obs, tenant)
        m = self.metrics
        m.child(m.spec_observations, obs.route, obs.pool, obs.source).inc()
        if obs.stream and obs.decode_s and obs.completion_tokens > 1:
            m.child(m.tpot, obs.route, obs.pool).observe(obs.decode_s / (obs.completion_tokens - 1))
        if obs.spec is not None:
            m.child(m.spec_draft_tokens, obs.route, obs.pool).inc(obs.spec.draft_tokens)
            m.child(m.spec_accepted_tokens, obs.route, obs.pool).inc(obs.spec.accepted_tokens)
            m.child(m.spec_verify_steps, obs.route, obs.pool).inc(obs.spec.verify_steps)
            for k, hist in obs.spec.by_k:
                m.child(m.spec_steps_by_k, obs.route, str(k)).inc(sum(hist))
        if obs.spec is not None and self._counted(obs):
            # The pool learns acceptance from the engines' counters: the answer's own figures would count twice.
            obs = replace(obs, spec=None)
        dropped = self.sink.dropped
        self.sink.put(obs)
        if self.sink.dropped > dropped:
            m.observations_dropped.inc()

    @asynccontextmanager
    async def lifespan(self, _app: FastAPI) -> AsyncIterator[None]:
        await self.store.start()
        self.replica_logs.start()
        await self.monitor.start()
        await self.alerts.start()
        if self.recorder is not None:
            self.recorder.start()
        self.control.start()
        hangup = self._on_sighup()
        if self.watcher is not None:
            self.watcher.start()
        if self.worker_metrics is not None:
            self.worker_metrics.start()
        self.ready = True
        try:
            yield
        finally:
            self.ready = False
            if hangup:
                asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
            if self.watcher is not None:
                await self.watcher.stop()
            if self.reloader is not None:
                await self.reloader.close()
            if self.worker_metrics is not None:
                await self.worker_metrics.stop()
            await self.control.stop()
            await self._flush()
            if self.recorder is not None:
                await self.recorder.stop()
            await self.alerts.stop()
            await self.monitor.stop()
            await asyncio.gather(*self._background, return_exceptions=True)
            await self.replica_logs.stop()
            await self.store.close()
            await asyncio.to_thread(self.tracing.shutdown)
            await self.relay.aclose()
            if isinstance(self.embedder, EndpointEmbedder):
                await self.embedder.aclose()

    def _on_sighup(self) -> bool:
        """SIGHUP reloads the config, as for nginx or Prometheus. Only where the process serves from a config file
        and this loop may take signals (the main thread: not in tests that run the app in a thread)."""
        if self.reloader is None:
            return False
        reloader = self.reloader

        async def reload() -> None:
            await reloader.reload("sighup")

        def hangup() -> None:
            task = asyncio.create_task(reload(), name="config-reload")
            self._background.add(task)
            task.add_done_callback(self._background.discard)

        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, hangup)
        except (RuntimeError, ValueError, NotImplementedError):
            return False
        return True

    def finish(
        self,
        api: Api,
        pool: str,
        status: int,
        stream: bool,
        started: float,
        rid: str,
        endpoint: str = "",
        route: str = "none",
    ) -> None:
        elapsed = time.monotonic() - started
        m = self.metrics
        m.child(m.in_flight, api).dec()
        m.child(m.requests, route, pool, api, str(status)).inc()
        m.child(m.request_duration, pool, api, "true" if stream else "false").observe(elapsed)
        if not log.isEnabledFor(logging.INFO):
            return
        log.info(
            "request",
            extra={
                "request_id": rid,
                "api": api,
                "route": route,
                "pool": pool,
                "endpoint": endpoint,
                "status": status,
                "stream": stream,
                "duration_ms": round(elapsed * 1000, 2),
            },
        )

    def list_models(self) -> Response:
        created = int(time.time())
        data = [
            {"id": model, "object": "model", "created": created, "owned_by": "specgate"}
            for model in self.pools.models()
        ]
        return Response(orjson.dumps({"object": "list", "data": data}), media_type=_JSON)

    def readiness(self) -> Response:
        down = [p.name for p in self.pools.pools if not p.has_healthy_endpoint()]
        body: dict[str, Any] = {"status": "ready" if self.ready and not down else "not_ready", "pools": {}}
        for pool in self.pools.pools:
            body["pools"][pool.name] = pool.describe()
        mismatched = {ep.url: list(ep.mismatches) for ep in self.pools.endpoints() if ep.mismatches}
        if mismatched:
            # Serving goes on (specgate acts on what it verified), but an operator should look.
            body["mismatches"] = mismatched
        if down:
            body["down_pools"] = down
        status = 200 if self.ready and not down else 503
        headers = {} if status == 200 else {"retry-after": str(self.config.server.retry_after_s)}
        return Response(orjson.dumps(body), status_code=status, media_type=_JSON, headers=headers)

    def metrics_response(self) -> Response:
        if self.cache is not None:
            self.metrics.cache_bytes.set(self.cache.local.bytes)
            self.metrics.cache_entries.set(len(self.cache.local))
        connections = self.relay.open_connections()
        for ep in self.pools.endpoints():
            self.metrics.upstream_connections.labels(ep.pool, ep.url).set(connections.get(ep.url, 0))
            self.metrics.endpoint_outstanding.labels(ep.pool, ep.url).set(ep.outstanding)
            state = {"closed": 0, "half_open": 1, "open": 2}[ep.breaker.state]
            self.metrics.circuit_state.labels(ep.pool, ep.url).set(state)
        if self.worker_metrics is not None:
            return Response(self.worker_metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
        return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)


class SpecgateApp(FastAPI):
    """FastAPI, with the two generation endpoints taken before its middleware and routing (gateway/generation.py
    says why). They are also ordinary routes of the app, so that other methods get FastAPI's 405."""

    generation: GenerationHandler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            api = PATHS.get(scope["path"])
            if api is not None:
                await self.generation(scope, receive, send, api)
                return
        await super().__call__(scope, receive, send)


class _GenerationRoute:
    def __init__(self, handler: GenerationHandler, api: Api) -> None:
        self._handler = handler
        self._api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._handler(scope, receive, send, self._api)


def create_app(
    config: GatewayConfig,
    span_exporter: SpanExporter | None = None,
    *,
    reload_from: Callable[[], GatewayConfig] | None = None,
    watch: Path | None = None,
    worker_dir: Path | None = None,
    workers: int = 1,
) -> SpecgateApp:
    """The ASGI app. `span_exporter` overrides `tracing.exporter` (tests capture spans in memory with it).
    `reload_from` reads the config anew (raising ConfigError) for reloads; `watch`: reload when this file changes.
    `worker_dir`: this process is one of `workers` on one port (gateway/workers.py); /metrics shows them all."""
    gw = Gateway(config, span_exporter)
    if reload_from is not None:
        gw.reloadable(reload_from, watch)
    if worker_dir is not None:
        gw.worker_metrics = WorkerMetrics(worker_dir, gw.metrics.registry, workers)
    app = SpecgateApp(title="specgate", version="0.1.0", lifespan=gw.lifespan)
    app.state.gateway = gw
    app.generation = GenerationHandler(gw)
    for path, api in PATHS.items():
        app.router.routes.append(Route(path, _GenerationRoute(app.generation, api), methods=["POST"]))
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]  # FastAPI's documented way to extend the schema

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        await gw.auth.tenant(request.headers)
        return gw.list_models()

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response(b'{"status":"ok"}', media_type=_JSON)

    @app.get("/readyz")
    async def readyz() -> Response:
        return gw.readiness()

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        key = gw.config.auth.metrics_key
        metrics_key = key.get_secret_value() if key is not None else None  # read per call: a reload may change it
        if metrics_key is not None and not hmac.compare_digest(
            (presented_key(request.headers) or "").encode(), metrics_key.encode()
        ):
            raise Unauthorized("/metrics needs the metrics key: 'Authorization: Bearer <key>'")
        return gw.metrics_response()

    @app.exception_handler(GatewayError)
    async def gateway_error(_request: Request, exc: GatewayError) -> Response:
        return _error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "invalid_request")
        body = error_body(str(exc.detail), "invalid_request_error", None, code)
        return Response(body, status_code=exc.status_code, media_type=_JSON, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> Response:
        return _error_response(InvalidRequest(str(exc.errors()[:1])))

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> Response:
        log.exception("unhandled error", exc_info=exc)
        return Response(
            error_body("internal gateway error", "internal_error", None, "internal_error"),
            status_code=500,
            media_type=_JSON,
        )

    app.include_router(admin_router(gw.control, gw.coordinator, lambda: gw.config.admin_key, lambda: gw.reloader))
    app.add_middleware(RequestIdMiddleware)
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema of its own routes, plus the two generation endpoints (plain routes, which it skips)."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
        schema["paths"] = {**generation_paths(), **schema.get("paths", {})}
        app.openapi_schema = schema
    return app.openapi_schema
