"""Step time evidence from the engine's own counters, over a scrape interval. Pure.

The step-time model (controllers/cost_model.py) was fitted from each finished request: its end-to-end time over its
steps, against the batch at its dispatch and the pool's mean k. Those regressors are noisy (the batch moves during
a request; under per-step schedules so does k), and noise in a regressor flattens a least-squares slope: measured
in the simulator, the fit put the per-token cost at about half the truth and the intercept 45% high, so the
controller kept drafting past the knee (docs/controller.md). An engine's counters give the same quantities averaged
over every step of an interval:

- `vllm:inter_token_latency_seconds`: one sample per running request per step, the time since its last token. Its
  sum over its count is the step time, weighted by batch size; its count is the request-steps run.
- `vllm:iteration_tokens_total` count: engine steps. request-steps / steps = mean batch.
- `vllm:spec_decode_num_draft_tokens`: drafts verified. drafts / request-steps = mean k per request per step.
- `vllm:spec_decode_num_drafts`: request-steps that drafted. Where the schedule drafts nothing at the interval's
  batch, these are the explorers (and any request dispatched with its own k), and each step one of them is in runs
  the drafter for the whole batch: the drafter ran in about min(1, drafts / steps) of the steps (they seldom
  overlap), at their mean k. Measured in the simulator (H100 profile, batch 75-165, one explorer at a time): samples
  that counted those steps as draft-free sat 15% above the true step time, and the fit took that for a steep slope.
"""

from __future__ import annotations

from specgate.controllers.cost_model import StepSample

__all__ = ["MIN_REQUEST_STEPS", "interval_sample"]

# Fewer request-steps than this in an interval make a noisy mean (a few long prefills dominate it): skipped.
MIN_REQUEST_STEPS = 50


def interval_sample(
    iterations: float,
    request_steps: float,
    itl_sum_s: float,
    draft_tokens: float,
    kmax: float,
    drafts: float | None = None,
) -> StepSample | None:
    """One step-time sample for an interval, or None when it ran too little to say. `kmax`: the largest k the
    schedules give at the interval's mean batch; `drafts`: request-steps that drafted (None where the engine does
    not count them: the schedule's kmax is taken for every step)."""
    if iterations <= 0 or request_steps < MIN_REQUEST_STEPS or itl_sum_s <= 0:
        return None
    batch = max(1.0, request_steps / iterations)
    kbar = max(0.0, draft_tokens / request_steps)
    kmax = max(0.0, kmax)
    step_s = itl_sum_s / request_steps
    if drafts is None or kmax > 0 or drafts <= 0 or draft_tokens <= 0:
        return StepSample(batch, kbar, kmax, step_s)
    share = min(1.0, drafts / iterations)
    return StepSample(batch, kbar, share * draft_tokens / drafts, step_s, share)
