"""Limits against pile-ups and slow clients: concurrent requests in total and per tenant, slow request bodies."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from specgate.gateway.auth import hash_key

from tests.conftest import GatewayServer
from tests.fault_upstream import FaultUpstream
from tests.prom import scrape


@pytest.fixture
def slow_upstream() -> Iterator[FaultUpstream]:
    u = FaultUpstream("ok", chunk_delay_s=0.1)  # each stream takes ~1.6 s
    yield u
    u.close()


def start(start_gateway: Callable[..., GatewayServer], upstream: FaultUpstream, **overrides: object) -> GatewayServer:
    return start_gateway([{"name": "p", "model": "m", "endpoints": [upstream.url]}], **overrides)


async def streams(url: str, n: int, headers: dict[str, str] | None = None) -> list[httpx.Response]:
    async with httpx.AsyncClient(timeout=30) as http:
        body = {"model": "m", "prompt": "x", "max_tokens": 4, "stream": True}
        return await asyncio.gather(*(http.post(f"{url}/v1/completions", json=body, headers=headers) for _ in range(n)))


def test_total_concurrency_limit_answers_503_with_retry_after(
    start_gateway: Callable[..., GatewayServer], slow_upstream: FaultUpstream
) -> None:
    gw = start(start_gateway, slow_upstream, server={"max_concurrent_requests": 3, "retry_after_s": 2})
    started = time.monotonic()
    results = asyncio.run(streams(gw.url, 6))
    codes = sorted(r.status_code for r in results)
    assert codes == [200, 200, 200, 503, 503, 503]
    refused = next(r for r in results if r.status_code == 503)
    assert refused.headers["retry-after"] == "2" and refused.json()["error"]["code"] == "overloaded"
    assert time.monotonic() - started < 10
    # the slots come back once the streams end
    assert sorted(r.status_code for r in asyncio.run(streams(gw.url, 3))) == [200, 200, 200]
    assert scrape(gw.url, "specgate_overloaded_total") == 3


def test_per_tenant_concurrency(start_gateway: Callable[..., GatewayServer], slow_upstream: FaultUpstream) -> None:
    gw = start(
        start_gateway,
        slow_upstream,
        auth={
            "api_keys": [{"sha256": hash_key("k-a"), "tenant": "a"}, {"sha256": hash_key("k-b"), "tenant": "b"}],
            "tenants": {"a": {"max_concurrent": 2}},
        },
    )

    async def both() -> tuple[list[httpx.Response], list[httpx.Response]]:
        a, b = await asyncio.gather(
            streams(gw.url, 4, {"authorization": "Bearer k-a"}), streams(gw.url, 4, {"authorization": "Bearer k-b"})
        )
        return a, b

    a, b = asyncio.run(both())
    assert sorted(r.status_code for r in a) == [200, 200, 429, 429]
    assert all(r.status_code == 200 for r in b), "another tenant is not held back"
    assert next(r for r in a if r.status_code == 429).headers["retry-after"] == "1"


def test_slow_request_body_gets_408(start_gateway: Callable[..., GatewayServer], slow_upstream: FaultUpstream) -> None:
    gw = start(start_gateway, slow_upstream, timeouts={"client_body_s": 0.5})
    host, port = gw.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(
            b"POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b'content-length: 100\r\n\r\n{"model": '
        )
        started = time.monotonic()
        answer = b""
        # Headers and body may arrive in separate segments: read until the declared body is complete.
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _length(answer):
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
        assert time.monotonic() - started < 3
    assert answer.startswith(b"HTTP/1.1 408") and b"request_timeout" in answer
    # the gateway is fine afterwards
    ok = httpx.post(f"{gw.url}/v1/completions", json={"model": "m", "prompt": "x", "max_tokens": 2}, timeout=10)
    assert ok.status_code == 200


def _length(raw: bytes) -> int:
    head = raw.split(b"\r\n\r\n", 1)[0].lower()
    return int(head.split(b"content-length:")[1].split(b"\r\n")[0]) if b"content-length:" in head else 0
