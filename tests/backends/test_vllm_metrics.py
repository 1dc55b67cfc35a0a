from __future__ import annotations

import pytest
from specgate.backends.vllm_metrics import parse_vllm_metrics

SAMPLE = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# TYPE vllm:spec_decode_num_drafts counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0
# TYPE vllm:spec_decode_num_draft_tokens counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 40.0
# TYPE vllm:spec_decode_num_accepted_tokens counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 25.0
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 9.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 7.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 5.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="3"} 4.0
# TYPE other_metric gauge
other_metric 7
"""


def test_parse_sample() -> None:
    s = parse_vllm_metrics(SAMPLE)
    assert (s.running, s.waiting, s.kv_usage) == (3.0, 1.0, 0.25)
    assert (s.drafts, s.draft_tokens, s.accepted_tokens) == (10.0, 40.0, 25.0)
    assert s.accepted_per_pos == {0: 9.0, 1: 7.0, 2: 5.0, 3: 4.0}
    assert s.speculation_configured and s.max_k == 4


def test_without_speculation() -> None:
    s = parse_vllm_metrics('vllm:num_requests_running{engine="0"} 2\n')
    assert s.running == 2 and not s.speculation_configured and s.max_k == 0


def test_garbage_raises_value_error() -> None:
    with pytest.raises(ValueError):
        parse_vllm_metrics("this is { not prometheus\n")


def test_spec_delta_and_restart() -> None:
    from specgate.backends.vllm_metrics import EngineSnapshot, spec_delta

    a = EngineSnapshot(drafts=10, draft_tokens=40, accepted_tokens=20, accepted_per_pos={0: 8, 1: 6})
    b = EngineSnapshot(drafts=15, draft_tokens=60, accepted_tokens=26, accepted_per_pos={0: 11, 1: 8})
    d = spec_delta(a, b)
    assert d is not None and (d.drafts, d.draft_tokens, d.accepted_tokens, d.reset) == (5, 20, 6, False)
    assert d.accepted_per_pos == {0: 3, 1: 2}
    restarted = EngineSnapshot(drafts=2, draft_tokens=8, accepted_tokens=3, accepted_per_pos={0: 2, 1: 1})
    r = spec_delta(b, restarted)
    assert r is not None and r.reset and (r.drafts, r.draft_tokens, r.accepted_tokens) == (2, 8, 3)
    assert r.accepted_per_pos == {0: 2, 1: 1}
    assert spec_delta(None, b) is None
    assert spec_delta(a, EngineSnapshot()) is None
