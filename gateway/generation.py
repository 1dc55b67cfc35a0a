"""POST /v1/chat/completions and /v1/completions as a plain ASGI handler, served ahead of FastAPI's routing.

Profiled under load, FastAPI/Starlette request handling (routing, Request objects, middleware, response classes)
took about a quarter of the gateway's CPU per request (docs/performance.md). Here a request costs a dict of its
headers and direct `send` calls. The rest of the API (admin, models, health, metrics) stays on FastAPI, and
/openapi.json still describes these two paths (gateway/openapi.py).

Client disconnects: once the request is read, one watcher task waits for `http.disconnect` and cancels the
handler, which closes the upstream connection (so vLLM aborts the request) and counts the disconnect. Under ASGI
2.4 (what uvicorn speaks) a server drops sends to a closed connection silently, so without the watcher the engine
would go on generating for nobody.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import orjson
from opentelemetry.trace import Span
from specgate.backends.embeddings import EmbeddingUnavailable
from specgate.backends.pool import Pool
from specgate.controllers.observations import Observation
from specgate.gateway.body import ClientGone, read_body
from specgate.runtime.dispatch import Plan
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.observe import StreamObserver, observe_body
from specgate.runtime.relay import RelayResult, StreamRelay
from specgate.runtime.requests import Api, ParsedRequest, parse_body
from specgate.runtime.response_cache import (
    CachedAnswer,
    cache_control,
    cache_key,
    canonical_body,
    deterministic,
)
from specgate.runtime.semantic_cache import Embedder, semantic_scope, semantic_text
from specgate.runtime.shared_cache import SharedCache
from specgate.runtime.tracing import Tracing
from starlette.types import Receive, Scope, Send

from specgate.errors import GatewayError, RequestTimeout

__all__ = ["PATHS", "GenerationDeps", "GenerationHandler", "GenerationLimits", "request_id"]

log = logging.getLogger("specgate.access")
cache_log = logging.getLogger("specgate.cache")

PATHS: dict[str, Api] = {"/v1/chat/completions": "chat", "/v1/completions": "completions"}
_PASS_UPSTREAM = ("traceparent", "tracestate")
_JSON = b"application/json"
_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]


@dataclass(frozen=True, slots=True)
class GenerationLimits:
    max_body_bytes: int
    client_body_s: float
    # Pass the engine's per-request speculation metrics on to the client.
    expose_engine_metrics: bool


class GenerationDeps(Protocol):
    """What the generation handler needs from the rest of the gateway, and nothing more."""

    @property
    def limits(self) -> GenerationLimits: ...

    @property
    def metrics(self) -> GatewayMetrics: ...

    @property
    def tracing(self) -> Tracing: ...

    @property
    def cache(self) -> SharedCache | None:
        """The response cache; None when off."""
        ...

    def route_cache(self, route: str) -> str:
        """The route's cache setting: auto, always or off."""
        ...

    def route_semantic(self, route: str) -> bool:
        """Whether the route answers near-duplicates from the cache (the semantic cache is on and the route opts in)."""
        ...

    @property
    def embedder(self) -> Embedder | None:
        """The semantic cache's embeddings; None when it is off."""
        ...

    async def authenticate(self, headers: Mapping[str, str]) -> str | None:
        """The tenant of the presented key (None: anonymous); raises Unauthorized."""
        ...

    def admit(self, tenant: str | None) -> str:
        """Take a concurrency slot; raises Overloaded / RateLimited. `release` gives it back."""
        ...

    def release(self, admitted: str | None) -> None: ...

    async def rate_limit(self, tenant: str | None) -> dict[str, str]:
        """Check the tenant's request and token budgets; the rate-limit headers to send. Raises RateLimited."""
        ...

    def plan(self, parsed: ParsedRequest, headers: Mapping[str, str], tenant: str | None) -> Plan: ...

    async def send(self, parsed: ParsedRequest, pool: Pool, headers: dict[str, str]) -> RelayResult | StreamRelay: ...

    def record(self, obs: Observation, tenant: str | None = None) -> None:
        """The controller's evidence (and the workload record, when on) from one finished request."""
        ...

    def charge(self, tenant: str | None, obs: Observation) -> None: ...

    def finish(
        self, api: Api, pool: str, status: int, stream: bool, started: float, rid: str, endpoint: str, route: str
    ) -> None: ...


