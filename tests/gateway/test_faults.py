"""The gateway against a fault-injecting upstream (tests/fault_upstream.py, a real HTTP server): retries before
the first byte, circuit breaker, timeouts, clean SSE errors after it, and nothing left open afterwards."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import httpx
import orjson
import pytest

from tests.conftest import GatewayServer, free_port
from tests.fault_upstream import FaultUpstream

MODEL = "m"


@pytest.fixture
def upstreams() -> Iterator[list[FaultUpstream]]:
    made: list[FaultUpstream] = []
    yield made
    for u in made:
        u.close()


def upstream(made: list[FaultUpstream], mode: str = "ok", **kw: float) -> FaultUpstream:
    u = FaultUpstream(mode, **kw)
    made.append(u)
    return u


def gateway(start: Callable[..., GatewayServer], urls: list[str], **overrides: object) -> GatewayServer:
    settings: dict = {
        "timeouts": {"connect_s": 1, "first_byte_s": 1.0, "total_s": 1.0, "stream_idle_s": 0.5},
        "retries": {"max_attempts": 3},
        "health": {"interval_s": 3600},  # the tests drive failures through requests, not health checks
        **overrides,
    }
    return start([{"name": "p", "model": MODEL, "endpoints": urls}], **settings)


def post(gw: GatewayServer, stream: bool = False) -> httpx.Response:
    return httpx.post(
        f"{gw.url}/v1/completions", json={"model": MODEL, "prompt": "hi", "max_tokens": 4, "stream": stream}, timeout=30
    )


def events(r: httpx.Response) -> list[str]:
    return [line[6:] for line in r.text.split("\n") if line.startswith("data: ")]


def assert_no_leaks(gw: GatewayServer, *ups: FaultUpstream) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(ep.outstanding for ep in gw.gateway.pools.endpoints()):
        time.sleep(0.02)
    assert all(ep.outstanding == 0 for ep in gw.gateway.pools.endpoints())
    metrics = httpx.get(f"{gw.url}/metrics").text
    assert 'specgate_requests_in_flight{api="completions"} 0.0' in metrics
    gw.stop()  # closes the gateway's pooled upstream connections
    for u in ups:
        assert u.wait_idle(), f"{u.mode}: {u.open_connections} connections left open"


def test_upstream_connections_are_kept_alive_and_reused(
    start_gateway: Callable, upstreams: list[FaultUpstream]
) -> None:
    up = upstream(upstreams)
    gw = gateway(start_gateway, [up.url])
    assert post(gw).status_code == 200
    before = up.connections  # the relay's one, plus health checks' and scrapes' (their own kept-alive client)
    for i in range(20):
        r = post(gw, stream=bool(i % 2))
        assert r.status_code == 200 and r.headers["x-request-id"]
        if i % 2:
            assert events(r)[-1] == "[DONE]" and len(events(r)) == 17
        else:
            assert r.json()["choices"][0]["text"] == "fixed answer"
    assert up.hits == 21 and up.connections == before  # the first request's connection carried all the others
    assert_no_leaks(gw, up)


def test_openapi_describes_the_generation_endpoints(start_gateway: Callable, upstreams: list[FaultUpstream]) -> None:
    # They are served ahead of FastAPI's routing; the schema (and the schemathesis fuzzing built on it) must still
    # see them, with their request bodies.
    gw = gateway(start_gateway, [upstream(upstreams).url])
    paths = httpx.get(f"{gw.url}/openapi.json").json()["paths"]
    for path, required in (("/v1/chat/completions", "messages"), ("/v1/completions", "prompt")):
        schema = paths[path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert required in schema["required"] and "model" in schema["properties"]
    assert "/v1/models" in paths and "/admin/routes" in paths


def test_5xx_is_retried_on_another_endpoint(start_gateway: Callable, upstreams: list[FaultUpstream]) -> None:
    bad, good = upstream(upstreams, "http_500"), upstream(upstreams)
    gw = gateway(start_gateway, [bad.url, good.url])
    for stream in (False, True, False, True):
        r = post(gw, stream)
        assert r.status_code == 200
    assert good.hits == 4 and 1 <= bad.hits <= 4
    assert_no_leaks(gw, bad, good)


def test_all_endpoints_failing_is_a_bounded_502(start_gateway: Callable, upstreams: list[FaultUpstream]) -> None:
    ups = [upstream(upstreams, "http_500") for _ in range(3)]
    gw = gateway(start_gateway, [u.url for u in ups], retries={"max_attempts": 2})
    r = post(gw)
    assert r.status_code == 502 and r.json()["error"]["type"] == "api_error"
    assert sum(u.hits for u in ups) == 2, "retry budget respected"
    assert_no_leaks(gw, *ups)


def test_refused_connections_fail_over(start_gateway: Callable, upstreams: list[FaultUpstream]) -> None:
    good = upstream(upstreams)
    gw = gateway(start_gateway, [f"http://127.0.0.1:{free_port()}", good.url])
    for _ in range(3):
        assert post(gw, stream=True).status_code == 200
    assert_no_leaks(gw, good)


def test_slow_headers_time_out_and_retry(start_gateway: Callable, upstreams: list[FaultUpstream]) -> None:
    slow, good = upstream(upstreams, "slow_headers", delay_s=5), upstream(upstreams)
    gw = gateway(start_gateway, [slow.url, good.url])
    started = time.monotonic()
    for _ in range(2):
        r = post(gw, stream=True)
        assert r.status_code == 200 and events(r)[-1] == "[DONE]"
    assert time.monotonic() - started < 4, "first-byte timeout (1 s) bounded the wait"
    only = gateway(start_gateway, [slow.url], retries={"max_attempts": 1})
    r = post(only, stream=True)
    assert r.status_code == 504 and r.json()["error"]["code"] == "timeout"
    assert_no_leaks(gw, good)
    only.stop()


def test_a_non_streaming_answer_past_total_s_is_a_504_and_never_run_twice(
    start_gateway: Callable, upstreams: list[FaultUpstream]
) -> None:
    """vLLM sends a non-streaming answer's headers when it is finished: running out of `total_s` means the engine may
    have been generating all along, so the request is not sent to the other endpoint."""
    slow, other = upstream(upstreams, "slow_headers", delay_s=3), upstream(upstreams, "slow_headers", delay_s=3)
    gw = gateway(start_gateway, [slow.url, other.url])
    r = post(gw)
    assert r.status_code == 504 and r.json()["error"]["code"] == "timeout"
    assert slow.hits + other.hits == 1
    # A pool's own total_s (a slow model) overrides the global one (1 s here).
    roomy = start_gateway(
        [{"name": "p", "model": MODEL, "endpoints": [slow.url], "total_s": 10}],
        timeouts={"connect_s": 1, "total_s": 1.0},
    )
    assert post(roomy).status_code == 200
    roomy.stop()


@pytest.mark.parametrize("mode", ["stall_stream", "cut_stream", "truncated_sse"])
def test_stream_failures_after_the_first_byte_end_in_a_clean_sse_error(
    start_gateway: Callable, upstreams: list[FaultUpstream], mode: str
) -> None:
    u = upstream(upstreams, mode)
    gw = gateway(start_gateway, [u.url])
    started = time.monotonic()
    r = post(gw, stream=True)
    assert r.status_code == 200 and time.monotonic() - started < 5
    data = events(r)
    assert len(data) >= 2 and data[0].startswith("{") and "[DONE]" not in data
    # OpenAI's contract: a mid-stream failure is one last `data: {"error": ...}` event, then the stream closes
    assert r.text.endswith("\n\n")
    error = orjson.loads(data[-1])["error"]
    assert error["type"] and error["message"] and error["code"] in ("timeout", "bad_gateway")
    assert_no_leaks(gw, u)


def test_garbage_in_a_stream_never_breaks_the_framing(start_gateway: Callable, upstreams: list[FaultUpstream]) -> None:
    u = upstream(upstreams, "garbage_sse")
    gw = gateway(start_gateway, [u.url])
    r = post(gw, stream=True)
    assert r.status_code == 200
    assert r.text.endswith("\n\n")
    data = events(r)
    assert data[-1] == "[DONE]"  # every event the client sees is whole and the stream is terminated
    assert_no_leaks(gw, u)


def test_oversized_answer_is_refused_not_relayed(start_gateway: Callable, upstreams: list[FaultUpstream]) -> None:
    u = upstream(upstreams, "oversized")
    gw = gateway(start_gateway, [u.url], timeouts={"connect_s": 1, "first_byte_s": 30, "stream_idle_s": 30})
    r = post(gw)
    assert r.status_code == 502 and "larger" in r.json()["error"]["message"]
    assert_no_leaks(gw, u)


def test_circuit_breaker_opens_then_half_opens(start_gateway: Callable, upstreams: list[FaultUpstream]) -> None:
    flaky, good = upstream(upstreams, "http_500"), upstream(upstreams)
    gw = gateway(start_gateway, [flaky.url, good.url], breaker={"failure_threshold": 2, "open_s": 1.0, "max_open_s": 4})
    for _ in range(8):
        assert post(gw).status_code == 200
    hits_when_open = flaky.hits
    assert hits_when_open == 2, "the breaker opened after two failures and kept traffic away"
    metrics = httpx.get(f"{gw.url}/metrics").text
    assert f'specgate_endpoint_circuit_state{{endpoint="{flaky.url}",pool="p"}} 2.0' in metrics
    assert f'specgate_endpoint_circuit_opens_total{{endpoint="{flaky.url}",pool="p"}} 1.0' in metrics
    flaky.mode = "ok"  # it recovers
    time.sleep(1.1)
    for _ in range(8):
        assert post(gw).status_code == 200
    assert flaky.hits > hits_when_open, "a half-open trial went through and closed the circuit"
    assert gw.gateway.pools.endpoints()[0].breaker.state == "closed"
    assert_no_leaks(gw, flaky, good)


@pytest.mark.parametrize("where", ["StreamObserver", "GenerationHandler._stream"])
def test_a_failure_between_opening_the_upstream_stream_and_relaying_it_leaks_nothing(
    where: str, start_gateway: Callable, upstreams: list[FaultUpstream], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug anywhere after the upstream answered and before its stream is relayed: the client gets a 500, the
    upstream connection is closed (the engine aborts) and the endpoint's outstanding count goes back to 0."""
    from specgate.gateway import generation

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError(f"injected failure in {where}")

    async def broken_async(*args: object, **kwargs: object) -> None:
        await asyncio.sleep(0)
        raise RuntimeError(f"injected failure in {where}")

    up = upstream(upstreams, chunk_delay_s=0.05)
    gw = gateway(start_gateway, [up.url])
    if where == "StreamObserver":
        monkeypatch.setattr(generation, "StreamObserver", broken)
    else:
        monkeypatch.setattr(generation.GenerationHandler, "_stream", broken_async)
    r = post(gw, stream=True)
    assert r.status_code == 500 and r.json()["error"]["code"] == "internal_error"
    assert up.hits == 1
    assert_no_leaks(gw, up)


def test_scrapes_that_time_out_are_counted(start_gateway: Callable, upstreams: list[FaultUpstream]) -> None:
    # A busy engine's /metrics answering late: the controller gets no reading from it, and operators see why.
    up = upstream(upstreams, "slow_metrics", delay_s=1.0)
    gw = gateway(start_gateway, [up.url], scrape={"interval_s": 0.1, "timeout_s": 0.2})
    deadline = time.monotonic() + 10
    line = ""
    while not line:
        assert time.monotonic() < deadline, "no scrape failure counted"
        metrics = httpx.get(f"{gw.url}/metrics").text
        prefix = f'specgate_engine_scrape_failures_total{{endpoint="{up.url}",pool="p",reason="timeout"}}'
        line = next((x for x in metrics.splitlines() if x.startswith(prefix)), "")
        time.sleep(0.1)
    assert float(line.rsplit(" ", 1)[1]) >= 1
    assert post(gw).status_code == 200  # generation is not affected
