"""The trained drafter (models/specgate-tiny-drafter) on a real engine: acceptance that depends on the request, as
a real speculator's does. Copy-heavy code at temperature 0 accepts at every position; `specgate bench`'s chat
requests (random words, temperature 1.5) almost never: vLLM drafts greedily and, under sampling, accepts a draft with
the target's probability of it. Measured on the knee testbed with 12 requests per route (bench/drafter_acceptance.py,
docs/testbeds.md): 1.0 at every position against 0.0; the bounds here leave wide room."""

from __future__ import annotations

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
