"""API keys, tenant limits and the /metrics key on a gateway in this process (in-memory store)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest
from prometheus_client import CollectorRegistry
from specgate.backends.state_store import MemoryStateStore
from specgate.gateway.auth import Authenticator, RateLimiter, hash_key
from specgate.gateway.cli import main
from specgate.runtime.metrics import GatewayMetrics

from specgate.config import AuthConfig, ConfigError, validate_config
from specgate.errors import RateLimited, Unauthorized
from tests.conftest import GatewayServer, free_port

KEY = "sk-unit-test"


def auth(**kw: object) -> Authenticator:
    cfg = AuthConfig.model_validate({"api_keys": [{"sha256": hash_key(KEY), "tenant": "acme"}], **kw})
    return Authenticator(cfg, MemoryStateStore(), GatewayMetrics(CollectorRegistry()))


def test_bearer_or_x_api_key_and_401_otherwise() -> None:
    a = auth()
    assert asyncio.run(a.tenant({"authorization": f"Bearer {KEY}"})) == "acme"
    assert asyncio.run(a.tenant({"x-api-key": KEY})) == "acme"
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": KEY}):
        with pytest.raises(Unauthorized):
            asyncio.run(a.tenant(headers))


def test_keys_optional_when_none_configured() -> None:
    # OpenAI clients always send some key: without required keys, an unknown one is anonymous, a known one
    # still names its tenant.
    a = auth(require_api_key=False)
    assert asyncio.run(a.tenant({})) is None
    assert asyncio.run(a.tenant({"authorization": "Bearer sk-anything"})) is None
    assert asyncio.run(a.tenant({"authorization": f"Bearer {KEY}"})) == "acme"


def test_request_and_token_limits() -> None:
    limiter = RateLimiter(
        {
            "acme": AuthConfig.model_validate(
                {"tenants": {"acme": {"requests_per_min": 3, "tokens_per_min": 100}}}
            ).tenants["acme"]
        },
        MemoryStateStore(),
        GatewayMetrics(CollectorRegistry()),
    )

    async def scenario() -> None:
        headers = await limiter.admit("acme")
        assert headers["x-ratelimit-limit-requests"] == "3" and headers["x-ratelimit-remaining-requests"] == "2"
        assert headers["x-ratelimit-limit-tokens"] == "100"
        await limiter.charge("acme", 150)  # an answer used more than the budget
        with pytest.raises(RateLimited) as err:
            await limiter.admit("acme")
        assert err.value.headers()["retry-after"] and "tokens" in err.value.message
        assert await limiter.admit(None) == {} and await limiter.admit("unlimited-tenant") == {}

    asyncio.run(scenario())


def test_config_checks_and_hash_key_cli(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="sha256"):
        validate_config({"auth": {"api_keys": [{"sha256": "not-a-digest", "tenant": "a"}]}})
    with pytest.raises(ConfigError, match="redis_url"):
        validate_config({"state": {"redis_url": "http://redis:6379"}})
    assert main(["hash-key", KEY]) == 0
    assert capsys.readouterr().out.strip() == hash_key(KEY)


@pytest.fixture
def dead_pool() -> list[dict]:
    return [{"name": "p", "model": "m", "endpoints": [f"http://127.0.0.1:{free_port()}"]}]


def test_metrics_key_and_401_shape(start_gateway: Callable[..., GatewayServer], dead_pool: list[dict]) -> None:
    gw = start_gateway(
        dead_pool,
        auth={"api_keys": [{"sha256": hash_key(KEY), "tenant": "acme"}], "metrics_key": "scrape-me"},
    )
    assert httpx.get(f"{gw.url}/metrics").status_code == 401
    assert httpx.get(f"{gw.url}/metrics", headers={"authorization": "Bearer scrape-me"}).status_code == 200
    r = httpx.post(f"{gw.url}/v1/chat/completions", json={"model": "m", "messages": []})
    assert r.status_code == 401
    assert r.json()["error"] == {
        "message": "this gateway needs an API key: send 'Authorization: Bearer <key>'",
        "type": "authentication_error",
        "param": None,
        "code": "invalid_api_key",
    }
    # authenticated, then the request itself is judged (empty messages: 400, not 401)
    r = httpx.post(
        f"{gw.url}/v1/chat/completions",
        json={"model": "m", "messages": []},
        headers={"authorization": f"Bearer {KEY}"},
    )
    assert r.status_code == 400
