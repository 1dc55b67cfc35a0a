"""SGLang pools (backends/sglang.py) against a FAKE SGLang server (tests/sglang_fake.py: no SGLang runs here) that
answers with the shapes SGLang 0.5.5's source produces."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from specgate.backends.sglang import parse_sglang_metrics

from specgate.config import ConfigError, validate_config
from tests.conftest import GatewayServer, free_port
from tests.prom import sample
from tests.sglang_fake import FakeSGLang


@pytest.fixture
def fake() -> Iterator[FakeSGLang]:
    server = FakeSGLang(free_port())
    yield server
    server.close()


def _pool(fake: FakeSGLang, max_k: int = 3) -> dict[str, object]:
    return {
        "name": "sgl",
        "model": "m",
        "engine": "sglang",
        "endpoints": [fake.url],
        "speculation": {"method": "eagle3", "max_k": max_k},
    }


def test_load_and_acceptance_are_read_from_rank_zero(fake: FakeSGLang) -> None:
    snap = parse_sglang_metrics(httpx.get(f"{fake.url}/metrics").text)
    # Tensor-parallel ranks repeat the same numbers: counted once.
    assert (snap.running, snap.waiting, snap.kv_usage, snap.accept_length) == (3.0, 2.0, 0.12, 2.71)
    assert not snap.speculation_configured  # no counters: acceptance is a gauge
    assert parse_sglang_metrics('vllm:num_requests_running{engine="0"} 2\n').running == 0


def test_an_sglang_pool_is_discovered_relayed_and_picked_by_its_load(
    fake: FakeSGLang, start_gateway: Callable[..., GatewayServer]
) -> None:
    gw = start_gateway([_pool(fake)], scrape={"interval_s": 0.2})
    (ep,) = httpx.get(f"{gw.url}/admin/pools", timeout=10).json()["pools"]["sgl"]["endpoints"]
    caps = ep["capabilities"]
    assert (caps["engine"], caps["version"], caps["models"]) == ("sglang", "0.5.5", ["m"])
    assert (caps["speculation"], caps["max_k"], caps["plugin"], caps["per_request_metrics"]) == (True, 3, False, False)
    assert ep["mismatches"] == [] and caps["error"] is None and ep["acceptance_from"] == "pool_gauge"
    r = httpx.post(f"{gw.url}/v1/completions", json={"model": "m", "prompt": "hi", "max_tokens": 1}, timeout=10)
    assert r.status_code == 200 and r.json()["choices"][0]["text"] == " fake"
    assert r.headers["x-specgate-k"] == "3" and fake.hits == 1  # its own k: no cap is sent or claimed
    fake.running, fake.accept_length = 7.0, 1.9
    deadline = time.monotonic() + 10
    while (snap := gw.gateway.pools.endpoints()[0].snapshot) is None or snap.running != 7.0:
        assert time.monotonic() < deadline, "the scrape never read the engine's load"
        time.sleep(0.05)
    text = httpx.get(f"{gw.url}/metrics", timeout=10).text
    assert sample(text, "specgate_engine_spec_accept_length", pool="sgl", endpoint=fake.url) == 1.9


def test_a_config_the_engine_contradicts_is_named(start_gateway: Callable[..., GatewayServer]) -> None:
    newer = FakeSGLang(free_port(), steps=5, new_info_path=True)  # the 2026 /server_info path
    try:
        gw = start_gateway([_pool(newer, max_k=3)])
        ready = httpx.get(f"{gw.url}/readyz", timeout=10).json()
        assert ready["mismatches"][newer.url] == ["the engine's max k is 5; the config says 3"]
    finally:
        newer.close()


@pytest.mark.parametrize(
    ("speculation", "message"),
    [
        ({"method": "eagle3", "max_k": 3, "per_request_k": True}, "SGLang takes no per-request k"),
        ({"method": "eagle3", "max_k": 3, "acceptance_from": "counters"}, "neither per-request figures nor counters"),
    ],
)
def test_what_sglang_cannot_do_is_a_config_error(speculation: dict[str, object], message: str) -> None:
    pool = {"name": "s", "model": "m", "engine": "sglang", "endpoints": ["http://e:30000"], "speculation": speculation}
    with pytest.raises(ConfigError, match=message):
        validate_config({"pools": [pool]})
