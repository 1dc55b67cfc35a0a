"""A lean HTTP/1.1 client for the relay's calls to engines: an asyncio protocol per connection, the httptools
(llhttp) parser, keep-alive pools per origin.

Why not httpx here: profiled under load, httpx/httpcore/anyio/h11 took about half of the gateway's CPU per request
(docs/performance.md). The relay needs little of what they offer: one POST at a time per connection, a status, a
body that arrives as chunks, timeouts, and closing. Health checks and scrapes (not on the request path) still
use httpx.

Closing a response before its body is complete closes the connection: that is how vLLM learns that the client
left and aborts the request. A complete answer on a keep-alive connection returns the connection to its pool.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable
from urllib.parse import urlsplit

import httptools
from specgate.backends.tls import tls_error

__all__ = ["ConnectFailed", "ConnectionLimit", "Response", "StaleConnection", "UpstreamClient", "UpstreamFailure"]

# Stop reading from the socket while this much of a streamed body waits for the relay to take it.
_HIGH_WATER = 256 * 1024
# Small bodies go out with their head in one write (one syscall); big ones in two (no copy).
_JOIN_BELOW = 64 * 1024


class UpstreamFailure(Exception):
    """The exchange failed after the connection was made: a malformed answer, or the connection closed early."""


class ConnectFailed(UpstreamFailure):
    """No connection could be made (refused, unreachable, DNS, TLS handshake, or the connect timeout)."""


class ConnectionLimit(UpstreamFailure):
    """Every connection the endpoint may have (`max_connections`) stayed busy for the connect timeout. The request
    was not sent."""


class StaleConnection(UpstreamFailure):
    """A kept-alive connection failed with nothing back after the request was written: most likely the engine closed
    it as idle just before, but the request may have reached it. Not replayed here: the relay's failover policy
    decides, and counts it."""


# An HTTP token (RFC 9110): what a header name may be.
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# Set by the client itself: a caller's copy would contradict or duplicate them.
_OWN_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer"})


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class _Connection(asyncio.Protocol):
    """One upstream connection; carries one exchange at a time."""

    def __init__(self, origin: _Origin) -> None:
        self.origin = origin
        self.loop = origin.loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers_done = False
        self.complete = False
        self.body: list[bytes] = []
        self.buffered = 0
        self.paused = False
        self.error: UpstreamFailure | None = None
        self.got_bytes = False
        self.closed = False
        self.waiter: asyncio.Future[None] | None = None
        self.idle_since = 0.0
        # Holds one of the origin's connection slots until it is gone (`_Origin.forget`).
        self.slot = False
        # An answer with neither Content-Length nor chunked coding ends when the connection closes.
        self.length_known = False
        self.keep_alive = False
        # A 1xx interim answer (100 Continue, 103 Early Hints) is skipped: the final answer follows.
        self.interim = False
        self.retry_after: str | None = None

    # -- protocol callbacks (event loop) --

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a socket connection always gives a Transport

    def data_received(self, data: bytes) -> None:
        if self.origin.is_idle(self):
            # Nothing is owed on an idle connection: whatever comes is a protocol error; drop the connection.
            self.abort()
            return
        self.got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(UpstreamFailure(f"malformed upstream answer: {exc}"))
            self.abort()

    def eof_received(self) -> bool | None:
        return None  # close our side too; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.origin.forget(self)
        if self.headers_done and not self.complete and not self.length_known and self.error is None and exc is None:
            self.complete = True  # body delimited by the end of the connection (a clean close; a reset is not one)
        elif not self.complete:
            # A TLS alert (TLS 1.3 servers refuse a missing client certificate after the handshake) says why.
            why = f": {tls_error(exc)}" if isinstance(exc, ssl.SSLError) else ""
            self._fail(UpstreamFailure(f"upstream closed the connection before the answer was complete{why}"))
        self._wake()

    def pause_writing(self) -> None:  # asyncio requires these; request bodies are written whole
        pass

    def resume_writing(self) -> None:
        pass

    # -- parser callbacks --

    def on_header(self, name: bytes, value: bytes) -> None:
        lowered = name.lower()
        if lowered == b"content-length" or (lowered == b"transfer-encoding" and b"chunked" in value.lower()):
            self.length_known = True
        elif lowered == b"retry-after":
            self.retry_after = value.decode("latin-1").strip()[:64]

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:
            self.interim = True  # its headers are not the answer's
            self.length_known = False
            self.retry_after = None
            return
        self.status = status
        self.headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self.buffered += len(body)
        if self.buffered > _HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
            return
        self.complete = True
        # Asked here: once feed_data() returns, the parser has moved on and always says no.
        self.keep_alive = self.parser.should_keep_alive()
        self._wake()

    # -- used by Response and the pool --

    def _fail(self, error: UpstreamFailure) -> None:
        if self.error is None:
            self.error = error
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, within_s: float) -> None:
        waiter = self.loop.create_future()
        self.waiter = waiter
        # A loop timer rather than asyncio.timeout(): this runs for every chunk, and needs no task lookup or context.
        timer = self.loop.call_later(within_s, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self.waiter = None

    def start(self, payload: bytes, body: bytes) -> None:
        self.status = 0
        self.headers_done = self.complete = self.got_bytes = self.length_known = self.keep_alive = False
        self.interim = False
        self.retry_after = None
        self.error = None
        assert self.transport is not None
        if body and len(body) >= _JOIN_BELOW:
            self.transport.write(payload)
            self.transport.write(body)
        else:
            self.transport.write(payload + body if body else payload)

    def take(self) -> bytes:
        data = self.body[0] if len(self.body) == 1 else b"".join(self.body)
        self.body.clear()
        self.buffered = 0
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return data

    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed and self.error is None

    def abort(self) -> None:
        # abort(), not close(): close() flushes and, over TLS, waits for the peer's close_notify, so a stuck engine
        # could hold a cancel; abort drops the connection at once (the engine sees it go and aborts the request).
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.abort()
        self.origin.forget(self)

    def peer_closed(self) -> bool:
        """Whether the engine has already closed this idle connection (its FIN or a reset waits unread): checked
        before reuse, so that the common stale-connection race never costs a request."""
        if self.closed or self.transport is None:
            return True
        sock = self.transport.get_extra_info("socket")
        if sock is None:
            return False
        try:
            # asyncio hands out a wrapper without recv: its socket (CPython keeps it in `_sock`; one syscall on the
            # request path), else a duplicate descriptor of it.
            raw = getattr(sock, "_sock", None)
            if isinstance(raw, socket.socket):
                raw.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            else:
                with sock.dup() as dup:
                    dup.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False  # nothing waiting: open
        except OSError:
            return True
        # b"": the engine's FIN. Bytes: nothing is owed on an idle connection, so it is broken either way.
        return True


class Response:
    """An answer whose head has arrived. Read its body with `next_chunk` / `read`, then `close` it (always)."""

    __slots__ = ("_conn", "_done", "retry_after", "status")

    def __init__(self, conn: _Connection) -> None:
        self._conn = conn
        self.status = conn.status
        # The engine's Retry-After (on 429 / 503), passed on to the client.
        self.retry_after = conn.retry_after
        self._done = False

    async def next_chunk(self, within_s: float) -> bytes:
        """The body bytes received since the last call (waiting up to `within_s` s for some); b"" at the end.
        Raises TimeoutError when nothing came in time and UpstreamFailure when the answer broke off."""
        if self._done:
            return b""
        conn = self._conn
        while True:
            if conn.body:
                return conn.take()
            if conn.complete:
                self._finish()
                return b""
            if conn.error is not None:
                raise conn.error
            await conn.wait(within_s)

    async def read(self, limit: int, idle_s: float) -> bytes:
        """The whole body, or its first bytes past `limit` (more than `limit` bytes back means: too big)."""
        parts: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = await self.next_chunk(idle_s)
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _finish(self) -> None:
        if self._done:
            return
        self._done = True
        conn = self._conn
        if conn.reusable():
            conn.origin.release(conn)
        else:
            conn.abort()

    def close(self) -> None:
        """Give the connection back (answer complete) or close it (anything else: the engine then aborts)."""
        if self._done:
            return
        conn = self._conn
        if conn.complete and not conn.body:
            self._finish()
            return
        self._done = True
        conn.abort()


class _Origin:
    """Connections to one scheme://host:port."""

    def __init__(
        self, url: str, max_idle: int, ssl_context: ssl.SSLContext | None, server_name: str | None = None
    ) -> None:
        parts = urlsplit(url)
        self.loop = asyncio.get_running_loop()
        self.host = parts.hostname or ""
        tls = parts.scheme == "https"
        self.port = parts.port or (443 if tls else 80)
        self.ssl = (ssl_context or ssl.create_default_context()) if tls else None
        # The name the certificate is checked against (and SNI), when the URL holds another (an IP address).
        self.server_name = server_name or self.host
        default_port = parts.port is None
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = (host if default_port else f"{host}:{self.port}").encode("ascii")
        self.prefix = parts.path.rstrip("/").encode("ascii")
        self.max_idle = max_idle
        # An ordered set: popitem() gives the most recently used connection (warm), the oldest expire.
        self.idle: dict[_Connection, None] = {}
        # Connections open or being opened, against the per-origin cap (None: no cap), and who waits for one.
        self.open = 0
        self.limit: int | None = None
        self.waiters: deque[asyncio.Future[None]] = deque()
        # The TLS settings the client was asked for when it made this origin (UpstreamClient._origin).
        self.made_with: tuple[ssl.SSLContext | None, str | None] = (ssl_context, server_name)

    def is_idle(self, conn: _Connection) -> bool:
        return conn in self.idle

    def forget(self, conn: _Connection) -> None:
        """The connection is gone (closed by either side): its slot is free."""
        self.idle.pop(conn, None)
        if conn.slot:
            conn.slot = False
            self.open -= 1
            self._wake_one()

    def release(self, conn: _Connection) -> None:
        if len(self.idle) >= self.max_idle:
            conn.abort()
            return
        conn.idle_since = time.monotonic()
        self.idle[conn] = None
        self._wake_one()

    def _wake_one(self) -> None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def may_open(self) -> bool:
        return self.limit is None or self.open < self.limit

    async def wait_turn(self, deadline: float) -> None:
        """Until a connection is given back or closed; ConnectionLimit at `deadline` (loop time)."""
        waiter = self.loop.create_future()
        self.waiters.append(waiter)
        timer = self.loop.call_at(deadline, _expire, waiter)
        try:
            await waiter
        except TimeoutError:
            raise ConnectionLimit(
                f"all {self.limit} connections to {self.host}:{self.port} stayed busy; the request was not sent"
            ) from None
        finally:
            timer.cancel()

    def take_idle(self, idle_expiry_s: float) -> _Connection | None:
        now = time.monotonic()
        while self.idle:
            conn, _ = self.idle.popitem()
            if now - conn.idle_since > idle_expiry_s or conn.peer_closed():
                conn.abort()
                continue
            return conn
        return None

    async def connect(self, within_s: float) -> _Connection:
        conn = _Connection(self)
        conn.slot = True
        self.open += 1
        try:
            async with asyncio.timeout(within_s):
                await self.loop.create_connection(
                    lambda: conn,
                    self.host,
                    self.port,
                    ssl=self.ssl,
                    server_hostname=self.server_name if self.ssl else None,
                )
        except ssl.SSLError as exc:
            self.forget(conn)
            raise ConnectFailed(f"TLS with {self.host}:{self.port} failed: {tls_error(exc)}") from None
        except (OSError, TimeoutError) as exc:
            self.forget(conn)
            raise ConnectFailed(f"cannot connect to {self.host}:{self.port}: {type(exc).__name__}") from None
        except BaseException:
            self.forget(conn)
            raise
        return conn

    def close(self) -> None:
        while self.idle:
            conn, _ = self.idle.popitem()
            conn.abort()


