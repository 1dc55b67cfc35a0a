"""The knee testbed on a real vLLM engine (`specgate engine up --testbed knee`): the same text as the tiny model,
and the cost curve it exists for, speculation that pays alone and costs under load. Only margins far inside what
was measured are asserted (docs/testbeds.md: k=4 over k=0 time per token ~0.15x alone, ~1.7x at 32 concurrent),
so a noisy machine cannot flip them; the full curve is a benchmark (bench/calibrate_cpu_step.py)."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from specgate.backends.launcher import EngineSpec
from specgate.backends.testbed import ensure_knee_model

from tests.conftest import MODEL, _engine_fixture

pytestmark = pytest.mark.slow

KNEE = "specgate-knee"
COPY = "import os\nimport sys\nimport os\nimport sys\nimport os\nimport sys\nimport os\nimport"


@pytest.fixture(scope="module")
def knee_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineSpec]:
    """SPECGATE_TEST_KNEE_ENGINE_URL reuses one started with `specgate engine up --testbed knee`."""
    yield from _engine_fixture(
        tmp_path_factory, "SPECGATE_TEST_KNEE_ENGINE_URL", model_dir=ensure_knee_model(), served_name=KNEE
    )


def _complete(url: str, model: str, prompt: str, k: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "prompt": prompt, "max_tokens": 32, "temperature": 0}
    if k is not None:
        body["vllm_xargs"] = {"num_speculative_tokens": k}
    r = httpx.post(f"{url}/v1/completions", json=body, timeout=300)
    assert r.status_code == 200, r.text
    return r.json()


def test_the_knee_engine_writes_what_the_tiny_engine_writes(knee_engine: EngineSpec, engine: EngineSpec) -> None:
    for prompt in ("def add(a, b):\n    return", "class Parser:\n    def __init__(self", "The result of"):
        for k in (0, 4):  # speculation must not change greedy text either
            tiny = _complete(engine.url, MODEL, prompt, k)["choices"][0]["text"]
            assert _complete(knee_engine.url, KNEE, prompt, k)["choices"][0]["text"] == tiny


async def _time_per_token(url: str, concurrency: int, k: int) -> float:
    """Mean over `concurrency` simultaneous copy-heavy requests of (end-to-end time / output tokens)."""
    body = {
        "model": KNEE,
        "prompt": COPY,
        "max_tokens": 32,
        "temperature": 0,
        "ignore_eos": True,
        "vllm_xargs": {"num_speculative_tokens": k},
    }

    async def one(client: httpx.AsyncClient) -> float:
        started = time.perf_counter()
        r = await client.post("/v1/completions", json=body)
        assert r.status_code == 200, r.text
        return (time.perf_counter() - started) / r.json()["usage"]["completion_tokens"]

    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        return statistics.fmean(await asyncio.gather(*(one(client) for _ in range(concurrency))))


def _ratio(url: str, concurrency: int) -> float:
    """k=4 over k=0 time per token, each the best of two alternated runs (interference only ever adds time)."""
    runs: dict[int, list[float]] = {0: [], 4: []}
    for k in (0, 4, 4, 0):
        runs[k].append(asyncio.run(_time_per_token(url, concurrency, k)))
    return min(runs[4]) / min(runs[0])


def test_speculation_pays_alone_and_costs_past_the_knee(knee_engine: EngineSpec) -> None:
    asyncio.run(_time_per_token(knee_engine.url, 4, 4))  # warm-up
    alone, crowded = _ratio(knee_engine.url, 1), _ratio(knee_engine.url, 32)
    assert alone < 0.6, f"alone k=4 should be much faster than k=0: ratio {alone:.2f}"
    assert crowded > 1.15, f"at 32 concurrent k=4 should be slower than k=0: ratio {crowded:.2f}"
