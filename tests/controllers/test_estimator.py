from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers.estimator import AcceptanceEstimator, wilson_lower


def histogram(alphas: list[float], k: int, steps: int, rng: random.Random) -> tuple[int, ...]:
    h = [0] * (k + 1)
    for _ in range(steps):
        j = 0
        while j < k and rng.random() < alphas[j]:
            j += 1
        h[j] += 1
    return tuple(h)


@pytest.mark.parametrize("alphas", [[0.8, 0.8, 0.8, 0.8], [0.9, 0.7, 0.5, 0.3], [0.2, 0.2, 0.2, 0.2]])
def test_converges_to_true_conditional_acceptance(alphas: list[float]) -> None:
    rng = random.Random(1)
    est = AcceptanceEstimator(4, half_life_s=1e9)
    for t in range(400):
        est.observe(histogram(alphas, 4, 50, rng), 4, float(t))
    for i, a in enumerate(alphas, 1):
        assert est.alpha(i) == pytest.approx(a, abs=0.03)
    expected = 1.0
    chain = 1.0
    for a in alphas:
        chain *= a
        expected += chain
    assert est.expected_length(4, pessimistic=False) == pytest.approx(expected, rel=0.03)


def test_forgets_after_a_change() -> None:
    rng = random.Random(2)
    est = AcceptanceEstimator(4, half_life_s=10.0)
    for t in range(100):
        est.observe(histogram([0.9] * 4, 4, 30, rng), 4, float(t))
    assert est.alpha(1) == pytest.approx(0.9, abs=0.05)
    for t in range(100, 160):
        est.observe(histogram([0.2] * 4, 4, 30, rng), 4, float(t))
    assert est.alpha(1) == pytest.approx(0.2, abs=0.07)


def test_positions_above_k_are_unknown_not_zero() -> None:
    est = AcceptanceEstimator(4)
    est.observe((0, 10), 1, 0.0)  # k=1, every draft accepted
    assert est.alpha(1) == 1.0
    assert est.alpha(2) is None and est.evidence(2) == 0
    assert est.position_rates() == [1.0, None, None, None]
    # pessimistic: unknown positions add nothing; optimistic: extrapolate the last known alpha
    assert est.expected_length(4, pessimistic=False) == 5.0
    assert est.expected_length(4, pessimistic=True) < 2.0


def test_little_data_is_not_trusted() -> None:
    few = AcceptanceEstimator(4)
    few.observe((0, 0, 0, 0, 2), 4, 0.0)  # 2 steps, all accepted
    many = AcceptanceEstimator(4)
    many.observe((0, 0, 0, 0, 2000), 4, 0.0)
    assert few.expected_length(4) < 2.5 < many.expected_length(4)


def test_k0_and_empty_observations_change_nothing() -> None:
    est = AcceptanceEstimator(4)
    est.observe((5, 0), 0, 0.0)
    est.observe((), 3, 1.0)
    assert est.evidence(1) == 0 and est.expected_length(4) == 1.0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 50), min_size=1, max_size=6), st.integers(0, 6), st.floats(0, 1000)),
        max_size=30,
    )
)
def test_estimates_stay_probabilities(obs: list[tuple[list[int], int, float]]) -> None:
    est = AcceptanceEstimator(5, half_life_s=30.0)
    for hist, k, now in sorted(obs, key=lambda o: o[2]):
        est.observe(hist, k, now)
    for i in range(1, 6):
        a = est.alpha(i)
        assert a is None or 0.0 <= a <= 1.0
        lo = est.alpha(i, pessimistic=True)
        assert lo is None or (a is not None and 0.0 <= lo <= a + 1e-12)
    lengths = [est.expected_length(k) for k in range(6)]
    assert lengths[0] == 1.0 and all(b >= a - 1e-12 for a, b in itertools.pairwise(lengths))
    assert lengths[-1] <= 6.0


def test_wilson_lower() -> None:
    assert wilson_lower(0, 0, 1.28) == 0.0
    assert 0.7 < wilson_lower(80, 100, 1.28) < 0.8
    assert wilson_lower(800, 1000, 1.28) > wilson_lower(80, 100, 1.28)
