"""Parse a vLLM server's Prometheus text (GET /metrics) into the numbers specgate uses.

Counters are summed over their labels (`model_name`, `engine`); speculation counters exist only when
the engine was started with speculation, so their presence tells whether it is configured and the
highest `position` label tells its max k.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["ENGINE_SERIES", "EngineSnapshot", "SpecDelta", "parse_vllm_metrics", "spec_delta"]

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
# Every vLLM series specgate reads: the scraper above, and the dashboards (dashboards/build.py).
ENGINE_SERIES = frozenset({*_GAUGES, *_SPEC_COUNTERS, _PER_POS, _ITL_BUCKETS})


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

    @property
    def speculation_configured(self) -> bool:
        return self.drafts is not None

    @property
    def max_k(self) -> int:
        return max(self.accepted_per_pos) + 1 if self.accepted_per_pos else 0


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
            elif name in _SPEC_COUNTERS:
                attr = _SPEC_COUNTERS[name]
                setattr(snap, attr, (getattr(snap, attr) or 0.0) + sample.value)
            elif name == _PER_POS:
                try:
                    pos = int(sample.labels.get("position", ""))
                except ValueError:
                    continue
                snap.accepted_per_pos[pos] = snap.accepted_per_pos.get(pos, 0.0) + sample.value
    return snap


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
