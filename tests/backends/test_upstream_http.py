"""The relay's HTTP/1.1 client against real sockets: a scripted asyncio server in the test's loop answers each
request as the test says (keep-alive, chunked, close-delimited, stalls, garbage, early closes, TLS)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import struct
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from specgate.backends.upstream_http import (
    ConnectFailed,
    ConnectionLimit,
    Response,
    StaleConnection,
    UpstreamClient,
    UpstreamFailure,
)

HEAD_OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"


@dataclass
class Seen:
    head: bytes
    body: bytes
    connection: int  # which connection (1, 2, ...) it came on
    index: int  # which request on that connection (1, 2, ...)


# respond(seen, reader, writer) -> keep the connection open for another request?
Respond = Callable[[Seen, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[bool]]


@dataclass
class Server:
    url: str
    requests: list[Seen] = field(default_factory=list)
    connections: int = 0
    eof_seen: asyncio.Event = field(default_factory=asyncio.Event)


@asynccontextmanager
async def serve(respond: Respond, ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[Server]:
    state = Server("")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        number, index = state.connections, 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    state.eof_seen.set()
                    return
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                index += 1
                seen = Seen(head, await reader.readexactly(length), number, index)
                state.requests.append(seen)
                if not await respond(seen, reader, writer):
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            state.eof_seen.set()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ssl_context)
    port = server.sockets[0].getsockname()[1]
    state.url = f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
    try:
        yield state
    finally:
        server.close()


async def json_answer(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    payload = b'{"n": %d}' % len(seen.body)
    writer.write(HEAD_OK + b"content-length: %d\r\n\r\n" % len(payload) + payload)
    await writer.drain()
    return True


def client() -> UpstreamClient:
    return UpstreamClient()


async def start(c: UpstreamClient, url: str, body: bytes = b"{}", headers: dict[str, str] | None = None) -> Response:
    """POST to the server; the answer once its head is in."""
    return await c.post(url, "/v1/completions", body, headers or {}, connect_s=2, head_s=2)


async def post(c: UpstreamClient, url: str, body: bytes = b"{}", **headers: str) -> tuple[int, bytes]:
    response = await start(c, url, body, headers)
    try:
        return response.status, await response.read(1 << 20, 2)
    finally:
        response.close()


async def test_answers_and_keeps_the_connection_alive() -> None:
    async with serve(json_answer) as server:
        c = client()
        assert await post(c, server.url, b'{"a": 1}', **{"x-request-id": "r1"}) == (200, b'{"n": 8}')
        assert await post(c, server.url, b"{}") == (200, b'{"n": 2}')
        assert server.connections == 1 and [s.index for s in server.requests] == [1, 2]
        head = server.requests[0].head
        assert head.startswith(b"POST /v1/completions HTTP/1.1\r\n")
        assert b"\r\nhost: 127.0.0.1:" in head and b"\r\ncontent-length: 8\r\n" in head and b"x-request-id: r1" in head
        c.close()


async def test_base_url_path_is_a_prefix() -> None:
    async with serve(json_answer) as server:
        c = client()
        await post(c, server.url + "/engine-a")
        assert server.requests[0].head.startswith(b"POST /engine-a/v1/completions HTTP/1.1\r\n")
        c.close()


async def test_chunked_stream_arrives_in_pieces() -> None:
    async def stream(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for part in (b"data: 1\n\n", b"data: 2\n\n"):
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async with serve(stream) as server:
        c = client()
        response = await start(c, server.url)
        pieces = []
        while chunk := await response.next_chunk(2):
            pieces.append(chunk)
        assert pieces == [b"data: 1\n\n", b"data: 2\n\n"]  # de-chunked, one piece per arrival
        response.close()
        await post(c, server.url)  # the connection went back to the pool whole
        assert server.connections == 1
        c.close()


async def test_body_delimited_by_close() -> None:
    async def close_delimited(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\n\r\nall of it")
        await writer.drain()
        return False

    async with serve(close_delimited) as server:
        assert await post(client(), server.url) == (200, b"all of it")


async def test_closing_early_closes_the_connection() -> None:
    async def endless(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()
        await reader.read(1)  # returns at EOF: the client hung up
        raise ConnectionResetError

    async with serve(endless) as server:
        c = client()
        response = await start(c, server.url)
        assert await response.next_chunk(2) == b"hello"
        response.close()
        await asyncio.wait_for(server.eof_seen.wait(), 2)  # this is how the engine learns to abort
        c.close()


async def test_refused_connection() -> None:
    async with serve(json_answer) as server:
        url = server.url
    with pytest.raises(ConnectFailed):
        await post(client(), url)


async def test_a_reused_connection_that_breaks_with_nothing_back_is_not_replayed() -> None:
    # The engine closes a kept-alive connection after reading the next request, without answering: it may have
    # started on it, so the client does not send it again (the relay's failover policy decides, and counts).
    async def first_only(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        if seen.index == 2:
            return False  # closed without an answer
        return await json_answer(seen, reader, writer)

    async with serve(first_only) as server:
        c = client()
        await post(c, server.url)
        with pytest.raises(StaleConnection):
            await post(c, server.url, b"{}")
        assert [(s.connection, s.index) for s in server.requests] == [(1, 1), (1, 2)]  # received once, not twice
        c.close()


async def test_a_connection_the_engine_closed_while_idle_is_not_reused() -> None:
    # vLLM closes idle keep-alive connections after 5 s: one closed that way is seen (its FIN, peeked) before reuse.
    async def then_close(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        await json_answer(seen, reader, writer)
        return False  # keep-alive promised, then closed while idle

    async with serve(then_close) as server:
        c = client()
        await post(c, server.url)
        await asyncio.sleep(0.1)  # the FIN arrives while the connection sits in the pool
        assert await post(c, server.url, b"{}") == (200, b'{"n": 2}')
        assert [(s.connection, s.index) for s in server.requests] == [(1, 1), (2, 1)]
        c.close()


async def test_idle_connections_expire_below_the_engines_keep_alive() -> None:
    async with serve(json_answer) as server:
        c = UpstreamClient(idle_expiry_s=0.05)
        await post(c, server.url)
        await post(c, server.url)  # at once: reused
        await asyncio.sleep(0.1)
        await post(c, server.url)  # idle too long: a new connection
        resp = await c.post(server.url, "/v1/completions", b"{}", {}, connect_s=2, head_s=2, idle_expiry_s=60)
        await resp.read(1 << 20, 2)
        resp.close()  # a per-call expiry (a pool's own) overrides the client's
        assert [(s.connection, s.index) for s in server.requests] == [(1, 1), (1, 2), (2, 1), (2, 2)]
        c.close()


async def test_interim_answers_are_skipped_and_retry_after_is_kept() -> None:
    async def busy(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\nretry-after: 99\r\n\r\n")
        payload = b'{"error": "busy"}'
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 7\r\ncontent-length: %d\r\n\r\n" % len(payload))
        writer.write(payload)
        await writer.drain()
        return True

    async with serve(busy) as server:
        c = client()
        response = await start(c, server.url)
        assert (response.status, response.retry_after) == (503, "7")
        assert await response.read(1 << 20, 2) == b'{"error": "busy"}'
        response.close()
        c.close()


async def test_a_reset_ends_a_close_delimited_body_as_a_failure_not_a_complete_answer() -> None:
    async def reset(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\n\r\npart of it")
        await writer.drain()
        await asyncio.sleep(0.05)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        writer.transport.abort()
        return False

    async with serve(reset) as server:
        response = await start(client(), server.url)
        with pytest.raises(UpstreamFailure):
            while await response.next_chunk(2):
                pass
        response.close()


async def test_callers_cannot_set_framing_headers_or_invalid_names() -> None:
    async with serve(json_answer) as server:
        c = client()
        headers = {
            "Content-Length": "999",
            "host": "evil",
            "transfer-encoding": "chunked",
            "bad name": "x",
            "x-ok": "1",
        }
        await post(c, server.url, b"{}", **headers)
        head = server.requests[0].head.lower()
        assert head.count(b"content-length") == 1 and b"evil" not in head and b"transfer-encoding" not in head
        assert b"bad name" not in head and b"x-ok: 1" in head
        c.close()


async def test_fresh_connection_closed_without_answer_is_a_failure() -> None:
    async def hang_up(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        return False

    async with serve(hang_up) as server:
        with pytest.raises(UpstreamFailure, match="closed the connection"):
            await post(client(), server.url)
        assert len(server.requests) == 1  # not retried: it may have reached the engine


async def test_no_head_in_time() -> None:
    async def silent(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        await reader.read(1)  # returns at EOF: the client hung up
        raise ConnectionResetError

    async with serve(silent) as server:
        c = client()
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await c.post(server.url, "/v1/completions", b"{}", {}, connect_s=2, head_s=0.2)
        assert time.monotonic() - started < 1.5
        await asyncio.wait_for(server.eof_seen.wait(), 2)  # and the connection was closed
        c.close()


async def test_stalled_body_times_out() -> None:
    async def stall(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n")
        await writer.drain()
        await reader.read(1)
        return False

    async with serve(stall) as server:
        c = client()
        response = await start(c, server.url)
        assert await response.next_chunk(1) == b"hi"
        with pytest.raises(TimeoutError):
            await response.next_chunk(0.2)
        response.close()
        c.close()


async def test_cut_body_is_a_failure() -> None:
    async def cut(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(HEAD_OK + b"content-length: 100\r\n\r\nonly this")
        await writer.drain()
        return False

    async with serve(cut) as server:
        c = client()
        response = await start(c, server.url)
        assert await response.next_chunk(1) == b"only this"  # what came before the cut is still handed on
        with pytest.raises(UpstreamFailure, match="before the answer was complete"):
            await response.next_chunk(1)
        response.close()


async def test_malformed_answer() -> None:
    async def garbage(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HELLO THERE\r\n\r\n")
        await writer.drain()
        await reader.read(1)
        return False

    async with serve(garbage) as server:
        with pytest.raises(UpstreamFailure, match="malformed"):
            await post(client(), server.url)


async def test_header_values_cannot_split_the_request() -> None:
    async with serve(json_answer) as server:
        await post(client(), server.url, **{"traceparent": "00-abc\r\nx-evil: 1", "x-request-id": "fine"})
        head = server.requests[0].head
        assert b"x-evil" not in head and b"traceparent" not in head and b"x-request-id: fine" in head


async def test_big_body_and_the_size_limit() -> None:
    big = b"x" * (5 << 20)

    async def large(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(HEAD_OK + b"content-length: %d\r\n\r\n" % len(big))
        for i in range(0, len(big), 1 << 16):
            writer.write(big[i : i + (1 << 16)])
            await writer.drain()
        return True

    async with serve(large) as server:
        c = client()
        response = await start(c, server.url)
        assert await response.read(10 << 20, 2) == big  # reading paused and resumed along the way
        response.close()
        response = await start(c, server.url)
        cut = await response.read(1 << 20, 2)
        assert 1 << 20 < len(cut) < len(big)  # more than the limit back: the caller knows it is too big
        response.close()
        c.close()


async def test_unsolicited_bytes_on_an_idle_connection_retire_it() -> None:
    async def chatty(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        await json_answer(seen, reader, writer)
        if seen.connection == 1:
            await asyncio.sleep(0.05)
            writer.write(b"HTTP/1.1 200 OK\r\n\r\n")  # nobody asked
            await writer.drain()
        return True

    async with serve(chatty) as server:
        c = client()
        await post(c, server.url)
        await asyncio.sleep(0.2)
        assert await post(c, server.url) == (200, b'{"n": 2}')
        assert [s.connection for s in server.requests] == [1, 2]
        c.close()


async def test_tls(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    openssl = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    names = ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)]
    await asyncio.to_thread(subprocess.run, [*openssl, *names], check=True, capture_output=True)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    async with serve(json_answer, ssl_context=server_ctx) as server:
        with pytest.raises(ConnectFailed):  # an untrusted certificate is refused
            await post(client(), server.url)
        trusted = UpstreamClient(ssl_context=ssl.create_default_context(cafile=str(cert)))
        assert await post(trusted, server.url) == (200, b'{"n": 2}')
        trusted.close()
        # A pool's TLS settings changed by a config reload take effect on the same client: per call, not first-come.
        c = client()

        async def call(ctx: ssl.SSLContext) -> int:
            r = await c.post(server.url, "/v1/completions", b"{}", {}, connect_s=2, head_s=2, ssl_context=ctx)
            r.close()
            return r.status

        with pytest.raises(ConnectFailed):
            await call(ssl.create_default_context())
        assert await call(ssl.create_default_context(cafile=str(cert))) == 200
        with pytest.raises(ConnectFailed):
            await call(ssl.create_default_context())
        c.close()


async def test_a_connection_cap_queues_requests_in_order_and_times_out_without_sending() -> None:
    release = asyncio.Event()

    async def held(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        if seen.body == b"hold":
            await release.wait()
        return await json_answer(seen, reader, writer)

    async with serve(held) as server:
        c = client()
        waits: list[int] = []

        async def send(body: bytes, connect_s: float = 2) -> tuple[int, bytes]:
            r = await c.post(
                server.url, "/v1/completions", body, {}, connect_s=connect_s, head_s=5,
                max_connections=2, on_queued=lambda: waits.append(1),
            )  # fmt: skip
            try:
                return r.status, await r.read(1 << 20, 5)
            finally:
                r.close()

        busy = [asyncio.create_task(send(b"hold")) for _ in range(2)]
        await asyncio.sleep(0.1)
        assert c.open_connections() == {server.url: 2}
        with pytest.raises(ConnectionLimit):  # both busy for the whole connect timeout: never sent
            await send(b"late", connect_s=0.2)
        assert len(server.requests) == 2 and len(waits) == 1
        queued = asyncio.create_task(send(b"{}"))
        await asyncio.sleep(0.1)
        assert not queued.done() and len(server.requests) == 2
        release.set()
        assert await queued == (200, b'{"n": 2}') and [await t for t in busy] == [(200, b'{"n": 4}')] * 2
        assert server.connections == 2  # the queued request took a connection given back
        assert c.open_connections() == {server.url: 2}
        c.close()
        await asyncio.sleep(0.05)
        assert c.open_connections() == {}


async def test_cancelling_towards_a_stuck_tls_peer_drops_the_connection_without_flushing(tmp_path: Path) -> None:
    """A TLS engine that stopped reading, with megabytes of the request still unsent: giving up (here the head
    timeout) must drop the connection at once (abort), not wait to flush the body and shut TLS down in order (close),
    which a stuck peer would hold for ever. Seen from the engine: the connection breaks before the body is in."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    openssl = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    names = ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)]
    await asyncio.to_thread(subprocess.run, [*openssl, *names], check=True, capture_output=True)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    body = b"x" * (16 << 20)
    received: list[int] = []

    async def stuck(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(1.0)  # not reading while the client gives up
        got = 0
        with contextlib.suppress(ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
            while chunk := await asyncio.wait_for(reader.read(1 << 20), 2):
                got += len(chunk)
        received.append(got)
        writer.close()

    server = await asyncio.start_server(stuck, "127.0.0.1", 0, ssl=server_ctx)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    c = UpstreamClient(ssl_context=ssl.create_default_context(cafile=str(cert)))
    try:
        with pytest.raises(TimeoutError):
            await c.post(url, "/v1/completions", body, {}, connect_s=2, head_s=0.3)
        for _ in range(100):
            if received:
                break
            await asyncio.sleep(0.05)
        assert received and received[0] < len(body), received  # dropped, not flushed to the end
    finally:
        c.close()
        server.close()
