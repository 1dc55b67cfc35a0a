"""Fuzzing the public API: schemathesis from the gateway's own OpenAPI description, and hypothesis strategies for
bodies and bytes no schema would produce. Never a 500, every error in the OpenAI shape.

CI runs a short form. The long form (documented in docs/reliability.md):
    SPECGATE_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest -q tests/gateway/test_fuzz.py
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specgate.config import validate_config
from tests.conftest import GatewayServer, free_port
from tests.fault_upstream import FaultUpstream

EXAMPLES = int(os.environ.get("SPECGATE_FUZZ_EXAMPLES", "150"))
MODEL = "m"
_UPSTREAM = FaultUpstream("ok")


def _config(port: int) -> Any:
    return validate_config(
        {
            "server": {"port": port, "max_body_bytes": 256 * 1024},
            "pools": [{"name": "p", "model": MODEL, "endpoints": [_UPSTREAM.url]}],
            "controller": {"tick_s": 3600},
            "health": {"interval_s": 3600},
            "logging": {"level": "error"},
        }
    )


def check_answer(status: int, body: bytes, content_type: str) -> None:
    assert status != 500 and status < 600, (status, body[:300])
    if status >= 400:
        err = orjson.loads(body)["error"]
        assert isinstance(err["message"], str) and err["message"]
        assert isinstance(err["type"], str) and err["type"]
        assert err["param"] is None or isinstance(err["param"], str)
        assert err["code"] is None or isinstance(err["code"], str)
    elif "json" in content_type:
        orjson.loads(body)


# -- schemathesis: cases generated from /openapi.json (valid and invalid ones) -----------------------------------

# A real server for the whole module (schemathesis loads the schema at import time; its in-process ASGI calls would
# run the app's lifespan around every case).
_SERVER = GatewayServer(_config(free_port())).start()
schema = schemathesis.openapi.from_url(f"{_SERVER.url}/openapi.json")


@pytest.fixture(scope="module", autouse=True)
def _stop_servers() -> Iterator[None]:
    yield
    _SERVER.stop()
    _UPSTREAM.close()


@schema.include(method="POST").parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_schema_driven_cases(case: Any) -> None:
    response = case.call(base_url=_SERVER.url)
    check_answer(response.status_code, response.content, response.headers.get("content-type", ""))


# -- hypothesis: bodies and bytes outside any schema -------------------------------------------------------------


@pytest.fixture(scope="module")
def gateway() -> Iterator[GatewayServer]:
    server = GatewayServer(_config(free_port())).start()
    yield server
    server.stop()


json_leaf = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
known = {
    "model": st.sampled_from([MODEL, "", "unknown"]) | json_value,
    "messages": st.lists(
        st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "x"]), "content": json_value}), max_size=3
    )
    | json_value,
    "prompt": st.text(max_size=50) | st.lists(st.text(max_size=10), max_size=3) | json_value,
    "max_tokens": st.integers(-5, 2**64) | json_value,
    "n": st.integers(-2, 300) | json_value,
    "stream": st.booleans() | json_value,
    "stream_options": st.fixed_dictionaries({"include_usage": json_value}) | json_value,
    "temperature": st.floats(-10, 10) | json_value,
    "vllm_xargs": st.fixed_dictionaries({"num_speculative_tokens": st.integers(-3, 99) | json_value}) | json_value,
}
bodies = st.fixed_dictionaries({}, optional=known).flatmap(
    lambda d: st.dictionaries(st.text(max_size=10), json_value, max_size=3).map(lambda extra: {**extra, **d})
)
raw_bodies = st.one_of(
    st.binary(max_size=200),  # includes invalid UTF-8
    st.integers(1, 3000).map(lambda depth: b"[" * depth + b"]" * depth),  # deep nesting
    st.integers(1, 3000).map(lambda depth: b'{"model": "m", "prompt": ' + b"[" * depth + b"]" * depth + b"}"),
    st.just(b'{"model": "m", "prompt": "x", "max_tokens": 1e999}'),
    st.just(b'{"model": "m", "prompt": "\\ud800"}'),  # lone surrogate
)


@given(path=st.sampled_from(["/v1/chat/completions", "/v1/completions"]), body=bodies)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_generated_json_bodies(gateway: GatewayServer, path: str, body: dict[str, Any]) -> None:
    r = httpx.post(
        f"{gateway.url}{path}",
        content=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        timeout=30,
    )
    check_answer(r.status_code, r.content, r.headers.get("content-type", ""))


@given(path=st.sampled_from(["/v1/chat/completions", "/v1/completions"]), raw=raw_bodies)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_raw_bytes(gateway: GatewayServer, path: str, raw: bytes) -> None:
    r = httpx.post(f"{gateway.url}{path}", content=raw, headers={"content-type": "application/json"}, timeout=30)
    check_answer(r.status_code, r.content, r.headers.get("content-type", ""))


def test_oversized_and_wrong_methods(gateway: GatewayServer) -> None:
    big = b'{"model": "m", "prompt": "' + b"x" * (300 * 1024) + b'"}'
    r = httpx.post(f"{gateway.url}/v1/completions", content=big)
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
    r = httpx.get(f"{gateway.url}/v1/completions")
    assert r.status_code == 405 and r.json()["error"]["type"] == "invalid_request_error"
    r = httpx.post(f"{gateway.url}/v1/nothing", json={})
    assert r.status_code == 404 and "error" in r.json()
