"""Send a checked request to an engine endpoint and relay the answer back.

Failover rule: a try that fails before anything reached the client (connect error, timeout before
headers or before the first stream event, 5xx answer) is retried on another endpoint of the same pool,
up to `retries.max_attempts` tries in all. A reused keep-alive connection that broke with nothing back (the engine
closed it as idle just then) may be retried once on the same endpoint, within the same budget: the engine may have
received that request, so the retry is counted (`specgate_upstream_retries_total`, `specgate_upstream_errors_total`
with reason `stale_connection`) like any other. Once a byte has reached the client, a failure is reported
in-band as an SSE `data: {"error": ...}` event and the stream is closed.

Closing the upstream response (on client disconnect, on error, or at the end) closes its connection,
which is how vLLM learns to abort the request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson
from specgate.backends.pool import Endpoint, Pool
from specgate.backends.transport import UpstreamResponse, UpstreamTransport
from specgate.backends.upstream_http import (
    ConnectFailed,
    ConnectionLimit,
    StaleConnection,
    UpstreamClient,
    UpstreamFailure,
)
from specgate.controllers.picker import running_requests
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.requests import ParsedRequest

from specgate.config import GatewayConfig
from specgate.errors import (
    GatewayError,
    NoHealthyEndpoint,
    UpstreamError,
    UpstreamHTTPError,
    UpstreamTimeout,
    error_body,
    normalise_upstream_error,
)
from specgate.sse import DONE, SSESplitter, encode_event, event_data

__all__ = ["Relay", "RelayResult", "StreamRelay"]

log = logging.getLogger("specgate.relay")

_PATHS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}
_MAX_UPSTREAM_BODY = 64 * 1024 * 1024
_MAX_ERROR_BODY = 64 * 1024


@dataclass(slots=True)
class RelayResult:
    """A complete non-streaming answer."""

    status: int
    body: bytes
    pool: Pool
    endpoint: Endpoint
    batch_at_dispatch: float = 0.0

    def close(self) -> None:
        """Nothing to release (the body is read and the endpoint released already): the same call as a stream's."""


@dataclass(slots=True)
class StreamRelay:
    """An open upstream stream whose first events are already in hand (so the try has succeeded).

    Read it with `next_events` until None, then `close` it (always, whatever happened)."""

    pool: Pool
    endpoint: Endpoint
    response: UpstreamResponse
    splitter: SSESplitter
    first_events: list[bytes]
    started_at: float
    on_close: Callable[[str], None]
    idle_timeout_s: float
    _closed: bool = field(default=False)
    batch_at_dispatch: float = 0.0
    # "ok" once [DONE] came and the upstream ended; otherwise why the stream ended badly.
    outcome: str = "client_disconnect"
    _saw_done: bool = False
    _over: bool = False

    async def next_events(self) -> list[bytes] | None:
        """The next SSE events, those that arrived together (possibly none yet); None when the stream is over.
        A stream that breaks, stalls or ends before `[DONE]` ends with an in-band error event."""
        if self._over:
            return None
        if self.first_events:
            events, self.first_events = self.first_events, []
        else:
            try:
                chunk = await self.response.next_chunk(self.idle_timeout_s)
            except TimeoutError:
                return self._end("stream", "upstream stream stalled", "timeout")
            except UpstreamFailure as exc:
                return self._end("stream", f"upstream stream broke: {exc}", "bad_gateway")
            if not chunk:
                if self._saw_done:
                    self._over = True
                    self.outcome = "ok"
                    return None
                return self._end("truncated", "upstream stream ended before completion", "bad_gateway")
            try:
                events = self.splitter.feed(chunk)
            except ValueError as exc:
                return self._end("stream", str(exc), "bad_gateway")
        if not self._saw_done:
            # A substring test first: parsing every event to find the last one costs more.
            for event in events:
                if DONE in event and event_data(event) == DONE:
                    self._saw_done = True
        return events

    def _end(self, outcome: str, message: str, code: str) -> list[bytes]:
        self._over = True
        self.outcome = outcome
        return [encode_event(error_body(message, "api_error", None, code))]

    def close(self) -> None:
        """Synchronous, so that it also runs to the end inside a task being cancelled on client disconnect: the
        upstream connection must be closed for the engine to abort the request."""
        if self._closed:
            return
        self._closed = True
        self.response.close()
        self.on_close(self.outcome)


