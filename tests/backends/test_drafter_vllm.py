"""The trained drafter (models/specgate-tiny-drafter) on a real engine: acceptance that depends on the request, as
a real speculator's does. Copy-heavy code at temperature 0 accepts at every position; `specgate bench`'s chat
requests (random words, temperature 1.5) almost never: vLLM drafts greedily and, under sampling, accepts a draft with
the target's probability of it. Measured on the knee testbed with 12 requests per route (bench/drafter_acceptance.py,
docs/testbeds.md): 1.00 at every position against 0.03 at the first; the bounds here leave wide room."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx
import pytest
from specgate.backends.launcher import EngineSpec
from specgate.backends.vllm_response import parse_spec_metrics
from specgate.offline.loadgen import request_body

from tests.conftest import MODEL

pytestmark = pytest.mark.slow


def _acceptance(engine: EngineSpec, route: str, n: int) -> tuple[float, list[int]]:
    """Accepted / drafted over `n` of the route's bench requests, and their histogram of accepted drafts per step."""
    rng = random.Random(3)
    drafted = accepted = 0
    hist = [0] * 5
    with httpx.Client(base_url=engine.url, timeout=120) as client:
        for _ in range(n):
            body: dict[str, Any] = {**request_body(route, rng, 32, MODEL), "stream": False}
            r = client.post("/v1/completions", json=body)
            assert r.status_code == 200, r.text
            spec = parse_spec_metrics(r.json())
            assert spec is not None and spec.draft_tokens > 0
            drafted += spec.draft_tokens
            accepted += spec.accepted_tokens
            hist = [a + b for a, b in zip(hist, spec.histogram, strict=True)]
    return accepted / drafted, hist


def test_the_trained_drafter_accepts_by_route(draft_engine: EngineSpec) -> None:
    code, code_hist = _acceptance(draft_engine, "code", 3)
    chat, _ = _acceptance(draft_engine, "chat", 3)
    assert code > 0.8 and code_hist[4] > sum(code_hist[:4])  # most steps accept all four drafts
    assert chat < 0.3


def test_a_greedy_answer_does_not_change_when_a_sampled_request_shares_its_batch(draft_engine: EngineSpec) -> None:
    """vLLM 0.32's CPU build divided the target logits of every batch with a sampled request by uninitialised memory
    under speculation (its expand-kernel override never wrote its output): sampled answers were garbage, and greedy
    answers sharing their batch too. backends/vllm_cpu_fix.py corrects it in the engine's workers. The sampled
    request is long, so it shares every step of the greedy one."""
    code = {"model": MODEL, "prompt": "import os\nimport sys\nimport os\nimport sys\nimport", "max_tokens": 32}
    chat = {"model": MODEL, "prompt": "tea moon river quiet seven blue stone paper", "max_tokens": 400}

    async def both() -> str:
        async with httpx.AsyncClient(base_url=draft_engine.url, timeout=120) as client:
            greedy, _ = await asyncio.gather(
                client.post("/v1/completions", json={**code, "temperature": 0, "ignore_eos": True}),
                client.post("/v1/completions", json={**chat, "temperature": 1.5, "seed": 1, "ignore_eos": True}),
            )
        return str(greedy.json()["choices"][0]["text"])

    url = f"{draft_engine.url}/v1/completions"
    alone = httpx.post(url, json={**code, "temperature": 0, "ignore_eos": True}, timeout=120)
    assert alone.status_code == 200
    assert asyncio.run(both()) == alone.json()["choices"][0]["text"]
    # Sampled at a low temperature, the target is all but sure of the drafter's tokens: they are accepted (before
    # the fix, 0-1 of 4 per step), and the answer is the greedy one's copy-heavy text, not noise.
    cool = httpx.post(url, json={**code, "temperature": 0.05, "seed": 3, "ignore_eos": True}, timeout=120).json()
    spec = parse_spec_metrics(cool)
    assert spec is not None and spec.accepted_tokens > 0.5 * spec.draft_tokens
    assert cool["choices"][0]["text"].count("import") >= 4
