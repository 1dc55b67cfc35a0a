"""Drift on real vLLM reaches a real webhook receiver: signed Alertmanager-format `firing` when a route's
traffic turns to text the drafter cannot predict, `resolved` when it comes back."""

from __future__ import annotations

import asyncio
import base64
import random
import time
from collections.abc import Callable

import httpx
import pytest
from specgate.backends.launcher import EngineSpec
from specgate.backends.webhooks import verify

from tests.conftest import GatewayServer, engine_pool
from tests.receiver import WebhookReceiver
from tests.runtime.test_controller_vllm import body

pytestmark = pytest.mark.slow

SECRET = "whsec_" + base64.b64encode(b"drift-test-secret-0123456789abcd").decode()


async def send(gw: GatewayServer, kind: str, requests: int, rng: random.Random) -> None:
    async with httpx.AsyncClient(timeout=60) as http:

        async def one() -> None:
            async with http.stream("POST", f"{gw.url}/v1/completions", json=body(kind, rng)) as r:
                assert r.status_code == 200
                async for _ in r.aiter_raw():
                    pass

        for _ in range(0, requests, 4):
            await asyncio.gather(*(one() for _ in range(4)))


def drift_state(gw: GatewayServer) -> str:
    text = httpx.get(f"{gw.url}/metrics").text
    line = next(x for x in text.splitlines() if x.startswith('specgate_drift_state{route="default"}'))
    return {0: "learning", 1: "ok", 2: "firing"}[int(float(line.split()[-1]))]


def until(gw: GatewayServer, kind: str, state: str, budget_s: float) -> str:
    rng = random.Random(5)
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        asyncio.run(send(gw, kind, 4, rng))
        time.sleep(0.3)  # one controller tick drains the observations
        if drift_state(gw) == state:
            return state
    return drift_state(gw)


def test_drift_alert_fires_signed_and_resolves(engine: EngineSpec, start_gateway: Callable[..., GatewayServer]) -> None:
    receiver = WebhookReceiver()
    try:
        gw = start_gateway(
            [engine_pool(engine)],
            # k pinned so that every request keeps measuring acceptance (an unpinned route would go to k=0).
            routing={"routes": [{"name": "default", "k": {"pin": 4}}], "default_route": "default"},
            controller={"tick_s": 0.2, "cost_prior": "cpu"},
            alerts={
                "receivers": [{"name": "ops", "url": receiver.url + "/alerts", "secret": SECRET}],
                "drift": {"min_trials": 60, "baseline_windows": 4, "confirm": 2},
                "backoff_initial_s": 0.05,
            },
        )
        assert until(gw, "copy", "ok", 90) == "ok", "baseline learned on copy-heavy traffic"
        assert until(gw, "random", "firing", 90) == "firing"
        (fired,) = receiver.wait_for(1)
        assert verify(SECRET, fired.headers, fired.body)
        payload = fired.json()
        assert payload["version"] == "4" and payload["status"] == "firing"
        assert payload["alerts"][0]["labels"]["route"] == "default"
        assert until(gw, "copy", "ok", 120) == "ok"
        got = receiver.wait_for(2)
        assert len(got) == 2 and verify(SECRET, got[1].headers, got[1].body)
        resolved = got[1].json()
        assert resolved["status"] == "resolved"
        assert resolved["alerts"][0]["fingerprint"] == payload["alerts"][0]["fingerprint"]
        metrics = httpx.get(f"{gw.url}/metrics").text
        assert 'specgate_alert_deliveries_total{outcome="delivered",receiver="ops"} 2.0' in metrics
    finally:
        receiver.close()
