"""Send a checked request to an engine endpoint and relay the answer back.

Failover rule: a try that fails before anything reached the client (connect error, timeout before
headers or before the first stream event, 5xx answer) is retried on another endpoint of the same pool,
up to `retries.max_attempts` tries in all. Once a byte has reached the client, a failure is reported
in-band as an SSE `data: {"error": ...}` event and the stream is closed.

Closing the upstream response (on client disconnect, on error, or at the end) closes its connection,
which is how vLLM learns to abort the request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import httpx
import orjson

from backends.pool import Endpoint, Pool
from gateway.config import GatewayConfig
from gateway.errors import (
    GatewayError,
    NoHealthyEndpoint,
    UpstreamError,
    UpstreamHTTPError,
    UpstreamTimeout,
    error_body,
    normalise_upstream_error,
)
from gateway.metrics import GatewayMetrics
from gateway.requests import ParsedRequest
from gateway.sse import DONE, SSESplitter, encode_event, event_data

__all__ = ["ClientGone", "Relay", "RelayResult", "StreamRelay"]

log = logging.getLogger("specgate.relay")

_PATHS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}
_MAX_UPSTREAM_BODY = 64 * 1024 * 1024
_MAX_ERROR_BODY = 64 * 1024
_SHARDS = 16


@dataclass(slots=True)
class RelayResult:
    """A complete non-streaming answer."""

    status: int
    body: bytes
    pool: Pool
    endpoint: Endpoint
    batch_at_dispatch: float = 0.0


@dataclass(slots=True)
class StreamRelay:
    """An open upstream stream whose first events are already in hand (so the try has succeeded)."""

    pool: Pool
    endpoint: Endpoint
    response: httpx.Response
    # The one raw-byte iterator of `response` (httpx allows a body to be iterated only once).
    chunks: AsyncIterator[bytes]
    splitter: SSESplitter
    first_events: list[bytes]
    started_at: float
    on_close: Callable[[str], None]
    idle_timeout_s: float
    _closed: bool = field(default=False)
    batch_at_dispatch: float = 0.0

    async def events(self) -> AsyncIterator[bytes]:
        """Yield SSE events as bytes; ends with `[DONE]` or an in-band error event."""
        outcome = "ok"
        saw_done = False
        try:
            for event in self.first_events:
                saw_done = saw_done or event_data(event) == DONE
                yield event
            if not saw_done:
                async for event in self._rest():
                    saw_done = saw_done or event_data(event) == DONE
                    yield event
            if not saw_done:
                outcome = "truncated"
                yield _error_event("upstream stream ended before completion", "bad_gateway")
        except _StreamFailed as exc:
            outcome = exc.reason
            yield _error_event(exc.message, exc.code)
        except BaseException:
            outcome = "client_disconnect"
            raise
        finally:
            await self.close(outcome)

    async def _rest(self) -> AsyncIterator[bytes]:
        iterator = self.chunks
        while True:
            try:
                chunk = await anext(iterator)
            except StopAsyncIteration:
                return
            except httpx.TimeoutException:
                raise _StreamFailed("stream", "upstream stream stalled", "timeout") from None
            except httpx.HTTPError as exc:
                raise _StreamFailed("stream", f"upstream stream broke: {type(exc).__name__}", "bad_gateway") from None
            try:
                events = self.splitter.feed(chunk)
            except ValueError as exc:
                raise _StreamFailed("stream", str(exc), "bad_gateway") from None
            for event in events:
                yield event

    async def close(self, outcome: str) -> None:
        if self._closed:
            return
        self._closed = True
        # Shielded: this runs while the task is being cancelled on client disconnect, and the
        # upstream connection must still be closed so the engine aborts the request.
        with anyio.CancelScope(shield=True):
            await self.response.aclose()
        self.on_close(outcome)


class _StreamFailed(Exception):
    def __init__(self, reason: str, message: str, code: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.code = code


def _error_event(message: str, code: str) -> bytes:
    return encode_event(error_body(message, "api_error", None, code))


class Relay:
    def __init__(self, config: GatewayConfig, metrics: GatewayMetrics) -> None:
        self._config = config
        self._metrics = metrics
        t = config.timeouts
        timeout = httpx.Timeout(connect=t.connect_s, read=t.stream_idle_s, write=30.0, pool=t.connect_s)
        # Several small connection pools instead of one big one: httpcore scans every connection of a pool for
        # each request it assigns, so with hundreds of concurrent streams one pool spent most of the gateway's CPU
        # in that scan (profiled with py-spy: ~60%). Requests rotate over the shards.
        self._clients = [
            httpx.AsyncClient(
                timeout=timeout,
                limits=httpx.Limits(
                    max_connections=max(16, 4096 // _SHARDS),
                    max_keepalive_connections=max(8, 512 // _SHARDS),
                    keepalive_expiry=30.0,
                ),
            )
            for _ in range(_SHARDS)
        ]
        self._next = 0

    @property
    def client(self) -> httpx.AsyncClient:
        self._next = (self._next + 1) % _SHARDS
        return self._clients[self._next]

    async def aclose(self) -> None:
        await asyncio.gather(*(c.aclose() for c in self._clients))

    def _breaker_failure(self, endpoint: Endpoint) -> None:
        opens = endpoint.breaker.opens
        endpoint.breaker.on_failure(time.monotonic())
        if endpoint.breaker.opens > opens:
            self._metrics.circuit_opens.labels(endpoint.pool, endpoint.url).inc()
            log.warning(
                "circuit opened",
                extra={"pool": endpoint.pool, "endpoint": endpoint.url, "open_s": endpoint.breaker.open_for},
            )

    async def send(
        self,
        req: ParsedRequest,
        pool: Pool,
        headers: dict[str, str],
        wait_disconnect: Callable[[], Awaitable[None]],
    ) -> RelayResult | StreamRelay:
        """Relay `req`; raises ClientGone if the client leaves first (the upstream is then closed).

        The disconnect watch covers the whole try, header wait included: vLLM sends the headers of a
        non-streaming answer only when the answer is complete.
        """
        work = asyncio.ensure_future(self._send(req, pool, headers))
        gone = asyncio.ensure_future(wait_disconnect())
        try:
            done, _ = await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            work.cancel()
            gone.cancel()
            await asyncio.gather(work, gone, return_exceptions=True)
            raise
        if work in done:
            gone.cancel()
            await asyncio.gather(gone, return_exceptions=True)
            return work.result()
        work.cancel()
        (outcome,) = await asyncio.gather(work, return_exceptions=True)
        if isinstance(outcome, StreamRelay):
            await outcome.close("client_disconnect")
        raise ClientGone()

    async def _send(self, req: ParsedRequest, pool: Pool, headers: dict[str, str]) -> RelayResult | StreamRelay:
        body = orjson.dumps(req.body) if req.modified else req.raw
        tried: set[Endpoint] = set()
        last_error: GatewayError | None = None
        for attempt in range(self._config.retries.max_attempts):
            endpoint = pool.pick(tried)
            if endpoint is None:
                break
            tried.add(endpoint)
            if attempt:
                self._metrics.retries.labels(pool.name).inc()
            endpoint.breaker.on_dispatch()
            try:
                result = await self._try(req, body, headers, pool, endpoint)
            except _RetryableFailure as exc:
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
            raise NoHealthyEndpoint(
                f"no healthy endpoint in pool '{pool.name}' for model '{req.model}'",
                retry_after_s=self._config.server.retry_after_s,
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
        released = False

        def release(outcome: str = "") -> None:
            nonlocal released
            if not released:
                released = True
                endpoint.outstanding -= 1
                # A stream's verdict comes when it ends: cut or stalled streams count against the endpoint.
                if outcome == "ok":
                    endpoint.breaker.on_success()
                elif outcome == "client_disconnect":
                    endpoint.breaker.on_abandoned()
                elif outcome:
                    self._breaker_failure(endpoint)

        client = self.client
        upstream = client.build_request("POST", endpoint.url + _PATHS[req.api], content=body, headers=headers)
        response: httpx.Response | None = None
        try:
            try:
                async with asyncio.timeout(self._config.timeouts.first_byte_s):
                    response = await client.send(upstream, stream=True)
                    if response.status_code >= 400:
                        raw = await _read_bounded(response, _MAX_ERROR_BODY)
                        await response.aclose()
                        error = normalise_upstream_error(response.status_code, raw)
                        if response.status_code >= 500:
                            raise _RetryableFailure("http_5xx", _server_error(error, self._config))
                        raise error
                    if req.stream:
                        splitter = SSESplitter()
                        chunks = response.aiter_raw()
                        first = await _first_events(chunks, splitter)
                        return StreamRelay(
                            pool,
                            endpoint,
                            response,
                            chunks,
                            splitter,
                            first,
                            started,
                            release,
                            self._config.timeouts.stream_idle_s,
                            batch_at_dispatch=batch,
                        )
            except httpx.ConnectError as exc:
                endpoint.eject(f"connect failed: {type(exc).__name__}")
                raise _RetryableFailure(
                    "connect",
                    NoHealthyEndpoint("upstream connection failed", retry_after_s=self._config.server.retry_after_s),
                ) from None
            except (TimeoutError, httpx.TimeoutException):
                raise _RetryableFailure("timeout", UpstreamTimeout("upstream engine did not answer in time")) from None
            except _EmptyStream:
                raise _RetryableFailure("stream", UpstreamError("upstream stream ended before any event")) from None
            except httpx.HTTPError as exc:
                raise _RetryableFailure("protocol", UpstreamError(f"upstream failed: {type(exc).__name__}")) from None
            # Non-streaming: the try has succeeded once headers are in; read the body, but stop as soon
            # as the client goes away so the engine does not keep generating for nobody.
            raw = await _read_body(response)
            return RelayResult(response.status_code, raw, pool, endpoint, batch)
        except BaseException:
            if response is not None:
                with anyio.CancelScope(shield=True):
                    await response.aclose()
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


class ClientGone(Exception):
    """The client disconnected before a non-streaming answer was complete."""


class _EmptyStream(Exception):
    pass


def _batch_now(endpoint: Endpoint) -> float:
    """Requests running at the endpoint as this one is sent: the engine's last scrape if any, plus what
    this gateway has sent since (outstanding counts them; the larger of the two avoids double counting)."""
    snap = endpoint.snapshot
    running = snap.running if snap is not None else 0.0
    return max(running, float(endpoint.outstanding))


def _server_error(error: GatewayError, config: GatewayConfig) -> GatewayError:
    if error.status == 503:
        return NoHealthyEndpoint(error.message, retry_after_s=config.server.retry_after_s)
    return UpstreamError(f"upstream engine failed: {error.message}")


async def _read_bounded(response: httpx.Response, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        parts.append(chunk)
        if size > limit:
            break  # the caller sees more than `limit` bytes and knows the answer was cut
    return b"".join(parts)


async def _first_events(chunks: AsyncIterator[bytes], splitter: SSESplitter) -> list[bytes]:
    while True:
        try:
            chunk = await anext(chunks)
        except StopAsyncIteration:
            raise _EmptyStream() from None
        try:
            events = splitter.feed(chunk)
        except ValueError:
            raise _EmptyStream() from None
        if events:
            return events


async def _read_body(response: httpx.Response) -> bytes:
    try:
        body = await _read_bounded(response, _MAX_UPSTREAM_BODY + 1)
    except httpx.TimeoutException:
        raise UpstreamTimeout("upstream engine stalled while answering") from None
    except httpx.HTTPError as exc:
        raise UpstreamError(f"upstream answer broke off: {type(exc).__name__}") from None
    if len(body) > _MAX_UPSTREAM_BODY:
        raise UpstreamError("upstream answer is larger than the gateway relays")
    return body