class Relay:
    def __init__(
        self, config: GatewayConfig, metrics: GatewayMetrics, transport: UpstreamTransport | None = None
    ) -> None:
        self._config = config
        self._metrics = metrics
        self._client: UpstreamTransport = transport if transport is not None else UpstreamClient()

    def reconfigure(self, config: GatewayConfig) -> None:
        """A reloaded config's timeouts and retries, for requests sent from now on."""
        self._config = config

    async def aclose(self) -> None:
        self._client.close()

    def open_connections(self) -> dict[str, int]:
        """Connections open per endpoint URL (the real client's; none for other transports)."""
        stats = getattr(self._client, "open_connections", None)
        return stats() if callable(stats) else {}

    def _breaker_failure(self, endpoint: Endpoint) -> None:
        opens = endpoint.breaker.opens
        endpoint.breaker.on_failure(time.monotonic())
        if endpoint.breaker.opens > opens:
            self._metrics.circuit_opens.labels(endpoint.pool, endpoint.url).inc()
            log.warning(
                "circuit opened",
                extra={"pool": endpoint.pool, "endpoint": endpoint.url, "open_s": endpoint.breaker.open_for},
            )

    async def send(self, req: ParsedRequest, pool: Pool, headers: dict[str, str]) -> RelayResult | StreamRelay:
        """Relay `req`, failing over as the module says. Cancelling it (the client left) closes the upstream
        connection, so that the engine aborts the request."""
        body = orjson.dumps(req.body) if req.modified else req.raw
        tried: set[Endpoint] = set()
        last_error: GatewayError | None = None
        stale_retried = False
        for attempt in range(self._config.retries.max_attempts):
            endpoint = pool.pick(tried, req.affinity)
            if endpoint is None:
                break
            tried.add(endpoint)
            if attempt:
                self._metrics.retries.labels(pool.name).inc()
            endpoint.breaker.on_dispatch()
            try:
                result = await self._try(req, body, headers, pool, endpoint)
            except _RetryableFailure as exc:
                if exc.reason == "connection_limit":
                    endpoint.breaker.on_abandoned()  # busy, not broken
                elif exc.reason == "stale_connection" and not stale_retried:
                    # A kept-alive connection the engine had just closed: the endpoint is fine, and may take the
                    # retry (once; it counts as one of the request's tries, in the retry metrics and the log).
                    stale_retried = True
                    endpoint.breaker.on_abandoned()
                    tried.discard(endpoint)
                else:
                    self._breaker_failure(endpoint)
                self._metrics.upstream_errors.labels(pool.name, exc.reason).inc()
                log.warning(
                    "upstream try failed",
                    extra={
                        "pool": pool.name,
                        "endpoint": endpoint.url,
                        "reason": exc.reason,
                        "attempt": attempt + 1,
                    },
                )
                last_error = exc.error
                continue
            except UpstreamHTTPError as exc:
                # The engine answered (a 4xx about the request): it works.
                if exc.status < 500:
                    endpoint.breaker.on_success()
                else:
                    self._breaker_failure(endpoint)
                raise
            except GatewayError:
                self._breaker_failure(endpoint)
                raise
            except BaseException:
                endpoint.breaker.on_abandoned()
                raise
            if isinstance(result, RelayResult):
                endpoint.breaker.on_success()
            return result
        if last_error is None or isinstance(last_error, NoHealthyEndpoint):
            # An engine's own Retry-After (a 503 it sent) is kept.
            wait = last_error.retry_after_s if last_error is not None else None
            raise NoHealthyEndpoint(
                f"no healthy endpoint in pool '{pool.name}' for model '{req.model}'",
                retry_after_s=wait if wait is not None else self._config.server.retry_after_s,
            )
        raise last_error

    async def _try(
        self,
        req: ParsedRequest,
        body: bytes,
        headers: dict[str, str],
        pool: Pool,
        endpoint: Endpoint,
    ) -> RelayResult | StreamRelay:
        started = time.monotonic()
        batch = _batch_now(endpoint)
        endpoint.outstanding += 1
        endpoint.inflight.begin(req.route, started)
        released = False

        def release(outcome: str = "") -> None:
            nonlocal released
            if not released:
                released = True
                endpoint.outstanding -= 1
                endpoint.inflight.end(req.route, time.monotonic())
                # A stream's verdict comes when it ends: cut or stalled streams count against the endpoint.
                if outcome == "ok":
                    endpoint.breaker.on_success()
                elif outcome == "client_disconnect":
                    endpoint.breaker.on_abandoned()
                elif outcome:
                    self._breaker_failure(endpoint)

        t = self._config.timeouts
        p = pool.config
        # Streams: headers and a first event in first_byte_s. Non-streaming: the whole answer in total_s.
        head_s = (p.first_byte_s or t.first_byte_s) if req.stream else (p.total_s or t.total_s)
        response: UpstreamResponse | None = None
        try:
            try:
                response = await self._client.post(
                    endpoint.url,
                    _PATHS[req.api],
                    body,
                    {**headers, **endpoint.headers} if endpoint.headers else headers,
                    connect_s=t.connect_s,
                    head_s=head_s,
                    idle_expiry_s=p.upstream_idle_s or t.upstream_idle_s,
                    ssl_context=pool.ssl_context,
                    server_name=p.tls.server_name,
                    max_connections=p.max_connections,
                    on_queued=(
                        self._metrics.child(self._metrics.connection_waits, pool.name, endpoint.url).inc
                        if p.max_connections
                        else None
                    ),
                )
                if response.status >= 400:
                    raw = await response.read(_MAX_ERROR_BODY, _left(started, head_s))
                    response.close()
                    error = normalise_upstream_error(response.status, raw, response.retry_after)
                    if response.status >= 500:
                        raise _RetryableFailure("http_5xx", _server_error(error, self._config))
                    raise error
                if req.stream:
                    splitter = SSESplitter()
                    first = await _first_events(response, splitter, started, head_s)
                    return StreamRelay(
                        pool,
                        endpoint,
                        response,
                        splitter,
                        first,
                        started,
                        release,
                        t.stream_idle_s,
                        batch_at_dispatch=batch,
                    )
            except ConnectionLimit as exc:
                raise _RetryableFailure("connection_limit", NoHealthyEndpoint(str(exc))) from None
            except StaleConnection as exc:
                raise _RetryableFailure("stale_connection", UpstreamError(f"upstream failed: {exc}")) from None
            except ConnectFailed as exc:
                endpoint.eject(f"connect failed: {exc}")
                raise _RetryableFailure(
                    "connect",
                    NoHealthyEndpoint("upstream connection failed", retry_after_s=self._config.server.retry_after_s),
                ) from None
            except TimeoutError:
                late = UpstreamTimeout("upstream engine did not answer in time")
                if not req.stream:
                    # The engine may have been generating the whole time: another try would run it twice.
                    self._metrics.upstream_errors.labels(pool.name, "timeout").inc()
                    raise late from None
                raise _RetryableFailure("timeout", late) from None
            except _EmptyStream:
                raise _RetryableFailure("stream", UpstreamError("upstream stream ended before any event")) from None
            except UpstreamFailure as exc:
                raise _RetryableFailure("protocol", UpstreamError(f"upstream failed: {exc}")) from None
            # Non-streaming: the try has succeeded once headers are in; read the body, but stop as soon
            # as the client goes away so the engine does not keep generating for nobody.
            raw = await _read_body(response, t.stream_idle_s)
            return RelayResult(response.status, raw, pool, endpoint, batch)
        except BaseException:
            if response is not None:
                response.close()
            release()
            raise
        finally:
            if not req.stream:
                release()


