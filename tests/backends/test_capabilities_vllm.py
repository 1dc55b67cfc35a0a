"""Capability discovery against real vLLM engines (backends/capabilities.py): what each endpoint really does, the
mismatches with its pool's config, and a restart with other flags re-discovered."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from specgate.backends.capabilities import discover
from specgate.backends.launcher import EngineProcess, EngineSpec
from specgate.controllers.capabilities import EngineFacts

from tests.conftest import MODEL, GatewayServer, engine_pool, free_port, run
from tests.prom import sample

pytestmark = pytest.mark.slow

PROBING = {"probe": True, "timeout_s": 120}
ENGINE_KEY = "sk-engine-test-0123456789"


async def _discover(url: str) -> EngineFacts:
    async with httpx.AsyncClient() as client:
        return await discover(client, url, MODEL, timeout_s=120)


@pytest.mark.parametrize("name", ["engine", "draft_engine"])
def test_an_engine_with_the_plugin_is_verified(name: str, request: pytest.FixtureRequest) -> None:
    engine: EngineSpec = request.getfixturevalue(name)
    facts = run(_discover(engine.url))
    assert facts.error is None, facts.error
    assert facts.version is not None and facts.version.startswith("0.32.0")
    assert facts.models == (MODEL,)
    assert (facts.speculation, facts.max_k, facts.per_request_metrics, facts.plugin) == (True, 4, True, True)


def test_an_engine_without_speculation_is_named_a_mismatch(
    plain_engine: EngineSpec, start_gateway: Callable[..., GatewayServer]
) -> None:
    facts = run(_discover(plain_engine.url))
    assert (facts.speculation, facts.max_k, facts.plugin) == (False, None, None)
    claimed = {**engine_pool(plain_engine), "speculation": {"method": "ngram", "max_k": 4, "per_request_k": True}}
    gw = start_gateway([claimed], discovery=PROBING)
    ready = httpx.get(f"{gw.url}/readyz", timeout=10)
    assert ready.status_code == 200  # it serves: the mismatch is for an operator to look at
    (found,) = ready.json()["mismatches"][plain_engine.url]
    assert "engine has none" in found


def _wait_for(gw: GatewayServer, what: Callable[[dict[str, Any]], bool], timeout_s: float = 300) -> dict[str, Any]:
    """The endpoint's entry in GET /admin/pools once `what` holds for it."""
    deadline = time.monotonic() + timeout_s
    while True:
        (ep,) = httpx.get(f"{gw.url}/admin/pools", timeout=10).json()["pools"]["cpu"]["endpoints"]
        if what(ep):
            return dict(ep)
        assert time.monotonic() < deadline, f"discovery never got there: {ep}"
        time.sleep(0.5)


def _start(spec: EngineSpec, log: Path) -> EngineProcess:
    proc = EngineProcess(spec, log)
    proc.start()
    try:
        proc.wait_healthy(420)
    except Exception:
        proc.stop()
        print(log.read_text()[-5000:])
        raise
    return proc


def test_a_restart_without_the_plugin_is_discovered_and_caps_are_no_longer_claimed(
    start_gateway: Callable[..., GatewayServer], tmp_path: Path
) -> None:
    """An engine started with the plugin and per-request metrics, then restarted on the same port with neither (a
    stock vLLM): the gateway re-discovers it, counts and logs the lost capabilities, names the mismatches, stops
    sending caps to it and reports the k it really runs. The second engine also wants an API key (`--api-key`):
    the pool's `auth.api_key` reaches it with requests, health checks, scrapes and discovery probes alike."""
    with_plugin = EngineSpec(port=free_port())
    proc = _start(with_plugin, tmp_path / "with-plugin.log")
    try:
        gw = start_gateway(
            [{**engine_pool(with_plugin), "auth": {"api_key": ENGINE_KEY}}],
            discovery=PROBING,
            health={"interval_s": 0.5, "unhealthy_after": 1},
            routing={"routes": [{"name": "capped", "k": {"pin": 1}}], "default_route": "capped"},
        )
        ep = _wait_for(gw, lambda e: e["capabilities"] is not None)
        assert ep["capabilities"]["plugin"] is True and ep["mismatches"] == []
        body = {"model": MODEL, "prompt": "def add(a, b):\n    return", "max_tokens": 16, "temperature": 0}
        r = httpx.post(f"{gw.url}/v1/completions", json=body, timeout=60)
        assert r.status_code == 200 and r.headers["x-specgate-k"] == "1"  # the pin, applied as a cap
        proc.stop()

        stock = EngineSpec(
            port=with_plugin.port, plugin=False, per_request_metrics=False, extra_args=("--api-key", ENGINE_KEY)
        )
        proc = _start(stock, tmp_path / "stock.log")
        refused = httpx.post(f"{stock.url}/v1/completions", json=body, timeout=60)
        assert refused.status_code == 401  # the engine does want the key: the gateway's answers below carry it
        ep = _wait_for(gw, lambda e: e["capabilities"] is not None and e["capabilities"]["plugin"] is False, 120)
        assert ep["capabilities"]["per_request_metrics"] is False
        assert any("no plugin" in m for m in ep["mismatches"])
        assert any("--per-request-spec-decode-metrics" in m for m in ep["mismatches"])
        pools = httpx.get(f"{gw.url}/admin/pools", timeout=10).json()["pools"]
        assert pools["cpu"]["per_request_k"] is False and pools["cpu"]["speculation"]["per_request_k"] is True
        r = httpx.post(f"{gw.url}/v1/completions", json=body, timeout=60)
        # The pin asks for 1; a stock engine runs its own k, and the gateway says so instead of claiming a cap.
        assert r.status_code == 200 and r.headers["x-specgate-k"] == "4"
        text = httpx.get(f"{gw.url}/metrics", timeout=10).text
        labels = {"pool": "cpu", "endpoint": stock.url}
        assert sample(text, "specgate_endpoint_capability", **labels, capability="speculation") == 1
        assert sample(text, "specgate_endpoint_capability", **labels, capability="plugin") == 0
        assert sample(text, "specgate_endpoint_capability_lost_total", **labels, capability="plugin") == 1
        lost = sample(text, "specgate_endpoint_capability_lost_total", **labels, capability="per_request_metrics")
        assert lost == 1
        assert sample(text, "specgate_endpoint_config_mismatches", **labels) == 2
        assert httpx.get(f"{gw.url}/readyz", timeout=10).json()["mismatches"][stock.url] == ep["mismatches"]
        assert ep["capabilities"]["models"] == [MODEL] and ep["capabilities"]["error"] is None
    finally:
        proc.stop()
