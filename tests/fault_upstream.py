"""A fault-injecting, OpenAI-compatible upstream for tests (a real HTTP/1.1 server on a thread, raw asyncio so
that it can misbehave at the byte level). Not an engine: fixed answers, and each instance fails the way `mode`
says. It counts requests and open connections so tests can check that nothing leaks.

modes: ok | http_500 | slow_headers | stall_stream | cut_stream | garbage_sse | truncated_sse | oversized
| slow_metrics (its /metrics answers after delay_s)
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

CHUNKS = 16


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _event(i: int, model: str) -> bytes:
    body = {"id": "cmpl-f", "object": "text_completion", "model": model, "choices": [{"index": 0, "text": f"t{i} "}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class FaultUpstream:
    def __init__(self, mode: str = "ok", delay_s: float = 0.0, chunk_delay_s: float = 0.0) -> None:
        self.mode = mode
        self.delay_s = delay_s
        self.chunk_delay_s = chunk_delay_s
        self.hits = 0
        self.open_connections = 0
        self.connections = 0  # accepted in all
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def wait_idle(self, timeout_s: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.open_connections and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.open_connections == 0

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open_connections += 1
        self.connections += 1
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    return
                keep = await self._answer(request, reader, writer)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            self.open_connections -= 1
            writer.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> dict[str, Any] | None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        data = json.loads(body) if body else {}
        return {"method": method, "path": path, "headers": headers, "body": data}

    async def _answer(
        self, request: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        mode = self.mode
        body = request["body"]
        model = body.get("model", "m")
        if request["path"] in ("/health", "/metrics") or request["method"] == "GET":
            payload = b"" if request["path"] == "/health" else b"# no metrics\n"
            if mode == "slow_metrics" and request["path"] == "/metrics":
                await asyncio.sleep(self.delay_s)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(payload) + payload)
            await writer.drain()
            return True
        self.hits += 1  # generation requests only, not health checks or scrapes
        if mode == "slow_headers":
            await asyncio.sleep(self.delay_s)
        if mode == "http_500":
            payload = b'{"error": {"message": "engine exploded", "type": "InternalServerError", "code": 500}}'
            writer.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n")
            writer.write(b"content-length: %d\r\n\r\n" % len(payload) + payload)
            await writer.drain()
            return True
        if not body.get("stream"):
            return await self._json(writer, model, mode)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for i in range(CHUNKS):
            if mode == "garbage_sse" and i == 2:
                writer.write(_chunk(b"\x00\xff this is not server-sent events \xfe\n\n"))
            elif mode == "truncated_sse" and i == 2:
                writer.write(_chunk(b'data: {"id": "cmpl-f", "choi'))
                writer.write(b"0\r\n\r\n")
                await writer.drain()
                return True
            else:
                writer.write(_chunk(_event(i, model)))
            await writer.drain()
            if mode == "stall_stream" and i == 1:
                # Silent until the client hangs up (EOF): that is how a test sees the gateway let go.
                await asyncio.wait_for(reader.read(1), 3600)
                return False
            if mode == "cut_stream" and i == 3:
                return False  # connection closed without the terminating chunk
            if self.chunk_delay_s:
                await asyncio.sleep(self.chunk_delay_s)
        writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _json(self, writer: asyncio.StreamWriter, model: str, mode: str) -> bool:
        answer = {
            "id": "cmpl-f",
            "object": "text_completion",
            "model": model,
            "choices": [{"index": 0, "text": "fixed answer", "finish_reason": "length"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
        if mode == "oversized":
            answer["choices"][0]["text"] = "x" * (80 * 1024 * 1024)
        payload = json.dumps(answer).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(payload))
        writer.write(payload)
        await writer.drain()
        return True


def main() -> None:
    """`python -m tests.fault_upstream --port 9000 [--mode ok] [--chunk-delay-s 0.01]`: run one standalone, e.g.
    as the upstream of bench/soak.py (its own process, so it does not share a CPU-bound loop with the load)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", default="ok")
    parser.add_argument("--chunk-delay-s", type=float, default=0.0)
    args = parser.parse_args()

    async def serve() -> None:
        upstream = FaultUpstream.__new__(FaultUpstream)
        upstream.mode, upstream.delay_s, upstream.chunk_delay_s = args.mode, 0.0, args.chunk_delay_s
        upstream.hits = upstream.open_connections = upstream.connections = 0
        server = await asyncio.start_server(upstream._handle, "127.0.0.1", args.port, backlog=4096)
        async with server:
            await server.serve_forever()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