class _RetryableFailure(Exception):
    def __init__(self, reason: str, error: GatewayError) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error


class _EmptyStream(Exception):
    pass


def _batch_now(endpoint: Endpoint) -> float:
    """Requests running at the endpoint as this one is sent: the engine's last scrape if any, plus what
    this gateway has sent since (outstanding counts them; the larger of the two avoids double counting)."""
    snap = endpoint.snapshot
    return running_requests(endpoint.outstanding, snap.running if snap is not None else None)


def _server_error(error: GatewayError, config: GatewayConfig) -> GatewayError:
    if error.status == 503:
        # The engine's own Retry-After when it gave one in seconds; else the gateway's.
        wait = error.retry_after_s if error.retry_after_s is not None else config.server.retry_after_s
        return NoHealthyEndpoint(error.message, retry_after_s=wait)
    return UpstreamError(f"upstream engine failed: {error.message}")


def _left(started: float, budget_s: float) -> float:
    """Seconds left of a budget that began at `started` (at least a millisecond, so a wait can still see data
    that is already in)."""
    return max(0.001, started + budget_s - time.monotonic())


async def _first_events(
    response: UpstreamResponse, splitter: SSESplitter, started: float, budget_s: float
) -> list[bytes]:
    while True:
        chunk = await response.next_chunk(_left(started, budget_s))
        if not chunk:
            raise _EmptyStream()
        try:
            events = splitter.feed(chunk)
        except ValueError:
            raise _EmptyStream() from None
        if events:
            return events


async def _read_body(response: UpstreamResponse, idle_timeout_s: float) -> bytes:
    try:
        body = await response.read(_MAX_UPSTREAM_BODY, idle_timeout_s)
    except TimeoutError:
        raise UpstreamTimeout("upstream engine stalled while answering") from None
    except UpstreamFailure as exc:
        raise UpstreamError(f"upstream answer broke off: {exc}") from None
    if len(body) > _MAX_UPSTREAM_BODY:
        raise UpstreamError("upstream answer is larger than the gateway relays")
    return body