def _header_map(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Request headers by (lower-case) name; the first of repeated ones wins, as with Starlette's `Headers.get`."""
    out: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("latin-1")
        if key not in out:
            out[key] = value.decode("latin-1")
    return out


def request_id(asked: str) -> str:
    """The client's `x-request-id` if it is usable, else a new one (echoed on every answer, errors included)."""
    rid = asked[:128]
    return rid if rid and rid.isprintable() else secrets.token_hex(16)


def _upstream_headers(headers: dict[str, str], rid: str, stream: bool) -> dict[str, str]:
    out = {"content-type": "application/json", "x-request-id": rid}
    if stream:
        out["accept"] = "text/event-stream"
    for name in _PASS_UPSTREAM:
        value = headers.get(name)
        if value:
            out[name] = value
    return out


def _encode(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


class _DisconnectWatch:
    """Waits for `http.disconnect` and then cancels the handler's task; `stop` ends the watch."""

    __slots__ = ("_answer", "_task", "_watch", "fired")

    def __init__(self, receive: Receive, answer: _Answer) -> None:
        self.fired = False
        self._answer = answer
        self._task = asyncio.current_task()
        self._watch = asyncio.get_running_loop().create_task(self._wait(receive))

    async def _wait(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        # uvicorn also says "disconnect" once the answer is complete: that is no reason to cancel anything.
        if self._task is not None and not self._answer.complete:
            self.fired = True
            self._task.cancel()

    def stop(self) -> None:
        # After this the watch can no longer cancel the handler, even if the disconnect is already in.
        self._task = None
        self._watch.cancel()


class _Answer:
    """The response side of one exchange: whether it has started, and the headers every answer carries."""

    __slots__ = ("_rid", "_send", "complete", "started", "status")

    def __init__(self, send: Send, rid: str) -> None:
        self._send = send
        self._rid = rid.encode("latin-1")
        self.started = False
        self.complete = False
        self.status = 0

    async def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.started = True
        self.status = status
        headers.append((b"x-request-id", self._rid))
        await self._send({"type": "http.response.start", "status": status, "headers": headers})

    async def whole(self, status: int, body: bytes, content_type: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        headers += [(b"content-type", content_type), (b"content-length", b"%d" % len(body))]
        await self.start(status, headers)
        self.complete = True
        await self._send({"type": "http.response.body", "body": body, "more_body": False})

    async def error(self, exc: GatewayError) -> None:
        await self.whole(exc.status, exc.body(), _JSON, _encode(exc.headers()))

    async def chunk(self, body: bytes) -> None:
        await self._send({"type": "http.response.body", "body": body, "more_body": True})

    async def end(self) -> None:
        self.complete = True
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})


class GenerationHandler:
    def __init__(self, deps: GenerationDeps) -> None:
        self._gw = deps

    async def __call__(self, scope: Scope, receive: Receive, send: Send, api: Api) -> None:
        gw = self._gw
        started = time.monotonic()
        headers = _header_map(scope["headers"])
        rid = request_id(headers.get("x-request-id", ""))
        answer = _Answer(send, rid)
        m = gw.metrics
        m.child(m.in_flight, api).inc()
        plan: Plan | None = None
        endpoint = ""
        stream = False
        status = 500
        admitted: str | None = None
        watch: _DisconnectWatch | None = None
        server_span = gw.tracing.server_span(scope["method"], scope["path"], headers)
        client_span: Span | None = None
        seen: list[Observation] = []
        stack = contextlib.ExitStack()
        try:
            tenant = await gw.authenticate(headers)
            admitted = gw.admit(tenant)
            limit_headers = await gw.rate_limit(tenant)
            raw = await self._read(receive, headers)
            parsed = parse_body(raw, api)
            stream = parsed.stream
            # Taken before planning: the k the plan adds to the body must not split the cache.
            canonical = canonical_body(parsed.body) if gw.cache is not None else None
            plan = gw.plan(parsed, headers, tenant)
            m.child(m.route_requests, plan.route).inc()
            cache_key_, cache_header = await self._cache_lookup(canonical, api, plan.route, tenant, parsed, headers)
            if isinstance(cache_key_, CachedAnswer):
                status = await self._replay(cache_key_, plan.route, limit_headers, answer)
                return
            client_span = gw.tracing.client_span(
                server_span, api, parsed.body, plan.route, plan.pool.name, plan.k, plan.explored
            )
            upstream_headers = _upstream_headers(headers, rid, stream)
            gw.tracing.inject(client_span, upstream_headers)
            watch = _DisconnectWatch(receive, answer)
            result = await gw.send(parsed, plan.pool, upstream_headers)
            # From here the upstream answer is ours to close, whatever fails before the stream is relayed.
            stack.callback(result.close)
            m.child(m.spec_requests, plan.route, plan.pool.name, str(plan.k)).inc()
            if plan.explored:
                m.child(m.explored_requests, plan.route).inc()
            shown = {"x-specgate-route": plan.route, "x-specgate-k": str(plan.k)}
            if plan.schedule is not None:
                shown["x-specgate-k-schedule"] = plan.schedule
            if cache_header is not None:
                shown["x-specgate-cache"] = cache_header
            out = _encode({**shown, **limit_headers})
            n = parsed.body.get("n") or 1
            endpoint = result.endpoint.url
            if isinstance(result, RelayResult):
                status = result.status
                body, obs = observe_body(
                    result.body,
                    plan,
                    endpoint,
                    result.batch_at_dispatch,
                    expose_metrics=gw.limits.expose_engine_metrics,
                    n=n,
                    e2e_s=time.monotonic() - started,
                )
                if obs is not None and status == 200:
                    seen.append(obs)
                    gw.record(obs, tenant)
                    gw.charge(tenant, obs)
                if client_span is not None:
                    gw.tracing.end_client(client_span, endpoint, obs, _json_or_none(body))
                    client_span = None
                await answer.whole(status, body, _JSON, out)
                if cache_key_ is not None and status == 200 and gw.cache is not None:
                    gw.cache.put(cache_key_, status, body)
            else:
                status = 200
                await self._stream(result, plan, api, started, n, out, answer, tenant, seen, cache_key_)
        except GatewayError as exc:
            if answer.started:  # cannot happen (streams report failures in-band); never send a second head
                log.error("error after the answer started", extra={"request_id": rid, "error": exc.message})
            else:
                status = exc.status
                await answer.error(exc)
        except ClientGone:
            status = 499
            gw.metrics.client_disconnects.labels(api).inc()
        except asyncio.CancelledError:
            if watch is None or not watch.fired:
                raise  # the server is shutting down, not the client leaving
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            status = answer.status or 499
            gw.metrics.client_disconnects.labels(api).inc()
        except Exception:
            log.exception("unhandled error", extra={"request_id": rid})
            status = 500
            if not answer.started:
                await answer.error(GatewayError("internal gateway error"))
        finally:
            stack.close()
            if watch is not None:
                watch.stop()
            gw.release(admitted)
            if client_span is not None:
                failed = str(status) if status >= 400 else None
                gw.tracing.end_client(client_span, endpoint, seen[0] if seen else None, error=failed)
            gw.tracing.end_server(server_span, status)
            route = plan.route if plan else "none"
            gw.finish(api, plan.pool.name if plan else "none", status, stream, started, rid, endpoint, route)

    async def _read(self, receive: Receive, headers: dict[str, str]) -> bytes:
        limits = self._gw.limits
        try:
            async with asyncio.timeout(limits.client_body_s):
                return await read_body(receive, headers.get("content-length"), limits.max_body_bytes)
        except TimeoutError:
            raise RequestTimeout(f"the request body did not arrive within {limits.client_body_s:g} s") from None

    async def _stream(
        self,
        relay: StreamRelay,
        plan: Plan,
        api: Api,
        started: float,
        n: int,
        headers: list[tuple[bytes, bytes]],
        answer: _Answer,
        tenant: str | None,
        seen: list[Observation],
        cache_key_: bytes | None = None,
    ) -> None:
        gw = self._gw
        gw.metrics.child(gw.metrics.ttft, relay.pool.name).observe(time.monotonic() - started)

        def done(obs: Observation) -> None:
            seen.append(obs)
            gw.record(obs, tenant)
            gw.charge(tenant, obs)

        observer = StreamObserver(
            plan,
            relay.endpoint.url,
            relay.batch_at_dispatch,
            started,
            gw.limits.expose_engine_metrics,
            n,
            done,
            chat=api == "chat",
        )
        kept: list[bytes] | None = [] if cache_key_ is not None else None
        try:
            await answer.start(200, [*_SSE_HEADERS, *headers])
            while (events := await relay.next_events()) is not None:
                out = observer.take(events)
                if out:
                    await answer.chunk(out)
                    if kept is not None:
                        kept.append(out)
        finally:
            relay.close()
            observer.finish()
        if kept is not None and cache_key_ is not None and relay.outcome == "ok" and gw.cache is not None:
            gw.cache.put(cache_key_, 200, None, tuple(kept))  # a whole stream only, as the client got it
        # After the observation is recorded: a client that has read the whole stream finds it in place.
        await answer.end()

    async def _cache_lookup(
        self,
        canonical: bytes | None,
        api: Api,
        route: str,
        tenant: str | None,
        parsed: ParsedRequest,
        headers: Mapping[str, str],
    ) -> tuple[bytes | CachedAnswer | None, str | None]:
        """(the cached answer, or the key to keep the fresh one under, or None; the x-specgate-cache value)."""
        gw = self._gw
        cache = gw.cache
        if cache is None or canonical is None:
            return None, None
        m = gw.metrics
        mode = cache_control(headers.get("cache-control"))
        setting = gw.route_cache(route)
        if setting == "off" or mode == "bypass" or (setting == "auto" and not deterministic(parsed.body)):
            m.child(m.cache_requests, route, "bypass").inc()
            return None, "bypass"
        key = cache_key(api, route, tenant, canonical)
        hit = await cache.get(key) if mode == "use" else None
        similarity = None
        if hit is None and cache.semantic is not None and gw.route_semantic(route):
            hit, similarity = await self._semantic_lookup(cache, key, api, route, tenant, canonical, parsed, mode)
        if hit is not None:
            m.child(m.cache_requests, route, "hit").inc()
            if similarity is not None:
                m.child(m.cache_semantic_hits, route).inc()
            return hit, "hit"
        m.child(m.cache_requests, route, "miss").inc()
        return key, "miss"

    async def _semantic_lookup(
        self,
        cache: SharedCache,
        key: bytes,
        api: Api,
        route: str,
        tenant: str | None,
        canonical: bytes,
        parsed: ParsedRequest,
        mode: str,
    ) -> tuple[CachedAnswer | None, float | None]:
        """A kept answer to a near-duplicate (runtime/semantic_cache.py), and its similarity. Either way, a miss
        that the fresh answer may fill is indexed under `key` when that answer is kept."""
        index, embedder = cache.semantic, self._gw.embedder
        scope = semantic_scope(api, route, tenant, canonical)
        if index is None or embedder is None or scope is None:
            return None, None
        try:
            vector = await embedder.embed(semantic_text(api, parsed.body))
        except EmbeddingUnavailable as exc:
            self._gw.metrics.cache_errors.labels("embed").inc()
            cache_log.warning("semantic cache: no embedding; served without it", extra={"error": str(exc)})
            return None, None
        if vector is None:
            return None, None
        index.expect(key, scope, vector)
        match = index.nearest(scope, vector) if mode == "use" else None
        if match is None:
            return None, None
        hit = await cache.get(match.key)
        if hit is None:
            index.forget(match.key)  # its answer expired or was evicted
            return None, None
        return hit, match.similarity

    async def _replay(self, hit: CachedAnswer, route: str, limit_headers: dict[str, str], answer: _Answer) -> int:
        """The kept answer, as the first client got it (a stream in the same events), without the engine."""
        out = _encode({"x-specgate-route": route, "x-specgate-cache": "hit", **limit_headers})
        if hit.body is not None:
            await answer.whole(hit.status, hit.body, _JSON, out)
            return hit.status
        await answer.start(200, [*_SSE_HEADERS, *out])
        for events in hit.events:
            await answer.chunk(events)
        await answer.end()
        return 200


def _json_or_none(body: bytes) -> dict[str, object] | None:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None
