"""The exact response cache (runtime/response_cache.py) in a running gateway, against a fake upstream that counts
what reaches it (tests/fault_upstream.py): hits answer without the engine, streams replay as first sent, tenants
are isolated, the client's Cache-Control and the route's setting are honoured, entries expire."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from specgate.gateway.auth import hash_key

from tests.conftest import GatewayServer
from tests.fault_upstream import FaultUpstream

KEYS = {"acme": "sk-acme-cache-test", "globex": "sk-globex-cache-test"}


@pytest.fixture
def upstream() -> Iterator[FaultUpstream]:
    u = FaultUpstream("ok")
    yield u
    u.close()


def _gateway(
    start: Callable[..., GatewayServer], up: FaultUpstream, state: dict[str, Any] | None = None, **cache: Any
) -> GatewayServer:
    routes = [
        {"name": "always", "match": [{"system_regex": "^always"}], "cache": "always"},
        {"name": "never", "match": [{"system_regex": "^never"}], "cache": "off"},
        {"name": "chat"},
    ]
    return start(
        [{"name": "p", "model": "m", "endpoints": [up.url]}],
        cache={"enabled": True, **cache},
        routing={"routes": routes, "default_route": "chat"},
        auth={"api_keys": [{"sha256": hash_key(k), "tenant": t} for t, k in KEYS.items()]},
        **({"state": state} if state else {}),
    )


def _ask(gw: GatewayServer, tenant: str = "acme", headers: dict[str, str] | None = None, **body: Any) -> httpx.Response:
    payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0, **body}
    return httpx.post(
        f"{gw.url}/v1/chat/completions",
        json=payload,
        headers={"authorization": f"Bearer {KEYS[tenant]}", **(headers or {})},
        timeout=10,
    )


def test_a_repeated_deterministic_request_is_answered_without_the_engine(
    start_gateway: Callable[..., GatewayServer], upstream: FaultUpstream
) -> None:
    gw = _gateway(start_gateway, upstream)
    first, second = _ask(gw), _ask(gw)
    assert (first.headers["x-specgate-cache"], second.headers["x-specgate-cache"]) == ("miss", "hit")
    assert second.status_code == 200 and second.content == first.content and upstream.hits == 1
    # The k the gateway or a client sets is not part of the key: speculation never changes the answer.
    assert _ask(gw, vllm_xargs={"num_speculative_tokens": 2}).headers["x-specgate-cache"] == "hit"
    assert _ask(gw, max_tokens=3).headers["x-specgate-cache"] == "miss"  # anything else that shapes it is
    metrics = httpx.get(f"{gw.url}/metrics", timeout=10).text
    assert 'specgate_cache_requests_total{result="hit",route="chat"} 2.0' in metrics


def test_tenants_never_share_answers(start_gateway: Callable[..., GatewayServer], upstream: FaultUpstream) -> None:
    gw = _gateway(start_gateway, upstream)
    assert _ask(gw, "acme").headers["x-specgate-cache"] == "miss"
    assert _ask(gw, "globex").headers["x-specgate-cache"] == "miss"
    assert upstream.hits == 2


def test_a_stream_is_replayed_as_it_was_first_sent(
    start_gateway: Callable[..., GatewayServer], upstream: FaultUpstream
) -> None:
    gw = _gateway(start_gateway, upstream)
    first = _ask(gw, stream=True, stream_options={"include_usage": True})
    second = _ask(gw, stream=True, stream_options={"include_usage": True})
    assert second.headers["x-specgate-cache"] == "hit" and upstream.hits == 1
    assert second.headers["content-type"].startswith("text/event-stream")
    assert second.text == first.text and second.text.rstrip().endswith("data: [DONE]")
    # Without the usage chunk the client gets other events: another entry.
    assert _ask(gw, stream=True).headers["x-specgate-cache"] == "miss"
    assert _ask(gw).headers["x-specgate-cache"] == "miss"  # not streamed: another entry too


def test_only_answers_the_request_would_reproduce_unless_the_route_says_always(
    start_gateway: Callable[..., GatewayServer], upstream: FaultUpstream
) -> None:
    gw = _gateway(start_gateway, upstream)
    sampled = {"temperature": 0.8}
    assert _ask(gw, **sampled).headers["x-specgate-cache"] == "bypass"
    assert _ask(gw, temperature=0.8, seed=7).headers["x-specgate-cache"] == "miss"  # a fixed seed reproduces
    system = [{"role": "system", "content": "always cache"}, {"role": "user", "content": "hi"}]
    assert _ask(gw, messages=system, **sampled).headers["x-specgate-cache"] == "miss"
    assert _ask(gw, messages=system, **sampled).headers["x-specgate-cache"] == "hit"
    never = [{"role": "system", "content": "never cache"}, {"role": "user", "content": "hi"}]
    assert _ask(gw, messages=never).headers["x-specgate-cache"] == "bypass"


def test_the_clients_cache_control_and_the_ttl(
    start_gateway: Callable[..., GatewayServer], upstream: FaultUpstream
) -> None:
    gw = _gateway(start_gateway, upstream, ttl_s=0.5)
    assert _ask(gw, headers={"cache-control": "no-store"}).headers["x-specgate-cache"] == "bypass"
    assert _ask(gw).headers["x-specgate-cache"] == "miss"  # no-store kept nothing
    assert _ask(gw, headers={"cache-control": "no-cache"}).headers["x-specgate-cache"] == "miss"  # not read
    assert _ask(gw).headers["x-specgate-cache"] == "hit"  # ... but the fresh answer was kept
    time.sleep(0.6)
    assert _ask(gw).headers["x-specgate-cache"] == "miss"
    assert upstream.hits == 4


def test_failed_answers_are_not_kept(start_gateway: Callable[..., GatewayServer]) -> None:
    broken = FaultUpstream("http_500")
    try:
        gw = _gateway(start_gateway, broken)
        assert _ask(gw).status_code >= 500 and _ask(gw).status_code >= 500
        assert broken.hits == 2  # the second was not answered from a cached failure
    finally:
        broken.close()


def test_replicas_share_answers_through_redis_and_serve_without_it(
    start_gateway: Callable[..., GatewayServer], upstream: FaultUpstream
) -> None:
    """Two gateways on one real redis-server: an answer generated through one is a hit on the other. With Redis
    gone, requests are still answered (a miss each, the failures counted), never failed."""
    from tests.prom import sample
    from tests.redis_server import RedisServer

    redis = RedisServer().start()
    try:
        state = {"redis_url": redis.url, "namespace": "cache-test", "timeout_s": 0.5}
        one, two = (_gateway(start_gateway, upstream, state=state) for _ in range(2))
        assert _ask(one).headers["x-specgate-cache"] == "miss"
        deadline = time.monotonic() + 5
        while (r := _ask(two)).headers["x-specgate-cache"] != "hit":  # the write to Redis is in the background
            assert time.monotonic() < deadline, r.headers
            time.sleep(0.05)
        assert upstream.hits == 1  # only the first reached the engine
        redis.stop()
        fresh = _ask(two, max_tokens=7)
        assert fresh.status_code == 200 and fresh.headers["x-specgate-cache"] == "miss"
        text = httpx.get(f"{two.url}/metrics", timeout=10).text
        assert sample(text, "specgate_cache_errors_total", operation="read") >= 1
    finally:
        redis.stop()
