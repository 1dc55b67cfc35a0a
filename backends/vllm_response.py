"""Read what vLLM reports about a finished request, defensively (the shape is marked experimental).

`metrics.speculative_decoding` (server flag `--per-request-spec-decode-metrics`) rides on non-streaming
responses and on the final usage chunk of a stream (`choices: []`). Only for n == 1. At the `detailed` level it
carries the drafts and acceptances of every verify step (`per_step_drafted`, `per_step_accepted`): under a k
schedule the drafts per step vary, and the acceptance histogram alone cannot say at which k each step ran.
"""

from __future__ import annotations

from typing import Any

from specgate.controllers.observations import SpecStats

__all__ = ["is_usage_event", "parse_spec_metrics", "parse_usage"]


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def parse_spec_metrics(obj: Any) -> SpecStats | None:
    """SpecStats from a response/chunk object, or None when absent or inconsistent."""
    if not isinstance(obj, dict):
        return None
    metrics = obj.get("metrics")
    sd = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
    if not isinstance(sd, dict):
        return None
    drafted = _count(sd.get("num_draft_tokens"))
    accepted = _count(sd.get("num_accepted_draft_tokens"))
    steps = _count(sd.get("num_spec_steps"))
    if drafted is None or accepted is None or steps is None or accepted > drafted:
        return None
    raw_hist = sd.get("acceptance_histogram")
    hist: tuple[int, ...] = ()
    if isinstance(raw_hist, list):
        counts = [c for c in map(_count, raw_hist) if c is not None]
        if len(counts) == len(raw_hist) and sum(counts) == steps:
            hist = tuple(counts)
    return SpecStats(drafted, accepted, steps, hist, _by_k(sd.get("per_step_drafted"), sd.get("per_step_accepted")))


def _by_k(drafted: Any, accepted: Any) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """Per number of drafts in a step, the histogram of drafts accepted: ((k, (steps with 0, 1, ..., k accepted)),
    ...). Empty when the arrays are absent or do not agree (different lengths, non-counts, accepted > drafted).
    vLLM records only steps that carried drafts; a 0 in `per_step_drafted` is the plugin's record of a step whose
    drafter proposed nothing (backends/vllm_scheduler.py): those steps are `(0, (n,))`."""
    if not isinstance(drafted, list) or not isinstance(accepted, list) or len(drafted) != len(accepted):
        return ()
    hists: dict[int, list[int]] = {}
    for d_raw, a_raw in zip(drafted, accepted, strict=True):
        d, a = _count(d_raw), _count(a_raw)
        if d is None or a is None or a > d:
            return ()
        hists.setdefault(d, [0] * (d + 1))[a] += 1
    return tuple(sorted((k, tuple(h)) for k, h in hists.items()))


def parse_usage(obj: Any) -> tuple[int, int]:
    """(prompt_tokens, completion_tokens); zeros when missing."""
    usage = obj.get("usage") if isinstance(obj, dict) else None
    if not isinstance(usage, dict):
        return 0, 0
    return _count(usage.get("prompt_tokens")) or 0, _count(usage.get("completion_tokens")) or 0


def is_usage_event(data: bytes) -> bool:
    """Cheap pre-check for the final usage chunk, so ordinary chunks are never parsed."""
    return b'"usage"' in data and b'"choices":[]' in data
