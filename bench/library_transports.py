"""The relay's transport (backends/transport.py's `UpstreamTransport`) on aiohttp's and on httpx's clients, for
`bench/overhead.py`'s comparison with the own HTTP/1.1 client (backends/upstream_http.py). Benchmark code: the
gateway ships the own client; these only exist to measure whether a library would do as well.

    python bench/library_transports.py --transport aiohttp --config specgate.yaml   # serve with aiohttp's client
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
from specgate.backends.upstream_http import ConnectFailed, UpstreamFailure

__all__ = ["AiohttpTransport", "HttpxTransport"]

# Closes run in the background (the transport's close is synchronous); kept here until done.
_closing: set[asyncio.Task[None]] = set()


def _spawn(closing: Any) -> None:
    task = asyncio.ensure_future(closing)
    _closing.add(task)
    task.add_done_callback(_closing.discard)


async def _read_all(response: Any, limit: int, idle_s: float) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size <= limit and (chunk := await response.next_chunk(idle_s)):
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


class _AioResponse:
    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status
        self.retry_after = response.headers.get("retry-after")
        self._done = False

    async def next_chunk(self, within_s: float) -> bytes:
        if self._done:
            return b""
        try:
            async with asyncio.timeout(within_s):
                data = await self._response.content.readany()
        except aiohttp.ClientError as exc:
            raise UpstreamFailure(str(exc)) from None
        if not data:
            self._done = True
            self._response.release()
        return data

    async def read(self, limit: int, idle_s: float) -> bytes:
        return await _read_all(self, limit, idle_s)

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._response.close()  # drops the connection: the engine aborts


class AiohttpTransport:
    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    async def post(
        self,
        base_url: str,
        path: str,
        body: bytes,
        headers: dict[str, str],
        *,
        connect_s: float,
        head_s: float,
        **_: Any,
    ) -> _AioResponse:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=4.0)
            self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False, trust_env=False)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_s, sock_read=head_s)
        try:
            response = await self._session.post(base_url + path, data=body, headers=headers, timeout=timeout)
        except aiohttp.ClientConnectorError as exc:
            raise ConnectFailed(str(exc)) from None
        except TimeoutError:
            raise
        except aiohttp.ClientError as exc:
            raise UpstreamFailure(str(exc)) from None
        return _AioResponse(response)

    def close(self) -> None:
        if self._session is not None:
            _spawn(self._session.close())


class _HttpxResponse:
    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status = response.status_code
        self.retry_after = response.headers.get("retry-after")
        self._chunks: AsyncIterator[bytes] = response.aiter_raw()
        self._done = False

    async def next_chunk(self, within_s: float) -> bytes:
        if self._done:
            return b""
        try:
            async with asyncio.timeout(within_s):
                return await anext(self._chunks)
        except StopAsyncIteration:
            self._done = True
            return b""
        except httpx.HTTPError as exc:
            raise UpstreamFailure(str(exc)) from None

    async def read(self, limit: int, idle_s: float) -> bytes:
        return await _read_all(self, limit, idle_s)

    def close(self) -> None:
        # An unfinished body closes its connection (the engine aborts); a finished one goes back to the pool.
        self._done = True
        _spawn(self._response.aclose())


class HttpxTransport:
    def __init__(self) -> None:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=512, keepalive_expiry=4.0)
        self._client = httpx.AsyncClient(limits=limits, trust_env=False)

    async def post(
        self,
        base_url: str,
        path: str,
        body: bytes,
        headers: dict[str, str],
        *,
        connect_s: float,
        head_s: float,
        **_: Any,
    ) -> _HttpxResponse:
        timeout = httpx.Timeout(connect=connect_s, read=head_s, write=head_s, pool=connect_s)
        request = self._client.build_request("POST", base_url + path, content=body, headers=headers, timeout=timeout)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.ConnectError as exc:
            raise ConnectFailed(str(exc)) from None
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.HTTPError as exc:
            raise UpstreamFailure(str(exc)) from None
        return _HttpxResponse(response)

    def close(self) -> None:
        _spawn(self._client.aclose())


class ModuleTransport:
    """The own client as another version of backends/upstream_http.py left it (a file, e.g. from `git show
    REV:backends/upstream_http.py`), for a before/after comparison in one run. Keyword arguments that version does
    not know are dropped."""

    def __init__(self, path: str) -> None:
        import importlib.util
        import inspect

        spec = importlib.util.spec_from_file_location("specgate_upstream_http_other", path)
        if spec is None or spec.loader is None:
            raise SystemExit(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self._client = module.UpstreamClient()
        self._known = set(inspect.signature(self._client.post).parameters)

    async def post(self, base_url: str, path: str, body: bytes, headers: dict[str, str], **kwargs: Any) -> Any:
        known = {k: v for k, v in kwargs.items() if k in self._known}
        return await self._client.post(base_url, path, body, headers, **known)

    def close(self) -> None:
        self._client.close()


def main(argv: list[str] | None = None) -> int:
    """`specgate serve` with the relay's transport replaced (the rest as in production)."""
    import uvicorn
    from specgate.gateway.app import create_app
    from specgate.runtime.logs import setup_logging

    from specgate.config import load_config

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--transport", required=True, help="aiohttp, httpx, or file:PATH (another upstream_http.py)")
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    config = load_config(args.config)
    setup_logging(config.logging.level)
    app = create_app(config)
    transports = {"aiohttp": AiohttpTransport, "httpx": HttpxTransport}
    if args.transport.startswith("file:"):
        app.state.gateway.relay._client = ModuleTransport(args.transport.removeprefix("file:"))
    elif args.transport in transports:
        app.state.gateway.relay._client = transports[args.transport]()
    else:
        parser.error(f"unknown transport {args.transport!r}")
    uvicorn.run(
        app,
        host=config.server.host,
        port=config.server.port,
        loop="uvloop",
        http="httptools",
        log_config=None,
        access_log=False,
        proxy_headers=False,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
