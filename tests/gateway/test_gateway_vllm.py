"""The gateway in front of a real CPU vLLM server, driven with the official openai client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from specgate.backends.launcher import EngineSpec

from tests.conftest import MODEL, GatewayServer, engine_gauge, engine_pool, free_port
from tests.prom import scrape

pytestmark = pytest.mark.slow

PROMPT = "def add(a, b):\n    return a + b\n\n\ndef"


def client(gw: GatewayServer, **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gw.url}/v1", api_key="unused", **kw)


def test_chat_non_stream_has_content_and_usage(gateway: GatewayServer) -> None:
    resp = client(gateway).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "import os\nimport"}], max_tokens=16, temperature=0
    )
    assert resp.choices[0].message.content
    assert resp.usage is not None and resp.usage.completion_tokens > 0
    assert resp.usage.prompt_tokens > 0


def test_completion_non_stream(gateway: GatewayServer) -> None:
    resp = client(gateway).completions.create(model=MODEL, prompt=PROMPT, max_tokens=20, temperature=0)
    assert resp.choices[0].text
    assert (resp.usage is not None and resp.usage.completion_tokens == 20) or resp.choices[0].finish_reason == "stop"


def test_chat_stream_with_usage(gateway: GatewayServer) -> None:
    stream = client(gateway).chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "class Foo:"}],
        max_tokens=24,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_completion_stream_matches_non_stream(gateway: GatewayServer) -> None:
    c = client(gateway)
    full = c.completions.create(model=MODEL, prompt=PROMPT, max_tokens=24, temperature=0).choices[0].text
    streamed = "".join(
        ch.choices[0].text
        for ch in c.completions.create(model=MODEL, prompt=PROMPT, max_tokens=24, temperature=0, stream=True)
        if ch.choices
    )
    assert streamed == full


def test_async_client_concurrent_requests(gateway: GatewayServer) -> None:
    async def main() -> list[str]:
        ac = openai.AsyncOpenAI(base_url=f"{gateway.url}/v1", api_key="unused")
        try:
            results = await asyncio.gather(
                *(
                    ac.completions.create(model=MODEL, prompt=f"x = {i}\n", max_tokens=8, temperature=0)
                    for i in range(8)
                )
            )
            stream = await ac.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "for i in"}], max_tokens=8, stream=True
            )
            streamed = [ch async for ch in stream]
        finally:
            await ac.close()
        assert streamed
        return [r.choices[0].text for r in results]

    texts = asyncio.run(main())
    assert len(texts) == 8 and all(isinstance(t, str) for t in texts)


def test_models_lists_each_model_once(engine: object, start_gateway: Callable[..., GatewayServer]) -> None:
    gw = start_gateway([engine_pool(engine), {**engine_pool(engine), "name": "second"}])  # type: ignore[arg-type]  # config sections as loose dicts
    models = client(gw).models.list()
    assert [m.id for m in models.data] == [MODEL]


def test_unknown_model_is_404_model_not_found(gateway: GatewayServer) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        client(gateway, max_retries=0).completions.create(model="nope", prompt="x", max_tokens=1)
    assert info.value.code == "model_not_found"


def test_malformed_json_is_400_in_openai_shape(gateway: GatewayServer) -> None:
    r = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["type"] == "invalid_request_error"


def test_schema_violation_names_param(gateway: GatewayServer) -> None:
    r = httpx.post(f"{gateway.url}/v1/chat/completions", json={"model": MODEL, "messages": "hi"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages"


def test_engine_validation_error_is_normalised(gateway: GatewayServer) -> None:
    # Too long for the engine's context: vLLM answers 400 with a numeric code; we pass a clean shape on.
    r = httpx.post(f"{gateway.url}/v1/completions", json={"model": MODEL, "prompt": "x", "max_tokens": 100000})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["message"] and (err["code"] is None or isinstance(err["code"], str))


def test_oversized_body_is_413(engine: object, start_gateway: Callable[..., GatewayServer]) -> None:
    gw = start_gateway([engine_pool(engine)], server={"max_body_bytes": 2048})  # type: ignore[arg-type]  # config sections as loose dicts
    r = httpx.post(f"{gw.url}/v1/completions", json={"model": MODEL, "prompt": "x" * 5000})
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"


def test_request_id_echoed_and_created(gateway: GatewayServer) -> None:
    r = httpx.post(
        f"{gateway.url}/v1/completions",
        json={"model": MODEL, "prompt": "a", "max_tokens": 1},
        headers={"x-request-id": "abc-123"},
    )
    assert r.headers["x-request-id"] == "abc-123"
    r = httpx.get(f"{gateway.url}/v1/models")
    assert len(r.headers["x-request-id"]) == 32


def test_pool_with_dead_endpoint_only_is_503_with_retry_after(
    start_gateway: Callable[..., GatewayServer],
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    gw = start_gateway([{"name": "dead", "model": MODEL, "endpoints": [dead]}])
    r = httpx.post(f"{gw.url}/v1/completions", json={"model": MODEL, "prompt": "a", "max_tokens": 1})
    assert r.status_code == 503
    assert int(r.headers["retry-after"]) >= 1
    assert r.json()["error"]["code"] == "service_unavailable"
    ready = httpx.get(f"{gw.url}/readyz")
    assert ready.status_code == 503 and ready.json()["down_pools"] == ["dead"]


def test_failover_from_dead_endpoint_has_no_client_errors(
    engine: object, start_gateway: Callable[..., GatewayServer]
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    # Health checks far apart, so the dead endpoint is still "unknown/healthy" when traffic starts:
    # the relay itself must fail over.
    gw = start_gateway([engine_pool(engine, dead)], health={"interval_s": 3600})  # type: ignore[arg-type]  # config sections as loose dicts
    gw.gateway.pools.pools[0].endpoints[0].healthy = None
    c = client(gw, max_retries=0)
    before = scrape(gw.url, "specgate_upstream_errors_total", pool="cpu", reason="connect")
    for i in range(6):
        assert c.completions.create(model=MODEL, prompt=f"y = {i}", max_tokens=4).choices
        s = c.completions.create(model=MODEL, prompt=f"z = {i}", max_tokens=4, stream=True)
        assert [ch for ch in s]
    # The dead endpoint refused once and was ejected: later requests go to the live one only.
    assert scrape(gw.url, "specgate_upstream_errors_total", pool="cpu", reason="connect") - before == 1
    assert httpx.get(f"{gw.url}/readyz").status_code == 200


def test_readyz_and_healthz(gateway: GatewayServer) -> None:
    assert httpx.get(f"{gateway.url}/healthz").json() == {"status": "ok"}
    body = httpx.get(f"{gateway.url}/readyz").json()
    assert body["status"] == "ready" and body["pools"]["cpu"]["healthy_endpoints"] == 1


def test_metrics_count_requests_and_latency(gateway: GatewayServer) -> None:
    labels = {"api": "completions", "pool": "cpu", "route": "default", "status": "200"}
    before = scrape(gateway.url, "specgate_requests_total", **labels)
    timed = scrape(gateway.url, "specgate_request_duration_seconds_count", pool="cpu", api="completions")
    client(gateway).completions.create(model=MODEL, prompt="q", max_tokens=2)
    assert scrape(gateway.url, "specgate_requests_total", **labels) == before + 1
    assert scrape(gateway.url, "specgate_request_duration_seconds_count", pool="cpu", api="completions") == timed + 1


def _wait_running(url: str, predicate: Callable[[float], bool], timeout: float) -> tuple[float, float]:
    """Poll the engine's running gauge; returns (value, when the poll that saw it was *sent*).

    The send time is what bounds the abort: a poll sent at t that reads 0 proves the request was gone
    by t, however long the busy engine then took to answer the poll.
    """
    deadline = time.monotonic() + timeout
    while True:
        sent = time.monotonic()
        value = engine_gauge(url, "running")
        if predicate(value) or sent > deadline:
            return value, sent
        time.sleep(0.05)


def _generated_tokens(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("vllm:generation_tokens_total{")
    )


# A long request: no repetition for the n-gram drafter, k pinned to 0, and 64 sequences of 1,900 tokens (about
# 120k tokens: many seconds of work; one sequence alone takes only ~1.3 s here). vLLM's API server can be busy
# for seconds, delaying /metrics answers and the first chunk, so the abort is judged by the engine's
# generated-token counter: flat from one second after the disconnect, and well short of the full request.
SLOW = {
    "model": MODEL,
    "prompt": "qzv fjx kwp mlr tbh ycd ngs",
    "max_tokens": 1900,
    "ignore_eos": True,
    "temperature": 1.0,
    "seed": 7,
    "n": 64,
}
FULL = 64 * 1900


def _assert_aborted(url: str, closed: float, started_at_tokens: float) -> None:
    time.sleep(max(0.0, closed + 1.0 - time.monotonic()))
    before = _generated_tokens(url)
    time.sleep(1.5)
    after = _generated_tokens(url)
    assert after == before, "the engine kept generating for a client that left"
    assert after - started_at_tokens < 0.8 * FULL, "the request ran (nearly) to the end: it was not aborted"
    assert engine_gauge(url, "running") == 0


@pytest.fixture
def k0_gateway(engine: object, start_gateway: Callable[..., GatewayServer]) -> GatewayServer:
    return start_gateway([engine_pool(engine)], routing={"routes": [{"name": "default", "k": {"pin": 0}}]})  # type: ignore[arg-type]  # config sections as loose dicts


def test_client_disconnect_mid_stream_aborts_engine_request(engine: EngineSpec, k0_gateway: GatewayServer) -> None:
    url = engine.url
    start = _generated_tokens(url)
    with (
        httpx.Client(timeout=60) as http,
        http.stream("POST", f"{k0_gateway.url}/v1/completions", json={**SLOW, "stream": True}) as r,
    ):
        assert r.status_code == 200
        next(r.iter_raw())  # generation has started
    _assert_aborted(url, time.monotonic(), start)


def test_client_disconnect_non_stream_aborts_engine_request(engine: EngineSpec, k0_gateway: GatewayServer) -> None:
    url = engine.url

    async def go() -> float:
        async with httpx.AsyncClient(timeout=60) as http:
            task = asyncio.create_task(http.post(f"{k0_gateway.url}/v1/completions", json=SLOW))
            await asyncio.sleep(1.5)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return time.monotonic()

    start = _generated_tokens(url)
    _assert_aborted(url, asyncio.run(go()), start)


def test_requests_are_routed_by_the_classifier(engine: object, start_gateway: Callable[..., GatewayServer]) -> None:
    routing = {
        "routes": [
            {"name": "code", "match": [{"classes": ["code", "code-edit"]}], "k": {"pin": 4}},
            {"name": "summary", "match": [{"classes": ["summarise"]}], "k": {"pin": 0}},
        ],
        "default_route": "chat",
    }
    gw = start_gateway([engine_pool(engine)], routing=routing)  # type: ignore[arg-type]  # config sections as loose dicts
    code = httpx.post(
        f"{gw.url}/v1/chat/completions",
        json={
            "model": MODEL,
            "max_tokens": 4,
            "messages": [
                {
                    "role": "user",
                    "content": "Fix the bug in this function:\n\ndef add(a, b):\n    return a - b",
                }
            ],
        },
    )
    text = (
        "The import system searches sys.path for modules. Each entry is a directory or a zip file. "
        "Finders and loaders cooperate to locate the module and execute its code. "
    ) * 3
    summary = httpx.post(
        f"{gw.url}/v1/chat/completions",
        json={
            "model": MODEL,
            "max_tokens": 4,
            "messages": [{"role": "user", "content": f"Summarize the following text:\n\n{text}"}],
        },
    )
    chat = httpx.post(
        f"{gw.url}/v1/chat/completions",
        json={
            "model": MODEL,
            "max_tokens": 4,
            "messages": [{"role": "user", "content": "Hi! Tell me a joke about penguins."}],
        },
    )
    assert (code.headers["x-specgate-route"], code.headers["x-specgate-k"]) == ("code", "4")
    assert (summary.headers["x-specgate-route"], summary.headers["x-specgate-k"]) == ("summary", "0")
    assert chat.headers["x-specgate-route"] == "chat"
    routes = [o.route for o in gw.gateway.sink.drain()]
    assert routes == ["code", "summary", "chat"]
    assert scrape(gw.url, "specgate_route_requests_total", route="code") == 1
