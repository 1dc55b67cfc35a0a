"""Relay, failover and retry logic on the in-memory transport (no sockets). The same paths on real sockets and a
real engine: tests/gateway/test_faults.py, tests/backends/test_upstream_http.py, tests/gateway/test_gateway_vllm.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import orjson
import pytest
from specgate.backends.pool import PoolSet
from specgate.backends.transport import MockAnswer, MockRequest, MockUpstream
from specgate.backends.upstream_http import ConnectFailed, UpstreamFailure
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.relay import Relay, RelayResult, StreamRelay
from specgate.runtime.requests import parse_body

from specgate.config import validate_config
from specgate.errors import NoHealthyEndpoint, UpstreamError, UpstreamHTTPError, UpstreamTimeout

A, B, C = "http://a:1", "http://b:1", "http://c:1"
OK_BODY = b'{"id":"x","choices":[{"message":{"content":"hi"}}]}'
SSE_OK = [b'data: {"choices":[{"delta":{"content":"h"}}]}\n\n', b"data: [DONE]\n\n"]


def setup(
    answer: Callable[[MockRequest], MockAnswer], endpoints: tuple[str, ...] = (A, B), attempts: int = 2
) -> tuple[Relay, PoolSet, MockUpstream, GatewayMetrics]:
    config = validate_config(
        {
            "pools": [{"name": "p", "model": "m", "endpoints": list(endpoints)}],
            "retries": {"max_attempts": attempts},
            "timeouts": {"first_byte_s": 1, "stream_idle_s": 1},
        }
    )

    async def handler(request: MockRequest) -> MockAnswer:
        return answer(request)

    metrics = GatewayMetrics()
    upstream = MockUpstream(handler)
    return Relay(config, metrics, upstream), PoolSet(config), upstream, metrics


def chat(stream: bool = False) -> object:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    return parse_body(orjson.dumps(body), "chat")


def by_endpoint(**answers: Callable[[], MockAnswer]) -> Callable[[MockRequest], MockAnswer]:
    def answer(request: MockRequest) -> MockAnswer:
        return answers[request.base_url.split("//")[1].split(":")[0]]()

    return answer


def fail(exc: BaseException) -> Callable[[], MockAnswer]:
    def raise_it() -> MockAnswer:
        raise exc

    return raise_it


def outstanding(pools: PoolSet) -> list[int]:
    return [ep.outstanding for ep in pools.endpoints()]


async def test_answer_relayed_and_endpoint_released() -> None:
    relay, pools, upstream, _ = setup(lambda r: MockAnswer(200, [OK_BODY]))
    result = await relay.send(chat(), pools.pools[0], {"x-request-id": "r1"})
    assert isinstance(result, RelayResult)
    assert (result.status, result.body) == (200, OK_BODY)
    assert upstream.requests[0].path == "/v1/chat/completions"
    assert upstream.requests[0].headers["x-request-id"] == "r1"
    assert orjson.loads(upstream.requests[0].body)["model"] == "m"
    assert outstanding(pools) == [0, 0]
    assert all(a.closed and not a.aborted for a in upstream.answers)


def first_fails(first: Callable[[], MockAnswer]) -> Callable[[MockRequest], MockAnswer]:
    calls = []

    def answer(request: MockRequest) -> MockAnswer:
        calls.append(request)
        return first() if len(calls) == 1 else MockAnswer(200, [OK_BODY])

    return answer


@pytest.mark.parametrize(
    ("first", "reason"),
    [
        (fail(ConnectFailed("refused")), "connect"),
        (lambda: MockAnswer(502, [b'{"error": {"message": "boom"}}']), "http_5xx"),
        (fail(UpstreamFailure("reset")), "protocol"),
    ],
)
async def test_failure_before_the_answer_fails_over_to_another_endpoint(
    first: Callable[[], MockAnswer], reason: str
) -> None:
    relay, pools, upstream, metrics = setup(first_fails(first))
    result = await relay.send(chat(), pools.pools[0], {})
    tried = [r.base_url for r in upstream.requests]
    assert len(tried) == 2 and set(tried) == {A, B}
    assert isinstance(result, RelayResult) and result.endpoint.url == tried[1] and result.body == OK_BODY
    assert metrics.upstream_errors.labels("p", reason)._value.get() == 1
    assert metrics.retries.labels("p")._value.get() == 1
    assert outstanding(pools) == [0, 0]
    assert all(a.closed for a in upstream.answers)


async def test_connect_failure_ejects_the_endpoint() -> None:
    relay, pools, _, _ = setup(by_endpoint(a=fail(ConnectFailed("refused")), b=lambda: MockAnswer(200, [OK_BODY])))
    for _ in range(4):
        result = await relay.send(chat(), pools.pools[0], {})
        assert isinstance(result, RelayResult) and result.endpoint.url == B
    assert pools.pools[0].endpoints[0].healthy is False


async def test_client_error_is_not_retried() -> None:
    relay, pools, upstream, _ = setup(lambda r: MockAnswer(400, [b'{"error": {"message": "bad", "code": 400}}']))
    with pytest.raises(UpstreamHTTPError, match="bad") as info:
        await relay.send(chat(), pools.pools[0], {})
    assert info.value.status == 400
    assert len(upstream.requests) == 1
    assert pools.pools[0].endpoints[0].breaker.state == "closed"
    assert outstanding(pools) == [0, 0]


async def test_attempts_are_bounded_and_the_last_error_is_reported() -> None:
    relay, pools, upstream, _ = setup(lambda r: fail(TimeoutError())(), endpoints=(A, B, C), attempts=2)
    with pytest.raises(UpstreamTimeout):
        await relay.send(chat(stream=True), pools.pools[0], {})  # a stream's first event late: failover
    assert len(upstream.requests) == 2
    assert len({r.base_url for r in upstream.requests}) == 2  # never the same endpoint twice
    assert outstanding(pools) == [0, 0, 0]


async def test_a_non_streaming_timeout_is_not_retried() -> None:
    """No answer within total_s: the engine may have been generating all along; another try would run it twice."""
    relay, pools, upstream, metrics = setup(lambda r: fail(TimeoutError())(), endpoints=(A, B), attempts=3)
    with pytest.raises(UpstreamTimeout):
        await relay.send(chat(), pools.pools[0], {})
    assert len(upstream.requests) == 1
    assert metrics.upstream_errors.labels("p", "timeout")._value.get() == 1
    assert outstanding(pools) == [0, 0]


async def test_no_endpoint_left_is_503() -> None:
    relay, pools, upstream, _ = setup(lambda r: MockAnswer(200, [OK_BODY]))
    for ep in pools.endpoints():
        ep.healthy = False
    with pytest.raises(NoHealthyEndpoint) as info:
        await relay.send(chat(), pools.pools[0], {})
    assert info.value.status == 503 and upstream.requests == []


async def test_stream_that_ends_before_any_event_fails_over() -> None:
    calls: list[MockRequest] = []

    def answer(request: MockRequest) -> MockAnswer:
        calls.append(request)
        return MockAnswer(200, [] if len(calls) == 1 else SSE_OK)

    relay, pools, upstream, _ = setup(answer)
    stream = await relay.send(chat(stream=True), pools.pools[0], {})
    assert isinstance(stream, StreamRelay) and stream.endpoint.url == calls[1].base_url != calls[0].base_url
    events = []
    while (batch := await stream.next_events()) is not None:
        events += batch
    stream.close()
    assert events == SSE_OK and stream.outcome == "ok"
    assert len(upstream.requests) == 2
    assert outstanding(pools) == [0, 0]


@pytest.mark.parametrize(
    ("tail", "outcome"),
    [(UpstreamFailure("reset"), "stream"), (TimeoutError(), "stream"), (b"", "truncated")],
)
async def test_failure_after_the_first_event_is_reported_in_band_and_not_retried(
    tail: bytes | BaseException, outcome: str
) -> None:
    chunks: list[bytes | BaseException] = [SSE_OK[0]]
    if tail:
        chunks.append(tail)
    relay, pools, upstream, _ = setup(lambda r: MockAnswer(200, chunks))
    stream = await relay.send(chat(stream=True), pools.pools[0], {})
    assert isinstance(stream, StreamRelay)
    events = []
    while (batch := await stream.next_events()) is not None:
        events += batch
    stream.close()
    assert events[0] == SSE_OK[0]
    error = orjson.loads(events[-1].removeprefix(b"data: "))["error"]
    assert error["type"] == "api_error"
    assert stream.outcome == outcome
    assert len(upstream.requests) == 1
    assert outstanding(pools) == [0, 0]


class _StalledBody(MockAnswer):
    """An answer whose head came but whose body never does (a long generation)."""

    async def read(self, limit: int, idle_s: float) -> bytes:
        await asyncio.Event().wait()
        return b""


async def test_cancelled_send_closes_the_answer_and_releases_the_endpoint() -> None:
    answered = asyncio.Event()

    def answer(request: MockRequest) -> MockAnswer:
        answered.set()
        return _StalledBody(200, [OK_BODY])

    relay, pools, upstream, _ = setup(answer)
    task = asyncio.create_task(relay.send(chat(), pools.pools[0], {}))
    await answered.wait()
    await asyncio.sleep(0)
    assert sum(outstanding(pools)) == 1
    task.cancel()  # the client left
    with pytest.raises(asyncio.CancelledError):
        await task
    assert upstream.answers[0].closed and upstream.answers[0].aborted
    assert outstanding(pools) == [0, 0]


async def test_oversized_answer_is_refused() -> None:
    relay, pools, _, _ = setup(lambda r: MockAnswer(200, [b"x" * (64 * 1024 * 1024 + 1)]))
    with pytest.raises(UpstreamError, match="larger"):
        await relay.send(chat(), pools.pools[0], {})
    assert outstanding(pools) == [0, 0]


async def test_a_stale_connection_is_retried_once_on_the_same_endpoint_and_counted() -> None:
    from specgate.backends.upstream_http import StaleConnection

    from tests.prom import sample

    calls: list[str] = []

    def answer(request: MockRequest) -> MockAnswer:
        calls.append(request.base_url)
        if len(calls) == 1:
            raise StaleConnection("closed as idle")
        return MockAnswer(200, [OK_BODY])

    relay, pools, _, metrics = setup(answer, endpoints=(A,))
    result = await relay.send(chat(), pools.pools[0], {})
    assert isinstance(result, RelayResult) and calls == [A, A]
    from prometheus_client import generate_latest

    text = generate_latest(metrics.registry).decode()
    assert sample(text, "specgate_upstream_errors_total", pool="p", reason="stale_connection") == 1
    assert sample(text, "specgate_upstream_retries_total", pool="p") == 1
    assert pools.pools[0].endpoints[0].breaker.state == "closed"

    # Twice in a row: the second is a failure like any other (no endless replays), reported to the client.
    calls.clear()

    def always_stale(request: MockRequest) -> MockAnswer:
        calls.append(request.base_url)
        raise StaleConnection("closed as idle")

    relay, pools, _, _ = setup(always_stale, endpoints=(A,), attempts=5)
    with pytest.raises(UpstreamError):
        await relay.send(chat(), pools.pools[0], {})
    assert calls == [A, A]


async def test_the_engines_retry_after_reaches_the_client() -> None:
    relay, pools, _, _ = setup(lambda r: MockAnswer(429, [b'{"error": {"message": "slow down"}}'], retry_after="12"))
    with pytest.raises(UpstreamHTTPError) as err:
        await relay.send(chat(), pools.pools[0], {})
    assert err.value.status == 429 and err.value.headers()["retry-after"] == "12"
    relay, pools, _, _ = setup(lambda r: MockAnswer(503, [b"{}"], retry_after="30"), endpoints=(A,))
    with pytest.raises(NoHealthyEndpoint) as busy:
        await relay.send(chat(), pools.pools[0], {})
    assert busy.value.headers()["retry-after"] == "30"


async def test_a_busy_endpoint_at_its_connection_cap_hands_the_request_to_another() -> None:
    from specgate.backends.upstream_http import ConnectionLimit

    relay, pools, upstream, metrics = setup(
        by_endpoint(a=fail(ConnectionLimit("all 2 busy")), b=lambda: MockAnswer(200, [OK_BODY])), attempts=2
    )
    for _ in range(4):
        result = await relay.send(chat(), pools.pools[0], {})
        assert isinstance(result, RelayResult) and result.endpoint.url == B
    tried_a = sum(1 for r in upstream.requests if r.base_url == A)
    assert tried_a >= 1  # the picker rotates: A was tried first at least once
    assert metrics.upstream_errors.labels("p", "connection_limit")._value.get() == tried_a
    a = pools.pools[0].endpoints[0]
    assert a.healthy is not False and a.breaker.state == "closed"  # busy, not broken: never ejected
