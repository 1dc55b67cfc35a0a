"""A Red Hat Speculators checkpoint (EAGLE-3, made for the tiny model by backends/testbed.py) served by the real CPU
vLLM: the config path operators use for learned drafters, with specgate's scheduler plugin loaded. The head is
untrained, so this shows the plumbing (discovery, caps, schedules, output unchanged), not a speed-up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from specgate.backends.capabilities import discover
from specgate.backends.launcher import EngineSpec

from tests.conftest import MODEL, GatewayServer, engine_pool, run

pytestmark = pytest.mark.slow

PROMPT = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n"


def _complete(engine: EngineSpec, xargs: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "prompt": PROMPT, "max_tokens": 16, "temperature": 0}
    if xargs is not None:
        body["vllm_xargs"] = xargs
    r = httpx.post(f"{engine.url}/v1/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_vllm_takes_the_verifier_method_and_k_from_the_checkpoint(eagle3_engine: EngineSpec) -> None:
    async def facts() -> Any:
        async with httpx.AsyncClient() as client:
            return await discover(client, eagle3_engine.url, MODEL, timeout_s=120)

    found = run(facts())
    assert (found.speculation, found.max_k, found.per_request_metrics, found.plugin) == (True, 3, True, True)


def test_caps_and_schedules_apply_and_the_text_is_the_verifiers(eagle3_engine: EngineSpec, engine: EngineSpec) -> None:
    free = _complete(eagle3_engine, None)
    spec = free["metrics"]["speculative_decoding"]
    assert spec["num_draft_tokens"] == 3 * spec["num_spec_steps"] > 0  # the head drafts k = 3 at every step
    off = _complete(eagle3_engine, {"num_speculative_tokens": 0})["metrics"]["speculative_decoding"]
    assert off["num_draft_tokens"] == 0
    two = _complete(eagle3_engine, {"specgate_k_schedule": "1:2"})["metrics"]["speculative_decoding"]
    assert 0 < two["num_draft_tokens"] <= 2 * two["num_spec_steps"]
    tiny = _complete(engine, {"num_speculative_tokens": 0})["choices"][0]["text"]
    assert free["choices"][0]["text"] == tiny  # speculation never changes the verifier's greedy text


def test_a_pool_of_it_matches_its_config(
    eagle3_engine: EngineSpec, start_gateway: Callable[..., GatewayServer]
) -> None:
    pool = {**engine_pool(eagle3_engine), "speculation": {"method": "eagle3", "max_k": 3, "per_request_k": True}}
    gw = start_gateway([pool], discovery={"probe": True, "timeout_s": 120})
    assert "mismatches" not in httpx.get(f"{gw.url}/readyz", timeout=10).json()
    r = httpx.post(f"{gw.url}/v1/completions", json={"model": MODEL, "prompt": PROMPT, "max_tokens": 8}, timeout=60)
    assert r.status_code == 200 and r.headers["x-specgate-k"] in {"0", "1", "2", "3"}
