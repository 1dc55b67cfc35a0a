"""Config reloads under load on real engines: an endpoint added, routes and controller settings changed, an invalid
config rejected, the endpoint requests are running on removed, and back, while clients keep streaming and waiting
for whole answers. No request fails, every answer is observed, and requests in flight on a removed endpoint finish
there."""

from __future__ import annotations

import asyncio
import copy
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from specgate.backends.launcher import EngineSpec

from specgate.config import load_config
from tests.conftest import MODEL, GatewayServer, engine_pool, free_port

pytestmark = pytest.mark.slow

PROMPT = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n"


def _metric_sum(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


async def _client(url: str, stream: bool, stop_at: float, outcomes: list[str]) -> None:
    body = {"model": MODEL, "prompt": PROMPT, "max_tokens": 24, "temperature": 0, "stream": stream}
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        while time.monotonic() < stop_at:
            if not stream:
                r = await client.post("/v1/completions", json=body)
                outcomes.append("ok" if r.status_code == 200 and r.json()["choices"] else f"{r.status_code} {r.text}")
                continue
            async with client.stream("POST", "/v1/completions", json=body) as r:
                text = (await r.aread()).decode()
            ok = r.status_code == 200 and text.rstrip().endswith("data: [DONE]") and '"error"' not in text
            outcomes.append("ok" if ok else f"{r.status_code} {text[-300:]}")


def test_reloads_under_load_lose_no_request_and_no_observation(
    engine: EngineSpec, plain_engine: EngineSpec, tmp_path: Path
) -> None:
    path = tmp_path / "specgate.yaml"
    base: dict[str, Any] = {
        "server": {"port": free_port()},
        "pools": [engine_pool(engine)],
        "routing": {"routes": [{"name": "code", "match": [{"api": "completions"}]}]},
        "controller": {"tick_s": 0.5},
        "discovery": {"probe": False},
    }
    both = copy.deepcopy(base)
    both["pools"][0]["endpoints"] = [engine.url, plain_engine.url]
    both["routing"]["routes"].insert(0, {"name": "chat", "match": [{"api": "chat"}]})
    both["controller"]["hysteresis"] = 0.1
    invalid = copy.deepcopy(both)
    invalid["controller"]["tick_s"] = -1
    moved = copy.deepcopy(both)
    moved["pools"][0]["endpoints"] = [plain_engine.url]  # the engine requests are running on leaves the pool
    path.write_text(yaml.safe_dump(base))
    plain_before = _metric_sum(httpx.get(f"{plain_engine.url}/metrics", timeout=10).text, "vllm:request_success_total")
    gw = GatewayServer(load_config(path), reload_from=lambda: load_config(path)).start()
    results: list[tuple[str, int]] = []

    async def reloads() -> None:
        for data, expect in ((both, 200), (invalid, 422), (moved, 200), (base, 200)):
            await asyncio.sleep(3)
            path.write_text(yaml.safe_dump(data))
            async with httpx.AsyncClient(timeout=60) as client:
                r = await client.post(f"{gw.url}/admin/config/reload")
            results.append((r.json().get("result") or r.json()["error"]["code"], r.status_code))
            assert r.status_code == expect, r.text

    async def main() -> list[str]:
        outcomes: list[str] = []
        stop_at = time.monotonic() + 14
        await asyncio.gather(reloads(), *(_client(gw.url, i % 2 == 0, stop_at, outcomes) for i in range(6)))
        return outcomes

    try:
        outcomes = asyncio.run(main())
        metrics = httpx.get(f"{gw.url}/metrics", timeout=10).text
        pools = httpx.get(f"{gw.url}/admin/pools", timeout=10).json()["pools"]
    finally:
        gw.stop()
    assert [r for r, _ in results] == ["applied", "config_rejected", "applied", "applied"]
    failed = [o for o in outcomes if o != "ok"]
    assert not failed, failed[:3]
    assert len(outcomes) >= 20, "too little load to say anything"
    # Every answer was observed (the controller's input), none dropped, and every request counted once.
    assert _metric_sum(metrics, "specgate_spec_observations_total") == len(outcomes)
    assert _metric_sum(metrics, "specgate_observations_dropped_total") == 0
    assert _metric_sum(metrics, "specgate_requests_total") == len(outcomes)
    # The added engine served while it was in the pool, and the pool is back to the first alone.
    plain_after = _metric_sum(httpx.get(f"{plain_engine.url}/metrics", timeout=10).text, "vllm:request_success_total")
    assert plain_after > plain_before
    assert [ep["url"] for ep in pools["cpu"]["endpoints"]] == [engine.url]
