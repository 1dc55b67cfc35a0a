from __future__ import annotations

import pytest
from specgate.backends.shaping import client_k, shape_request

from specgate.errors import InvalidRequest


def test_cap_merges_with_client_xargs() -> None:
    body = {"vllm_xargs": {"foo": "bar", "num_speculative_tokens": 4}}
    assert shape_request(body, cap=1, ask_usage=False)
    assert body["vllm_xargs"] == {"foo": "bar", "num_speculative_tokens": 1}


def test_no_cap_strips_only_k() -> None:
    body = {"vllm_xargs": {"foo": 1, "num_speculative_tokens": 4}}
    assert shape_request(body, cap=None, ask_usage=False)
    assert body["vllm_xargs"] == {"foo": 1}
    body = {"vllm_xargs": {"num_speculative_tokens": 4}}
    shape_request(body, cap=None, ask_usage=False)
    assert "vllm_xargs" not in body
    assert not shape_request({"x": 1}, cap=None, ask_usage=False)


def test_schedule_is_the_gateways_alone() -> None:
    body = {"vllm_xargs": {"foo": 1, "specgate_k_schedule": "1:16", "num_speculative_tokens": 4}}
    assert shape_request(body, cap=None, ask_usage=False, schedule="1:4,24:1")
    assert body["vllm_xargs"] == {"foo": 1, "specgate_k_schedule": "1:4,24:1"}
    body = {"vllm_xargs": {"specgate_k_schedule": "1:16"}}
    assert shape_request(body, cap=None, ask_usage=False)  # a client's schedule never reaches the engine
    assert "vllm_xargs" not in body
    body = {"vllm_xargs": {"specgate_k_schedule": "1:16"}}
    shape_request(body, cap=2, ask_usage=False)
    assert body["vllm_xargs"] == {"num_speculative_tokens": 2}


def test_ask_usage_keeps_other_stream_options() -> None:
    body = {"stream_options": {"continuous_usage_stats": False}}
    shape_request(body, cap=None, ask_usage=True)
    assert body["stream_options"] == {"continuous_usage_stats": False, "include_usage": True}


@pytest.mark.parametrize(
    ("xargs", "k"),
    [(None, None), ({}, None), ({"num_speculative_tokens": 2}, 2), ({"num_speculative_tokens": "3"}, 3)],
)
def test_client_k(xargs: object, k: int | None) -> None:
    assert client_k({} if xargs is None else {"vllm_xargs": xargs}) == k


@pytest.mark.parametrize(
    "xargs",
    [
        "x",
        [1],
        {"num_speculative_tokens": -1},
        {"num_speculative_tokens": 17},
        {"num_speculative_tokens": "abc"},
        {"num_speculative_tokens": 1.5},
    ],
)
def test_client_k_malformed(xargs: object) -> None:
    with pytest.raises(InvalidRequest) as info:
        client_k({"vllm_xargs": xargs})
    assert info.value.param and info.value.param.startswith("vllm_xargs")
