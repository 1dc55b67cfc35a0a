"""The seam between the relay and the wire: `UpstreamTransport`, and `MockUpstream`, an in-memory transport built
from a handler function (in the spirit of httpx's `MockTransport`) for fast tests of relay, failover and retry
logic without sockets.

`UpstreamClient` (upstream_http.py) is the real transport. The contract both keep:
- `post` returns once an answer's head is in. It raises ConnectFailed when no connection could be made (the
  request never reached the engine), TimeoutError when no head came within `head_s`, StaleConnection when a
  reused keep-alive connection broke with nothing back (the engine may or may not have the request), UpstreamFailure
  for any other broken exchange. It never sends a request twice: retries are the relay's.
- The caller closes every response it got, whatever happened; closing one whose body is not complete aborts
  the exchange (that is how an engine learns the client left).
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["MockAnswer", "MockRequest", "MockUpstream", "UpstreamResponse", "UpstreamTransport"]


class UpstreamResponse(Protocol):
    @property
    def status(self) -> int: ...

    @property
    def retry_after(self) -> str | None:
        """The answer's Retry-After header, if any."""
        ...

    async def next_chunk(self, within_s: float) -> bytes:
        """Body bytes since the last call, waiting up to `within_s` s; b"" at the end. Raises TimeoutError,
        UpstreamFailure."""
        ...

    async def read(self, limit: int, idle_s: float) -> bytes:
        """The whole body, or its first bytes past `limit` (more than `limit` bytes back means: too big)."""
        ...

    def close(self) -> None: ...


class UpstreamTransport(Protocol):
    async def post(
        self,
        base_url: str,
        path: str,
        body: bytes,
        headers: dict[str, str],
        *,
        connect_s: float,
        head_s: float,
        idle_expiry_s: float | None = None,
        ssl_context: ssl.SSLContext | None = None,
        server_name: str | None = None,
        max_connections: int | None = None,
        on_queued: Callable[[], None] | None = None,
    ) -> UpstreamResponse: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class MockRequest:
    base_url: str
    path: str
    body: bytes
    headers: dict[str, str]


@dataclass(slots=True)
class MockAnswer:
    """What the mock engine answers: a status and body chunks, each bytes or an exception to raise when the
    relay reads that far (TimeoutError: a stall, UpstreamFailure: a broken connection)."""

    status: int = 200
    chunks: Sequence[bytes | BaseException] = ()
    retry_after: str | None = None
    # Done: read to its end (as with the real client, the connection is then given back) or closed.
    closed: bool = field(default=False, init=False)
    # True when closed before the body was read to its end (the engine would abort the request).
    aborted: bool = field(default=False, init=False)
    _next: int = field(default=0, init=False)

    async def next_chunk(self, within_s: float) -> bytes:
        if self.closed:
            return b""
        if self._next >= len(self.chunks):
            self.closed = True
            return b""
        item = self.chunks[self._next]
        self._next += 1
        if isinstance(item, BaseException):
            raise item
        return item

    async def read(self, limit: int, idle_s: float) -> bytes:
        parts: list[bytes] = []
        while sum(map(len, parts)) <= limit and (chunk := await self.next_chunk(idle_s)):
            parts.append(chunk)
        return b"".join(parts)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.aborted = self._next < len(self.chunks)


Handler = Callable[[MockRequest], Awaitable[MockAnswer]]


class MockUpstream:
    """A transport that answers every request with `await handler(request)`; the handler may raise what the real
    transport raises (ConnectFailed, TimeoutError, UpstreamFailure). Records requests and answers."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self.requests: list[MockRequest] = []
        self.answers: list[MockAnswer] = []
        self.closed = False

    async def post(
        self,
        base_url: str,
        path: str,
        body: bytes,
        headers: dict[str, str],
        *,
        connect_s: float,
        head_s: float,
        idle_expiry_s: float | None = None,
        ssl_context: ssl.SSLContext | None = None,
        server_name: str | None = None,
        max_connections: int | None = None,
        on_queued: Callable[[], None] | None = None,
    ) -> MockAnswer:
        if self.closed:
            raise RuntimeError("transport used after close")
        request = MockRequest(base_url, path, body, dict(headers))
        self.requests.append(request)
        answer = await self._handler(request)
        self.answers.append(answer)
        return answer

    def close(self) -> None:
        self.closed = True
