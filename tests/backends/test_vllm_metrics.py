from __future__ import annotations

from dataclasses import replace

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
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.01",model_name="m"} 100.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 120.0
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 120.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} 1.5
# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_bucket{engine="0",le="1.0",model_name="m"} 5.0
vllm:iteration_tokens_total_bucket{engine="0",le="+Inf",model_name="m"} 40.0
vllm:iteration_tokens_total_count{engine="0",model_name="m"} 40.0
vllm:iteration_tokens_total_sum{engine="0",model_name="m"} 900.0
# TYPE other_metric gauge
other_metric 7
"""


def test_parse_sample() -> None:
    s = parse_vllm_metrics(SAMPLE)
    assert (s.running, s.waiting, s.kv_usage) == (3.0, 1.0, 0.25)
    assert (s.drafts, s.draft_tokens, s.accepted_tokens) == (10.0, 40.0, 25.0)
    assert s.accepted_per_pos == {0: 9.0, 1: 7.0, 2: 5.0, 3: 4.0}
    assert s.speculation_configured and s.max_k == 4
    assert (s.itl_sum, s.itl_count, s.iterations) == (1.5, 120.0, 40.0)


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


def test_step_delta_and_restart() -> None:
    from specgate.backends.vllm_metrics import EngineSnapshot, StepDelta, step_delta

    a = EngineSnapshot(draft_tokens=40, itl_sum=1.5, itl_count=120, iterations=40)
    b = EngineSnapshot(draft_tokens=240, itl_sum=3.5, itl_count=220, iterations=60)
    assert step_delta(a, b) == StepDelta(20, 100, 2.0, 200, None)  # drafts not counted: unknown
    counted = step_delta(replace(a, drafts=10), replace(b, drafts=60))
    assert counted == StepDelta(20, 100, 2.0, 200, 50)  # request-steps that drafted
    assert step_delta(None, b) is None
    assert step_delta(b, a) is None  # counters went down: a restart, not an interval
    assert step_delta(EngineSnapshot(), b) is None  # an engine without these counters
    plain = step_delta(
        EngineSnapshot(itl_sum=0, itl_count=0, iterations=0), EngineSnapshot(itl_sum=1, itl_count=9, iterations=3)
    )
    assert plain == StepDelta(3, 9, 1, 0, 0)  # no speculation: no drafts


def test_kv_cache_size_and_preemptions() -> None:
    """The cache size comes from the labels of vLLM's `cache_config_info` gauge; preemptions are a counter whose
    restart counts from zero. Without them: unknown, not zero."""
    from specgate.backends.vllm_metrics import preemption_delta

    text = (
        "# TYPE vllm:cache_config_info gauge\n"
        'vllm:cache_config_info{block_size="128",engine="0",num_gpu_blocks="24",cache_dtype="auto"} 1.0\n'
        "# TYPE vllm:num_preemptions counter\n"
        'vllm:num_preemptions_total{engine="0",model_name="m"} 7.0\n'
    )
    snap = parse_vllm_metrics(text)
    assert snap.kv_capacity_tokens == 24 * 128 and snap.preemptions == 7.0
    later = parse_vllm_metrics(text.replace("} 7.0", "} 10.0"))
    assert preemption_delta(snap, later) == 3.0 and preemption_delta(None, later) == 0.0
    assert preemption_delta(later, snap) == 7.0  # restarted: the new count
    bare = parse_vllm_metrics('vllm:cache_config_info{block_size="x",num_gpu_blocks="24"} 1\n')
    assert bare.kv_capacity_tokens is None and bare.preemptions is None


def test_restart_is_seen_from_counters_that_went_down_or_speculation_that_changed() -> None:
    from specgate.backends.vllm_metrics import EngineSnapshot

    a = EngineSnapshot(drafts=10, draft_tokens=40, iterations=40, itl_count=120, accepted_per_pos={0: 8, 1: 6})
    grown = EngineSnapshot(drafts=12, draft_tokens=48, iterations=45, itl_count=130, accepted_per_pos={0: 9, 1: 7})
    assert not grown.restarted_since(a)
    assert EngineSnapshot(
        drafts=1, draft_tokens=4, iterations=2, itl_count=3, accepted_per_pos={0: 1, 1: 0}
    ).restarted_since(a)
    assert EngineSnapshot(iterations=50, itl_count=200).restarted_since(a)  # came back without speculation
    wider = EngineSnapshot(
        drafts=12, draft_tokens=48, iterations=45, itl_count=130, accepted_per_pos={0: 9, 1: 7, 2: 0}
    )
    assert wider.restarted_since(a)  # another max k
