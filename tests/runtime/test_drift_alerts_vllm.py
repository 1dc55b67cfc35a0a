"""Drift alerts on real vLLM, to a real webhook receiver.

No drift, but everything that used to look like it: k changed by pins (4, 1, 2, 4), load stepped (one client, then
six, then one), and a route mixing copy-heavy code with prose the n-gram drafter rarely proposes for: no alert.
Then real drift, the target's sampling made hotter (temperature 1.0 on the same copy-heavy prompts: the target
accepts 6 of 39 first drafts, against 60 of 96 greedy, measured on the tiny engine with 12 and 6 requests; at 0.3-0.8
it accepts about as many as greedy. Before backends/vllm_cpu_fix.py this test used 0.3, where the CPU engine's broken
sampler rejected nearly every draft: that was the bug, not drift):
a signed Alertmanager-format `firing` within 120 s of traffic (9 s in a local run with these small windows); undone:
`resolved`, same fingerprint. With the old evidence (pooled positions, undrafted steps as rejections) the no-drift
part fired three alerts in a local run; with it, none."""

from __future__ import annotations

import asyncio
import base64
import random
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from specgate.backends.launcher import EngineSpec
from specgate.backends.webhooks import verify

from tests.conftest import MODEL, GatewayServer, engine_pool
from tests.receiver import WebhookReceiver
from tests.runtime.test_controller_vllm import COPY

pytestmark = pytest.mark.slow

SECRET = "whsec_" + base64.b64encode(b"drift-test-secret-0123456789abcd").decode()
PROSE = "Write two sentences about the weather in spring, then say why you like it."
# Small windows so that the test runs in minutes; persistence as the defaults have it, scaled down alike.
DRIFT = {"min_trials": 60, "baseline_windows": 4, "confirm": 2, "for_s": 4.0, "keep_firing_for_s": 4.0}


def drift_body(kind: str, rng: random.Random) -> dict[str, Any]:
    if kind == "mixed":
        kind = "copy" if rng.random() < 0.5 else "prose"
    prompt = PROSE if kind == "prose" else COPY
    hot = kind == "hot"
    return {
        "model": MODEL,
        "prompt": prompt,
        "max_tokens": 48,
        "temperature": 1.0 if hot else 0.0,
        "seed": rng.randint(0, 10**6),
        "stream": True,
    }


async def _send(gw: GatewayServer, kind: str, seconds: float, clients: int, rng: random.Random) -> None:
    stop_at = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=60) as http:

        async def client() -> None:
            while time.monotonic() < stop_at:
                async with http.stream("POST", f"{gw.url}/v1/completions", json=drift_body(kind, rng)) as r:
                    assert r.status_code == 200
                    async for _ in r.aiter_raw():
                        pass

        await asyncio.gather(*(client() for _ in range(clients)))


def drift_state(gw: GatewayServer) -> str:
    text = httpx.get(f"{gw.url}/metrics").text
    line = next(x for x in text.splitlines() if x.startswith('specgate_drift_state{route="default"}'))
    return {0: "learning", 1: "ok", 2: "firing"}[int(float(line.split()[-1]))]


def _until(gw: GatewayServer, kind: str, state: str, budget_s: float, rng: random.Random) -> float | None:
    """Seconds of `kind` traffic until the detector is in `state`; None if not within the budget."""
    started = time.monotonic()
    while time.monotonic() - started < budget_s:
        asyncio.run(_send(gw, kind, 2.0, 2, rng))
        time.sleep(0.3)  # a controller tick drains the observations
        if drift_state(gw) == state:
            return time.monotonic() - started
    return None


def _pin(gw: GatewayServer, k: int) -> None:
    assert httpx.put(f"{gw.url}/admin/routes/default/k", json={"k": k}).status_code == 200


def test_no_alert_for_k_and_load_changes_and_a_signed_alert_for_real_drift(
    engine: EngineSpec, start_gateway: Callable[..., GatewayServer]
) -> None:
    receiver = WebhookReceiver()
    rng = random.Random(5)
    try:
        gw = start_gateway(
            [engine_pool(engine)],
            routing={"routes": [{"name": "default"}], "default_route": "default"},
            controller={"tick_s": 0.2, "cost_prior": "cpu"},
            alerts={
                "receivers": [{"name": "ops", "url": receiver.url + "/alerts", "secret": SECRET}],
                "drift": DRIFT,
                "backoff_initial_s": 0.05,
            },
        )
        _pin(gw, 4)
        assert _until(gw, "mixed", "ok", 120, rng) is not None, "baseline learned"
        # No drift: k and load change under the same traffic mix.
        for k, clients in ((1, 1), (2, 6), (4, 1), (1, 6), (4, 2)):
            _pin(gw, k)
            asyncio.run(_send(gw, "mixed", 8.0, clients, rng))
        time.sleep(0.5)
        assert drift_state(gw) == "ok"
        assert receiver.received == [], [r.json()["alerts"][0]["annotations"]["summary"] for r in receiver.received]

        # Real drift: the target's sampling made hotter.
        _pin(gw, 4)
        delay = _until(gw, "hot", "firing", 120, rng)
        assert delay is not None, "hot sampling was not detected"
        (fired,) = receiver.wait_for(1)
        assert verify(SECRET, fired.headers, fired.body)
        payload = fired.json()
        assert payload["version"] == "4" and payload["status"] == "firing"
        alert = payload["alerts"][0]
        assert alert["labels"]["route"] == "default" and alert["labels"]["pool"] == "cpu"
        notes = alert["annotations"]
        assert float(notes["acceptance_now"]) < float(notes["acceptance_baseline"])
        assert int(notes["window_trials"]) >= DRIFT["min_trials"] and notes["runbook"] and notes["dashboard"]
        print(f"hot sampling detected after {delay:.0f} s of traffic")
        assert _until(gw, "copy", "ok", 120, rng) is not None, "never resolved"
        got = receiver.wait_for(2)
        assert len(got) == 2 and verify(SECRET, got[1].headers, got[1].body)
        resolved = got[1].json()
        assert resolved["status"] == "resolved"
        assert resolved["alerts"][0]["fingerprint"] == alert["fingerprint"]
        metrics = httpx.get(f"{gw.url}/metrics").text
        assert 'specgate_alert_deliveries_total{outcome="delivered",receiver="ops"} 2.0' in metrics
    finally:
        receiver.close()
