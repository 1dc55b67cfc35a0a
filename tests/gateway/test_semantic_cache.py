"""The semantic cache (runtime/semantic_cache.py) in a running gateway, against a fake upstream that counts what
reaches it (tests/fault_upstream.py): a near-duplicate on an opted-in route is answered from the kept answer, other
routes and other tenants are not, a far question is generated, and an embeddings server that is away costs a miss,
never a failed request."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from specgate.gateway.auth import hash_key

from tests.conftest import GatewayServer, free_port
from tests.fault_upstream import FaultUpstream
from tests.prom import sample

KEYS = {"acme": "sk-acme-semantic-test", "globex": "sk-globex-semantic-test"}
QUESTION = "How do I reverse a list in Python?"


@pytest.fixture
def upstream() -> Iterator[FaultUpstream]:
    u = FaultUpstream("ok")
    yield u
    u.close()


def _gateway(start: Callable[..., GatewayServer], up: FaultUpstream, **semantic: Any) -> GatewayServer:
    routes = [
        {"name": "faq", "match": [{"system_regex": "^FAQ"}], "semantic_cache": True},
        {"name": "chat"},
    ]
    return start(
        [{"name": "p", "model": "m", "endpoints": [up.url]}],
        cache={"enabled": True, "semantic": {"enabled": True, "threshold": 0.95, **semantic}},
        routing={"routes": routes, "default_route": "chat"},
        auth={"api_keys": [{"sha256": hash_key(k), "tenant": t} for t, k in KEYS.items()]},
    )


def _ask(gw: GatewayServer, text: str, system: str = "FAQ bot.", tenant: str = "acme", **extra: Any) -> httpx.Response:
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": text}],
        "temperature": 0,
    }
    headers = {"authorization": f"Bearer {KEYS[tenant]}", **extra.pop("headers", {})}
    return httpx.post(f"{gw.url}/v1/chat/completions", json=body | extra, headers=headers, timeout=10)


def test_a_near_duplicate_is_answered_from_the_kept_answer(
    start_gateway: Callable[..., GatewayServer], upstream: FaultUpstream
) -> None:
    gw = _gateway(start_gateway, upstream)
    first = _ask(gw, QUESTION)
    second = _ask(gw, "how do I reverse a list in python ?")
    assert (first.headers["x-specgate-cache"], second.headers["x-specgate-cache"]) == ("miss", "hit")
    assert second.content == first.content and upstream.hits == 1
    assert _ask(gw, "How do I sort a dictionary by value in Python?").headers["x-specgate-cache"] == "miss"
    assert _ask(gw, QUESTION, max_tokens=5).headers["x-specgate-cache"] == "miss"  # other sampling: other scope
    metrics = httpx.get(f"{gw.url}/metrics", timeout=10).text
    assert sample(metrics, "specgate_cache_semantic_hits_total", route="faq") == 1.0


def test_only_opted_in_routes_and_the_same_tenant(
    start_gateway: Callable[..., GatewayServer], upstream: FaultUpstream
) -> None:
    gw = _gateway(start_gateway, upstream)
    assert _ask(gw, QUESTION, system="Chat bot.").headers["x-specgate-cache"] == "miss"
    assert _ask(gw, QUESTION.lower(), system="Chat bot.").headers["x-specgate-cache"] == "miss"  # route not opted in
    assert _ask(gw, QUESTION).headers["x-specgate-cache"] == "miss"
    assert _ask(gw, QUESTION.lower(), tenant="globex").headers["x-specgate-cache"] == "miss"
    assert _ask(gw, QUESTION.lower(), headers={"cache-control": "no-cache"}).headers["x-specgate-cache"] == "miss"
    assert upstream.hits == 5


def test_an_embeddings_server_that_is_away_costs_a_miss(
    start_gateway: Callable[..., GatewayServer], upstream: FaultUpstream
) -> None:
    away = f"http://127.0.0.1:{free_port()}"
    gw = _gateway(start_gateway, upstream, embedding_url=away, embedding_model="e", embedding_timeout_s=0.5)
    for _ in range(2):
        r = _ask(gw, QUESTION.lower())
        assert r.status_code == 200
    # The exact cache still works without embeddings; the near-duplicate cannot be found.
    assert _ask(gw, QUESTION.lower()).headers["x-specgate-cache"] == "hit"
    assert _ask(gw, QUESTION).headers["x-specgate-cache"] == "miss"
    metrics = httpx.get(f"{gw.url}/metrics", timeout=10).text
    assert sample(metrics, "specgate_cache_errors_total", operation="embed") >= 2


def test_semantic_needs_the_cache() -> None:
    from specgate.config import ConfigError, validate_config

    with pytest.raises(ConfigError, match=r"semantic\.enabled needs cache\.enabled"):
        validate_config({"cache": {"semantic": {"enabled": True}}})
    with pytest.raises(ConfigError, match="embedding_model is required"):
        validate_config({"cache": {"enabled": True, "semantic": {"enabled": True, "embedding_url": "http://e:1"}}})
