"""Per-step k schedules on real vLLM engines: an n-gram pool and a draft-model pool (a real drafter whose drafting
the plugin narrows). Judged from vLLM's per-request speculation metrics. vLLM's CPU platform turns async scheduling
off (vllm/platforms/cpu.py), so both run SpecCapScheduler here; SpecCapAsyncScheduler runs on vLLM's own
AsyncScheduler code in tests/backends/test_vllm_scheduler.py, and on a GPU engine only outside this machine."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from specgate.backends.launcher import EngineSpec

from tests.conftest import MODEL

pytestmark = pytest.mark.slow

COPY_PROMPT = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\ndef add(a, b):\n"


def _body(xargs: dict[str, Any] | None, max_tokens: int = 40) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "prompt": COPY_PROMPT, "max_tokens": max_tokens, "temperature": 0}
    if xargs is not None:
        body["vllm_xargs"] = xargs
    return body


def _spec(r: httpx.Response) -> dict[str, Any]:
    assert r.status_code == 200, r.text
    return dict(r.json()["metrics"]["speculative_decoding"])


def _alone(engine: EngineSpec, xargs: dict[str, Any] | None) -> dict[str, Any]:
    return _spec(httpx.post(f"{engine.url}/v1/completions", json=_body(xargs), timeout=120))


async def _under_load(engine: EngineSpec, xargs: dict[str, Any], others: int) -> dict[str, Any]:
    """The request runs while `others` long requests are running, so every step of it has a batch > others."""
    async with httpx.AsyncClient(base_url=engine.url, timeout=300) as client:
        load = [
            asyncio.create_task(client.post("/v1/completions", json={**_body(None, 400), "ignore_eos": True}))
            for _ in range(others)
        ]
        while True:  # wait until the engine runs them all
            text = (await client.get("/metrics")).text
            running = [line for line in text.splitlines() if line.startswith("vllm:num_requests_running{")]
            if running and float(running[0].rsplit(" ", 1)[1]) >= others:
                break
            await asyncio.sleep(0.05)
        spec = _spec(await client.post("/v1/completions", json=_body(xargs, 24)))
        for task in load:
            task.cancel()
        await asyncio.gather(*load, return_exceptions=True)
    return spec


@pytest.fixture(params=["ngram", "draft-model"])
def any_engine(request: pytest.FixtureRequest) -> EngineSpec:
    name = "engine" if request.param == "ngram" else "draft_engine"
    return request.getfixturevalue(name)


def test_schedule_caps_drafts_per_step_at_the_batch_size(any_engine: EngineSpec) -> None:
    free = _alone(any_engine, None)
    assert free["num_draft_tokens"] > 0
    two = _alone(any_engine, {"specgate_k_schedule": "1:2"})
    assert 0 < two["num_draft_tokens"] <= 2 * two["num_spec_steps"]  # never above the schedule's k
    assert _alone(any_engine, {"specgate_k_schedule": "1:0"})["num_draft_tokens"] == 0
    # Alone (batch 1) this schedule says 4; with three others running (batch >= 4) it says 0.
    schedule = {"specgate_k_schedule": "1:4,4:0"}
    assert _alone(any_engine, schedule)["num_draft_tokens"] > 0
    loaded = asyncio.run(_under_load(any_engine, schedule, others=3))
    assert loaded["num_draft_tokens"] == 0


def test_cap_and_schedule_take_the_smaller(any_engine: EngineSpec) -> None:
    spec = _alone(any_engine, {"specgate_k_schedule": "1:4", "num_speculative_tokens": 1})
    assert 0 < spec["num_draft_tokens"] <= spec["num_spec_steps"]


def test_malformed_schedule_is_ignored_not_fatal(any_engine: EngineSpec) -> None:
    free = _alone(any_engine, None)
    assert _alone(any_engine, {"specgate_k_schedule": "9:1,2:3"})["num_draft_tokens"] == free["num_draft_tokens"]
    assert httpx.get(f"{any_engine.url}/health", timeout=10).status_code == 200
