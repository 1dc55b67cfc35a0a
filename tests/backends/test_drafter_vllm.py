"""The trained drafter (models/specgate-tiny-drafter) on a real engine: acceptance that depends on the request, as
a real speculator's does. Copy-heavy code at temperature 0 accepts at every position; `specgate bench`'s chat
requests (random words, temperature 1.5) almost never: vLLM drafts greedily and, under sampling, accepts a draft with
the target's probability of it. Measured on the knee testbed with 12 requests per route (bench/drafter_acceptance.py,
docs/testbeds.md): 1.0 at every position against 0.0; the bounds here leave wide room."""

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


@pytest.mark.xfail(
    strict=True,
    reason="vLLM 0.32's CPU build: under speculation a request sampled at temperature > 0 comes out as garbage, and "
    "a greedy request batched with one is sampled too (its text changes, its drafts are rejected); without "
    "speculation both are right. docs/testbeds.md. Strict: when an engine fixes it this test passes, and fails, so "
    "the figures measured on mixed batches can be redone.",
)
def test_a_greedy_answer_does_not_change_when_a_sampled_request_shares_its_batch(draft_engine: EngineSpec) -> None:
    """Seen with n-gram drafting too (on the knee testbed), where it depends on whether the drafter proposes; with a
    draft model every step drafts. The sampled request is long, so it shares every step of the greedy one."""
    engine = draft_engine
    code = {"model": MODEL, "prompt": "import os\nimport sys\nimport os\nimport sys\nimport", "max_tokens": 32}
    chat = {"model": MODEL, "prompt": "tea moon river quiet seven blue stone paper", "max_tokens": 32}

    async def both() -> str:
        async with httpx.AsyncClient(base_url=engine.url, timeout=120) as client:
            greedy, _ = await asyncio.gather(
                client.post("/v1/completions", json={**code, "temperature": 0, "ignore_eos": True}),
                client.post(
                    "/v1/completions",
                    json={**chat, "temperature": 1.5, "seed": 1, "ignore_eos": True, "max_tokens": 400},
                ),
            )
        return str(greedy.json()["choices"][0]["text"])

    alone = httpx.post(f"{engine.url}/v1/completions", json={**code, "temperature": 0, "ignore_eos": True}, timeout=120)
    assert alone.status_code == 200
    assert asyncio.run(both()) == alone.json()["choices"][0]["text"]
