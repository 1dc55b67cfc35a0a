"""Parse a vLLM server's Prometheus text (GET /metrics) into the numbers specgate uses.

Counters are summed over their labels (`model_name`, `engine`); speculation counters exist only when
the engine was started with speculation, so their presence tells whether it is configured and the
highest `position` label tells its max k.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

__all__ = [
    "ENGINE_SERIES",
    "EngineSnapshot",
    "SpecDelta",
    "StepDelta",
    "parse_vllm_metrics",
    "preemption_delta",
    "spec_delta",
    "step_delta",
]

_GAUGES = {
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:kv_cache_usage_perc": "kv_usage",
}
_SPEC_COUNTERS = {
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted_tokens",
}
_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
_ITL_BUCKETS = "vllm:inter_token_latency_seconds_bucket"
# Engine steps: one inter-token latency per running request per step (its sum is step time x batch), and one
# iteration per engine step. From their increments the controller fits step time against the batch the engine
# really ran (controllers/step_evidence.py).
_STEP_COUNTERS = {
    "vllm:inter_token_latency_seconds_sum": "itl_sum",
    "vllm:inter_token_latency_seconds_count": "itl_count",
    "vllm:iteration_tokens_total_count": "iterations",
}
# Requests the scheduler preempted (KV cache full): they give up their KV blocks and recompute later.
_PREEMPTIONS = "vllm:num_preemptions_total"
# The cache's size, as labels of an info gauge (num_gpu_blocks, block_size).
_CACHE_INFO = "vllm:cache_config_info"
# Every vLLM series specgate reads: the scraper above, and the dashboards (dashboards/build.py).
ENGINE_SERIES = frozenset(
    {*_GAUGES, *_SPEC_COUNTERS, _PER_POS, _ITL_BUCKETS, *_STEP_COUNTERS, _PREEMPTIONS, _CACHE_INFO}
)


@dataclass(slots=True)
class EngineSnapshot:
    running: float = 0.0
    waiting: float = 0.0
    kv_usage: float = 0.0
    # Speculation counters; all None when the engine runs without speculation.
    drafts: float | None = None
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    accepted_per_pos: dict[int, float] = field(default_factory=dict)
    # Step counters (None when the engine does not export them).
    itl_sum: float | None = None
    itl_count: float | None = None
    iterations: float | None = None
    preemptions: float | None = None
    # Token slots of the KV cache (blocks x block size); None when the engine does not say.
    kv_capacity_tokens: float | None = None
    # Mean tokens per verify step, as a gauge (SGLang's `spec_accept_length`; vLLM gives counters instead).
    accept_length: float | None = None

    @property
    def speculation_configured(self) -> bool:
        return self.drafts is not None

    @property
    def max_k(self) -> int:
        return max(self.accepted_per_pos) + 1 if self.accepted_per_pos else 0

    def restarted_since(self, prev: EngineSnapshot) -> bool:
        """The engine restarted between the two scrapes: a counter went down, or speculation came or went."""
        if self.speculation_configured != prev.speculation_configured or self.max_k != prev.max_k:
            return True
        pairs = (
            (prev.drafts, self.drafts),
            (prev.draft_tokens, self.draft_tokens),
            (prev.iterations, self.iterations),
            (prev.itl_count, self.itl_count),
            (prev.preemptions, self.preemptions),
        )
        return any(b is not None and a is not None and a < b for b, a in pairs)


def parse_vllm_metrics(text: str) -> EngineSnapshot:
    """Raises ValueError on text that is not Prometheus exposition format."""
    snap = EngineSnapshot()
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("vllm:"):
            continue
        for sample in family.samples:
            name = sample.name
            if name in _GAUGES:
                attr = _GAUGES[name]
                setattr(snap, attr, getattr(snap, attr) + sample.value)
            elif name in _SPEC_COUNTERS or name in _STEP_COUNTERS:
                attr = _SPEC_COUNTERS.get(name) or _STEP_COUNTERS[name]
                setattr(snap, attr, (getattr(snap, attr) or 0.0) + sample.value)
            elif name == _PREEMPTIONS:
                snap.preemptions = (snap.preemptions or 0.0) + sample.value
            elif name == _CACHE_INFO:
                snap.kv_capacity_tokens = _capacity(sample.labels) or snap.kv_capacity_tokens
            elif name == _PER_POS:
                try:
                    pos = int(sample.labels.get("position", ""))
                except ValueError:
                    continue
                snap.accepted_per_pos[pos] = snap.accepted_per_pos.get(pos, 0.0) + sample.value
    return snap


def _capacity(labels: dict[str, str]) -> float | None:
    try:
        blocks, size = int(labels.get("num_gpu_blocks", "")), int(labels.get("block_size", ""))
    except ValueError:
        return None
    return float(blocks * size) if blocks > 0 and size > 0 else None


@dataclass(frozen=True, slots=True)
class SpecDelta:
    """Speculation counter increments between two scrapes of one endpoint."""

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    accepted_per_pos: dict[int, float]
    reset: bool


def _inc(prev: float | None, cur: float | None) -> tuple[float, bool]:
    if cur is None:
        return 0.0, False
    if prev is None:
        return 0.0, False
    if cur < prev:
        # The engine restarted and its counters began again from zero.
        return cur, True
    return cur - prev, False


def preemption_delta(prev: EngineSnapshot | None, cur: EngineSnapshot) -> float:
    """Preemptions since the last scrape (0 without one; after a restart, the new count)."""
    return _inc(prev.preemptions if prev is not None else None, cur.preemptions)[0]


def spec_delta(prev: EngineSnapshot | None, cur: EngineSnapshot) -> SpecDelta | None:
    """None without a previous scrape or without speculation; a restart counts from zero."""
    if prev is None or not cur.speculation_configured:
        return None
    drafts, r1 = _inc(prev.drafts, cur.drafts)
    tokens, r2 = _inc(prev.draft_tokens, cur.draft_tokens)
    accepted, r3 = _inc(prev.accepted_tokens, cur.accepted_tokens)
    reset = r1 or r2 or r3
    per_pos = {}
    for pos, value in cur.accepted_per_pos.items():
        before = None if reset else prev.accepted_per_pos.get(pos, 0.0)
        per_pos[pos] = value if before is None else max(0.0, value - before)
    if reset:
        drafts, tokens, accepted = cur.drafts or 0.0, cur.draft_tokens or 0.0, cur.accepted_tokens or 0.0
    return SpecDelta(drafts, tokens, accepted, per_pos, reset)


@dataclass(frozen=True, slots=True)
class StepDelta:
    """Engine step counters' increments between two scrapes of one endpoint."""

    iterations: float
    request_steps: float
    itl_sum_s: float
    draft_tokens: float
    # Request-steps that drafted (spec_decode_num_drafts); None where the engine does not count them.
    drafts: float | None = None


def _grew(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None or after < before else after - before


def step_delta(prev: EngineSnapshot | None, cur: EngineSnapshot) -> StepDelta | None:
    """None without a previous scrape, without the counters, or across a restart (counters went down: the interval
    is not one the engine ran through)."""
    if prev is None:
        return None
    iterations = _grew(prev.iterations, cur.iterations)
    request_steps = _grew(prev.itl_count, cur.itl_count)
    itl = _grew(prev.itl_sum, cur.itl_sum)
    drafted = (
        0.0 if prev.draft_tokens is None and cur.draft_tokens is None else _grew(prev.draft_tokens, cur.draft_tokens)
    )
    if iterations is None or request_steps is None or itl is None or drafted is None:
        return None
    drafts = 0.0 if prev.drafts is None and cur.drafts is None and not drafted else _grew(prev.drafts, cur.drafts)
    return StepDelta(iterations, request_steps, itl, drafted, drafts)
