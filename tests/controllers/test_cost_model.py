from __future__ import annotations

import random

import pytest

from controllers.cost_model import StepCostModel, StepSample


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
