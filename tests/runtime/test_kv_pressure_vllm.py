"""KV pressure on a real engine: a vLLM server with a KV cache of a few thousand tokens preempts under long requests;
the gateway reads its KV use, preemptions and cache size, caps the pool's k (the opt-in rule, `controller.kv_cap`),
and lifts the cap once the cache has room."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import httpx
import pytest
from specgate.backends.launcher import EngineSpec

from tests.conftest import MODEL, GatewayServer, _engine_fixture, engine_pool

pytestmark = pytest.mark.slow

# 24 blocks of 128 tokens (vLLM's CPU block size): 3,072 token slots, above the 2,048 a request may need.
SMALL_KV = ("--num-gpu-blocks-override", "24", "--block-size", "128")
AFTER_S = 4.0
COPY = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n"


@pytest.fixture(scope="module")
def small_kv_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineSpec]:
    """SPECGATE_TEST_SMALL_KV_ENGINE_URL reuses one started with `specgate engine up` and these extra flags."""
    yield from _engine_fixture(tmp_path_factory, "SPECGATE_TEST_SMALL_KV_ENGINE_URL", extra_args=SMALL_KV)


def _preemptions(engine: EngineSpec) -> float:
    text = httpx.get(f"{engine.url}/metrics", timeout=10).text
    lines = [line for line in text.splitlines() if line.startswith("vllm:num_preemptions_total")]
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


def _cap(gw: GatewayServer) -> dict[str, object]:
    status = httpx.get(f"{gw.url}/admin/routes", timeout=10).json()["routes"]["default"]
    return {"cap": status["kv_cap"], "reason": status["kv_reason"], "pool_max": status["bounds"]["pool_max"]}


def _metrics(gw: GatewayServer) -> list[str]:
    return httpx.get(f"{gw.url}/metrics", timeout=10).text.splitlines()


def _engine_kv(engine: EngineSpec) -> tuple[float, float]:
    from specgate.backends.vllm_metrics import parse_vllm_metrics

    snap = parse_vllm_metrics(httpx.get(f"{engine.url}/metrics", timeout=10).text)
    return float(snap.kv_usage or 0.0), float(snap.running or 0.0)


async def _capped_during(
    gw: GatewayServer, load: Coroutine[Any, Any, None], engine: EngineSpec, engine_seen: list[tuple[float, float]]
) -> list[tuple[int, str, int, float]]:
    """Run `load` while reading the pool's cap every 0.25 s, and for up to AFTER_S once it is done: (cap, reason, pool
    max, exported gauge) of each reading that found k capped. Not later: once the cache has room the cap rises a step
    every kv_recover_s (8 s), so within AFTER_S of the load it still holds what the pressure set; the load itself can be
    over in 4 s on CI, before a poll slowed by the busy engine comes round again. `engine_seen` gets the engine's own
    (KV use, running) at each reading during the load, for the failure message."""
    seen: list[tuple[int, str, int, float]] = []
    task = asyncio.create_task(load)
    done_at: float | None = None
    while done_at is None or time.monotonic() - done_at < AFTER_S:
        if not task.done():
            engine_seen.append(await asyncio.to_thread(_engine_kv, engine))
        state = await asyncio.to_thread(_cap, gw)
        if state["cap"] is not None:
            lines = await asyncio.to_thread(_metrics, gw)
            # Absent until the control loop first publishes (NaN then, which fails the gauge check below).
            gauge = next((line for line in lines if line.startswith('specgate_pool_k_cap{pool="cpu"}')), "- nan")
            seen.append(
                (int(state["cap"]), str(state["reason"]), int(state["pool_max"]), float(gauge.rsplit(" ", 1)[1]))
            )
            if task.done():
                break
        await asyncio.wait({task}, timeout=0.25)
        if task.done() and done_at is None:
            done_at = time.monotonic()
    await task
    return seen


async def _long_requests(gw: GatewayServer, n: int) -> None:
    body = {"model": MODEL, "prompt": COPY, "max_tokens": 700, "temperature": 0, "ignore_eos": True}
    async with httpx.AsyncClient(timeout=300) as client:
        answers = await asyncio.gather(*(client.post(f"{gw.url}/v1/completions", json=body) for _ in range(n)))
    assert all(a.status_code == 200 for a in answers), [a.text[:200] for a in answers if a.status_code != 200]


def test_preemptions_cap_k_and_the_cap_lifts_when_the_cache_has_room(
    small_kv_engine: EngineSpec, start_gateway: Callable[..., GatewayServer]
) -> None:
    # A draft share of 0.1% (3 of 3,072 slots) caps k whatever the running count at the reading that saw the
    # pressure: with 0.5% a reading taken while only three requests ran (the cache holds about four of these) gave
    # floor(15.4 / 3) = 5 >= max k, so no cap (CI, once).
    # kv_recover_s 8: with 2 s the cap had already lifted once when read (CI: the last requests ran on alone with the
    # cache below kv_low for over 2 s before the check); the lift itself is awaited below for up to 90 s.
    controller = {"tick_s": 0.5, "kv_cap": True, "kv_draft_share": 0.001, "kv_recover_s": 8.0, "stale_after_s": 120}
    # Scrape timeout 10 s: on CI's two cores the busy engine answered /metrics too late for the default 2 s, so the
    # gateway never saw the pressure while it lasted (CI, once).
    scrape = {"interval_s": 0.5, "timeout_s": 10.0}
    gw = start_gateway([engine_pool(small_kv_engine)], controller=controller, scrape=scrape)
    assert _cap(gw)["cap"] is None
    preempted_before = _preemptions(small_kv_engine)
    engine_seen: list[tuple[float, float]] = []
    # 40 x ~720 tokens in a 3,072-token cache: with 10 the load was over in 4.8 s on CI, and the busy engine's /metrics
    # answered no scrape while it lasted (a scrape after it sees the preemptions but nothing running: no cap); with 20
    # CI once saw the same (the engine's own gauges, read by the test during the load, peaked at 4% KV, one running).
    # The premise is that the load was seen running: CI once read the engine's own gauges at (0 KV, 0 running) all
    # through a load whose 40 answers then came back in the same millisecond after 14 s. Such an attempt says nothing
    # about the cap and is repeated (at most three in all); one that was seen running is judged.
    for _ in range(3):
        engine_seen.clear()
        seen = asyncio.run(_capped_during(gw, _long_requests(gw, 40), small_kv_engine, engine_seen))
        if seen or max((running for _, running in engine_seen), default=0.0) > 0:
            break
    assert _preemptions(small_kv_engine) > preempted_before, "the engine never preempted: the test proves nothing"
    failures = [line for line in _metrics(gw) if line.startswith("specgate_engine_scrape_failures_total{")]
    peak = max(engine_seen, default=(0.0, 0.0))
    assert seen, f"k was never capped during the load; scrape failures: {failures}; engine (KV use, running): {peak}"
    cap, reason, pool_max, _ = seen[0]
    assert cap < small_kv_engine.max_k, seen[0]
    assert "KV use" in reason, seen[0]
    # The gauge is published after the decision in the same tick; a reading may fall between the two.
    assert any(e < small_kv_engine.max_k for *_, e in seen), seen
    assert pool_max == cap, seen[0]
    # Idle: the cache empties; after kv_recover_s below kv_low per step the cap rises back to the pool's max (from
    # 0, four steps of 8 s).
    deadline = time.monotonic() + 90
    while _cap(gw)["cap"] is not None:
        assert time.monotonic() < deadline, f"the cap never lifted: {_cap(gw)}"
        time.sleep(0.5)
