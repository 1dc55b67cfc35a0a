"""Load kept in flight on a real engine, for tests that need a batch larger than one while they measure."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx


def gauge(text: str, name: str) -> float:
    """Sum of a labelled gauge over its series in a Prometheus text scrape."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(f"{name}{{"))


async def engine_metrics(client: httpx.AsyncClient) -> str:
    """The engine's /metrics text. A GET is safe to send again: once more after a transport error (a kept-alive
    connection the engine closed as it was reused: CI lost a scrape so, failing a test about something else)."""
    try:
        return (await client.get("/metrics", timeout=10)).text
    except httpx.TransportError:
        return (await client.get("/metrics", timeout=10)).text


@contextlib.asynccontextmanager
async def busy(client: httpx.AsyncClient, body: Mapping[str, Any], workers: int, running: int) -> AsyncIterator[None]:
    """`workers` copies of `body` kept in flight (each replaced as soon as it ends) until the block exits; entered
    once the engine reports at least `running` of them at once. Kept in flight rather than sent once: the tiny model
    writes 400 tokens in well under a second, and under CPU contention the API server can hand requests to the engine
    more slowly than it finishes them, so a one-shot load may run one request after another (seen in CI: a mean batch
    of 0.996 for six "concurrent" requests) or end before the request under test runs. Worker i asks for i/2w fewer
    tokens than `body` (fewer: more may pass the model's length): copies of one length started together end together,
    and while all are replaced at once the batch drops to the request under test alone (CI saw a schedule's batch
    threshold crossed at 4 of 24 steps so); of different lengths they end one by one and stay apart."""
    stop = asyncio.Event()
    dropped: list[BaseException] = []

    async def keep_one(worker: int) -> None:
        sized = dict(body)
        if isinstance(tokens := body.get("max_tokens"), int):
            sized["max_tokens"] = tokens - tokens * worker // (2 * workers)
        while not stop.is_set():
            try:
                r = await client.post("/v1/completions", json=sized)
            except httpx.TransportError as exc:
                # A kept-alive connection the engine closed as it was reused (its keep-alive is uvicorn's 5 s, the
                # client's idle expiry too; CI once lost a load request so, failing a test about something else):
                # the load is scaffolding, so it is sent again, a few times at most.
                dropped.append(exc)
                assert len(dropped) <= 3, f"load requests failed: {dropped}"
                continue
            assert r.status_code == 200, r.text

    tasks = [asyncio.create_task(keep_one(i)) for i in range(workers)]
    try:
        deadline, seen = time.monotonic() + 120, 0.0
        while seen < running:
            failed = [t.exception() for t in tasks if t.done()]
            assert not failed, f"a load request failed: {failed}"
            assert time.monotonic() < deadline, f"the engine never ran {running} requests at once (last {seen})"
            seen = gauge(await engine_metrics(client), "vllm:num_requests_running")
            await asyncio.sleep(0.05)
        yield
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