def _header_lines(headers: dict[str, str]) -> bytes:
    lines = []
    for name, value in headers.items():
        if not _TOKEN.match(name) or name.lower() in _OWN_HEADERS:
            continue  # not a header name, or one this client sets itself
        if "\r" in value or "\n" in value or "\0" in value:
            continue  # never let a header value split the upstream request
        lines.append(f"{name}: {value}\r\n")
    return "".join(lines).encode("latin-1")


class UpstreamClient:
    """Keep-alive connection pools, one per origin (created on first use)."""

    def __init__(
        self, *, max_idle_per_origin: int = 512, idle_expiry_s: float = 4.0, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self._origins: dict[str, _Origin] = {}
        self._max_idle = max_idle_per_origin
        self._idle_expiry_s = idle_expiry_s
        self._ssl = ssl_context

    def _origin(self, base_url: str, ssl_context: ssl.SSLContext | None, server_name: str | None) -> _Origin:
        origin = self._origins.get(base_url)
        tls = (ssl_context, server_name)
        if origin is not None and (origin.made_with[0] is not tls[0] or origin.made_with[1] != tls[1]):
            # The pool's TLS changed (a config reload: a rotated certificate, another CA or name): connections made
            # with the old settings are not reused. Those in flight finish and are then closed by the engine.
            origin.close()
            origin = None
        if origin is None:
            origin = _Origin(base_url, self._max_idle, ssl_context or self._ssl, server_name)
            origin.made_with = tls
            self._origins[base_url] = origin
        return origin

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
    ) -> Response:
        """POST `body` to base_url + path; returns once the answer's head is in.

        Raises ConnectFailed (no connection within `connect_s`), TimeoutError (no head within `head_s` of
        sending), StaleConnection or UpstreamFailure. Nothing is sent twice here.

        Kept-alive connections idle for longer than `idle_expiry_s` (default: the client's), or already closed by the
        engine, are not reused: keep it below the engine's own keep-alive (vLLM closes idle connections after 5 s,
        `VLLM_HTTP_TIMEOUT_KEEP_ALIVE`), so that the engine never closes one as it is being reused.
        `ssl_context` and `server_name` (a pool's TLS settings) apply from the first call for a base URL.
        With `max_connections`, a request finding them all busy waits (in order) for one to come back, up to
        `connect_s`, then raises ConnectionLimit; `on_queued` is called when it has to wait.
        """
        origin = self._origin(base_url, ssl_context, server_name)
        origin.limit = max_connections
        payload = b"POST %s%s HTTP/1.1\r\nhost: %s\r\ncontent-length: %d\r\n%s\r\n" % (
            origin.prefix,
            path.encode("ascii"),
            origin.host_header,
            len(body),
            _header_lines(headers),
        )
        expiry = self._idle_expiry_s if idle_expiry_s is None else idle_expiry_s
        deadline = origin.loop.time() + connect_s
        queued = False
        while (conn := origin.take_idle(expiry)) is None and not origin.may_open():
            if not queued and on_queued is not None:
                on_queued()
            queued = True
            await origin.wait_turn(deadline)
        reused = conn is not None
        if conn is None:
            conn = await origin.connect(max(0.001, deadline - origin.loop.time()) if queued else connect_s)
        conn.start(payload, body)
        try:
            while not conn.headers_done:
                if conn.error is not None:
                    raise conn.error
                await conn.wait(head_s)
        except UpstreamFailure as exc:
            conn.abort()
            if reused and not conn.got_bytes:
                raise StaleConnection(f"a reused connection closed with no answer: {exc}") from None
            raise
        except BaseException:
            conn.abort()
            raise
        return Response(conn)

    def open_connections(self) -> dict[str, int]:
        """Connections open (or opening) per base URL."""
        return {url: origin.open for url, origin in self._origins.items()}

    def close(self) -> None:
        for origin in self._origins.values():
            origin.close()
        self._origins.clear()
