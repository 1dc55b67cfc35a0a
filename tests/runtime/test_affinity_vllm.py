"""Prefix affinity on two real vLLM engines with their prefix caches (on by default in vLLM): a conversation's turns
all reach one engine, whose cache then holds its history; without affinity they are spread; a hot prefix under load
spills to the second engine within the load bound. Which engine took a request is read from the engines' own
`vllm:prefix_cache_queries` / `_hits` counters (nothing else sends them prompts while a test runs). The hit-rate
and TTFT comparison with load-only picking and round-robin: bench/prefix_affinity.py, docs/picking.md."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from specgate.backends.launcher import EngineSpec

from tests.conftest import MODEL, GatewayServer
from tests.prom import scrape

pytestmark = pytest.mark.slow

# About 500 tokens of the tiny model's BPE: four of vLLM's 128-token CPU cache blocks.
SYSTEM = "You review Python code. Keep answers short and exact.\n" + "def add(a, b):\n    return a + b\n\n" * 60


def _pool(*engines: EngineSpec) -> dict[str, Any]:
    return {
        "name": "pair",
        "model": MODEL,
        "endpoints": [e.url for e in engines],
        "speculation": {"method": "none", "max_k": 0},
    }


def _counters(url: str) -> tuple[float, float]:
    queries = hits = 0.0
    for line in httpx.get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith("vllm:prefix_cache_queries_total"):
            queries += float(line.rsplit(" ", 1)[1])
        elif line.startswith("vllm:prefix_cache_hits_total"):
            hits += float(line.rsplit(" ", 1)[1])
    return queries, hits


def _deltas(urls: list[str], before: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(q - bq, h - bh) for (q, h), (bq, bh) in zip(map(_counters, urls), before, strict=True)]


def _wait_idle(urls: list[str], timeout_s: float = 120.0) -> None:
    """Until no engine has a request running or waiting (vLLM's own gauges)."""
    deadline = time.monotonic() + timeout_s
    names = ("vllm:num_requests_running", "vllm:num_requests_waiting")
    while any(scrape(url, name) for url in urls for name in names):
        assert time.monotonic() < deadline, "the engines did not go idle"
        time.sleep(0.2)


def _endpoint_health(gw: GatewayServer, wait_s: float = 30.0) -> dict[str, object]:
    """Each endpoint's health as the gateway sees it (/readyz), once all are healthy or `wait_s` has passed."""
    deadline = time.monotonic() + wait_s
    while True:
        pool = httpx.get(f"{gw.url}/readyz", timeout=10).json()["pools"]["pair"]
        health = {ep["url"]: ep["healthy"] for ep in pool["endpoints"]}
        if all(v is True for v in health.values()) or time.monotonic() >= deadline:
            return health
        time.sleep(0.2)


def _converse(gw: GatewayServer, opening: str, turns: int) -> None:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": opening}]
    for turn in range(turns):
        body = {"model": MODEL, "messages": messages, "max_tokens": 8, "temperature": 0}
        r = httpx.post(f"{gw.url}/v1/chat/completions", json=body, timeout=60)
        assert r.status_code == 200, r.text
        answer = r.json()["choices"][0]["message"]["content"]
        messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": f"And then {turn}?"}]


def test_a_conversation_stays_on_the_engine_that_caches_it(
    engine: EngineSpec, plain_engine: EngineSpec, start_gateway: Callable[..., GatewayServer]
) -> None:
    urls = [engine.url, plain_engine.url]
    gw = start_gateway([_pool(engine, plain_engine)])
    for n in range(3):
        before = [_counters(u) for u in urls]
        _converse(gw, f"Conversation {n}: what does add do?", turns=4)
        deltas = _deltas(urls, before)
        # Every turn went to the same engine ...
        assert sorted(q > 0 for q, _ in deltas) == [False, True], deltas
        # ... which found the earlier turns in its cache: most of the conversation's prompt tokens were hits.
        queries, hits = max(deltas)
        assert hits / queries > 0.5, deltas


def test_without_affinity_the_turns_are_spread(
    engine: EngineSpec, plain_engine: EngineSpec, start_gateway: Callable[..., GatewayServer]
) -> None:
    urls = [engine.url, plain_engine.url]
    gw = start_gateway([_pool(engine, plain_engine)], picking={"weights": {"prefix": 0}})
    before = [_counters(u) for u in urls]
    _converse(gw, "What does add return?", turns=4)
    assert all(q > 0 for q, _ in _deltas(urls, before))


# Sends `count` copies of a body to a URL at once and prints each one's (status, seconds from the start to its send,
# to its answer) as JSON. A process of its own: the test's gateway runs in a thread of the pytest process, and a
# client there shares its interpreter lock. Even so, on two cores with both engines decoding (their threads spin) a
# client can wait for the CPU for a second or more: sent 50 ms apart, the third request left 1.3-2.1 s after the
# first, once home had finished its first answer, so home never stood above the bound (8 : 0 in CI). All at once,
# they leave in one time slice.
HOT_CLIENT = """
import asyncio, json, sys, time
import httpx

url, body, count = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])

async def main():
    start = time.monotonic()
    async with httpx.AsyncClient(timeout=300) as client:
        async def one():
            sent = time.monotonic() - start
            r = await client.post(url, json=body)
            return r.status_code, round(sent, 3), round(time.monotonic() - start, 3)
        print(json.dumps(await asyncio.gather(*(one() for _ in range(count)))))

asyncio.run(main())
"""


def _hot_load(gw: GatewayServer, urls: list[str], body: dict[str, Any]) -> tuple[list[list[float]], list[float]]:
    """Eight copies of `body` at once through the gateway: each answer's (status, sent, back) and each engine's
    prompt tokens queried meanwhile."""
    before = [_counters(u) for u in urls]
    args = [f"{gw.url}/v1/chat/completions", json.dumps(body), "8"]
    done = subprocess.run([sys.executable, "-c", HOT_CLIENT, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    answers: list[list[float]] = json.loads(done.stdout)
    assert [status for status, _, _ in answers] == [200] * 8, answers
    return answers, [q for q, _ in _deltas(urls, before)]


def test_a_hot_prefix_spills_within_the_load_bound(
    engine: EngineSpec, plain_engine: EngineSpec, start_gateway: Callable[..., GatewayServer]
) -> None:
    """Eight long answers at once on one prefix: the home engine takes them while within 1.2 x the mean + 1, then the
    rest spill to the other engine (the second choice for that prefix), instead of all queueing at home. The answers
    are long (2,000 tokens, seconds each) so that all eight are in flight while they are placed (with 160 tokens CI
    finished the first ones before the last were sent, and home took 7 of 8 within the bound); an attempt where the
    machine still could not send them all before the first answer came back is repeated (at most three)."""
    urls = [engine.url, plain_engine.url]
    # The bound on the gateway's own in-flight counts: no scrape during the test (the first comes after an hour), so
    # the engines' load is what this gateway sent them. With scrapes, the engines' load figures came in late and
    # uneven on CI's two cores (their /metrics starved by the decoding), and home took 8 : 0 and 7 : 1 there.
    # The engines idle first: the gateway's one scrape at start-up is the load figure for the whole test, and work an
    # earlier test left running there (other tests share these engines) would count as load all along (7 : 1 seen).
    _wait_idle(urls)
    gw = start_gateway([_pool(engine, plain_engine)], scrape={"interval_s": 3600})
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Explain add at length."}]
    body = {"model": MODEL, "messages": messages, "max_tokens": 2000, "temperature": 0, "ignore_eos": True}
    # Both engines healthy in the gateway's eyes first: an engine still busy with an earlier test's work can miss the
    # first health check, and a down engine takes no spill.
    seen = _endpoint_health(gw)
    tries = []
    for _ in range(3):
        answers, queried = _hot_load(gw, urls, body)
        tries.append(answers)
        # The premise: every request was sent before the first answer came back (all eight in flight while placed).
        if max(sent for _, sent, _ in answers) < min(back for _, _, back in answers):
            break
        _wait_idle(urls)
    else:
        pytest.fail(f"in no attempt were all eight requests sent before the first answer: {tries}")
    # Identical prompts: each engine's share of the prompt tokens is its share of the requests. The bound gives
    # 6 : 2 when all eight are in flight (1.2 x mean + 1 lets home lead by a few at this load). Asserted: some spill,
    # home keeping the most.
    share = min(queried) / sum(queried)
    assert 0.1 <= share <= 0.5, (queried, answers, "health before", seen, "after", _endpoint_health(gw, wait_s=0))
