from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers.estimator import AcceptanceEstimator, pessimistic_lengths, wilson_lower


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
    ),
    st.sampled_from([0.0, 1.0]),
)
def test_estimates_stay_probabilities(obs: list[tuple[list[int], int, float]], change_z: float) -> None:
    """Also with step changes judged (at a z low enough to restart often), whatever the requests."""
    est = AcceptanceEstimator(5, half_life_s=30.0, change_z=change_z, recent_half_life_s=5.0)
    for hist, k, now in sorted(obs, key=lambda o: o[2]):
        est.observe_request([(hist, k)], now)
    assert all(t >= p >= 0.0 for t, p in zip(est.trials, est.passes, strict=True))
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


# The tests below were written against survivors of a mutation run (docs/mutation.md).


def test_wilson_lower_matches_textbook_values() -> None:
    # 95% Wilson score intervals (z = 1.96): 8 of 10 -> [0.490, 0.943], 1 of 1 -> [0.207, 1].
    assert wilson_lower(8, 10, 1.96) == pytest.approx(0.4902, abs=5e-4)
    assert wilson_lower(1, 1, 1.96) == pytest.approx(0.2065, abs=5e-4)
    # more passes than trials (rounding after decay) reads as all passed
    assert wilson_lower(12, 10, 1.96) == wilson_lower(10, 10, 1.96)


def test_a_single_verify_step_is_evidence() -> None:
    est = AcceptanceEstimator(4)
    est.observe((0, 1), 1, 0.0)
    assert est.evidence(1) == 1 and est.alpha(1) == 1.0
    lower = est.alpha(1, pessimistic=True)
    assert lower is not None and 0.0 < lower < 0.5


def test_positions_outside_the_estimator_have_no_evidence() -> None:
    est = AcceptanceEstimator(2)
    est.observe((1, 2, 3), 2, 0.0)
    for position in (-1, 0, 3):
        assert est.evidence(position) == 0.0 and est.alpha(position) is None


def test_histogram_slots_above_the_requests_k_teach_nothing() -> None:
    # The engine's histogram has a slot per draft it could run (4 here); a request capped at k = 2 fills 0..2 only.
    est = AcceptanceEstimator(4)
    est.observe((2, 3, 5, 0, 0), 2, 0.0)
    assert est.alpha(1) == pytest.approx(8 / 10) and est.alpha(2) == pytest.approx(5 / 8)
    assert est.alpha(3) is None and est.evidence(3) == 0


def test_a_histogram_longer_than_the_estimator_tracks() -> None:
    est = AcceptanceEstimator(2)
    est.observe((1, 1, 1, 1, 6), 4, 0.0)  # ran at k = 4; the estimator keeps positions 1..2
    assert est.alpha(1) == pytest.approx(9 / 10) and est.alpha(2) == pytest.approx(8 / 9)


def test_position_rates_are_the_cumulative_products() -> None:
    est = AcceptanceEstimator(3)
    est.observe((2, 2, 2, 2), 3, 0.0)  # conditional acceptance 6/8, 4/6, 2/4
    assert est.position_rates() == pytest.approx([0.75, 0.5, 0.25])


def test_max_k_zero_is_a_route_that_never_drafts() -> None:
    est = AcceptanceEstimator(0)
    est.observe((3, 4), 1, 0.0)
    assert est.expected_length(4) == 1.0 and est.position_rates() == []
    with pytest.raises(ValueError, match="max_k must be >= 0"):
        AcceptanceEstimator(-1)


def test_evidence_halves_every_half_life() -> None:
    est = AcceptanceEstimator(2, half_life_s=0.5)
    est.observe((0, 0, 8), 2, 10.0)
    est.decay_to(11.0)  # two half-lives
    assert est.evidence(1) == pytest.approx(2.0) and est.alpha(1) == pytest.approx(1.0)
    # a half-life of 0 turns forgetting off (and divides by nothing)
    keep = AcceptanceEstimator(2, half_life_s=0.0)
    keep.observe((0, 0, 8), 2, 10.0)
    keep.decay_to(1e6)
    assert keep.evidence(1) == 8


def test_proposal_rate_is_one_until_steps_without_a_proposal_are_seen_and_follows_the_traffic() -> None:
    est = AcceptanceEstimator(4, half_life_s=10.0)
    assert est.proposal_rate() == 1.0
    est.observe_proposals(300, 0, 0.0)
    assert est.proposal_rate() == 1.0
    for t in range(1, 60):
        est.observe_proposals(20, 80, float(t))  # chat-like text: one step in five finds a repeat
    assert est.proposal_rate() == pytest.approx(0.2, abs=0.02)
    for t in range(60, 120):
        est.observe_proposals(90, 10, float(t))
    assert est.proposal_rate() == pytest.approx(0.9, abs=0.02)


@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_proposal_rate_is_a_share_never_zero(proposed: int, unproposed: int) -> None:
    est = AcceptanceEstimator(4)
    est.observe_proposals(proposed, unproposed, 0.0)
    q = est.proposal_rate()
    assert 0.0 < q <= 1.0
    if proposed + unproposed:
        assert abs(q - proposed / (proposed + unproposed)) <= 1.0 / (proposed + unproposed + 1)


def test_a_route_borrows_its_pools_acceptance_until_its_own_evidence_outweighs_it() -> None:
    pool = AcceptanceEstimator(4)
    pool.observe_positions([1000, 800, 640, 512], [800, 640, 512, 410], 0.0)  # 0.8 at every position
    route = AcceptanceEstimator(4)
    assert route.alpha(1) is None and route.expected_length(4) == 1.0
    assert route.alpha(1, prior=pool, prior_weight=20) == pytest.approx(0.8)
    # 20 borrowed trials: cautious (Wilson) but well above nothing.
    assert 1.5 < route.expected_length(4, True, pool, 20) < pool.expected_length(4, True)
    route.observe((400, 0, 0, 0, 0), 4, 0.0)  # its own text: every draft rejected
    assert route.alpha(1, prior=pool, prior_weight=20) == pytest.approx(16 / 420)
    assert route.expected_length(4, True, pool, 20) < 1.1  # position 1 decides: deeper ones still borrow
    assert route.expected_length(4, True, pool, 0) == route.expected_length(4, True)  # weight 0: no loan


@given(st.lists(st.integers(0, 500), min_size=4, max_size=4), st.floats(0, 100))
def test_a_loan_never_leaves_the_unit_interval(counts: list[int], weight: float) -> None:
    tried = sorted(counts, reverse=True)
    pool = AcceptanceEstimator(4)
    pool.observe_positions(tried, [t // 2 for t in tried], 0.0)
    route = AcceptanceEstimator(4)
    for i in range(1, 5):
        a = route.alpha(i, pessimistic=True, prior=pool, prior_weight=weight)
        assert a is None or 0.0 <= a <= 1.0


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=6),
    prior_counts=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=0, max_size=6),
    weight=st.sampled_from([0.0, 5.0, 100.0]),
    k_max=st.integers(0, 8),
    pessimistic=st.booleans(),
)
def test_expected_lengths_in_one_pass_equal_the_chain_of_alphas(
    counts: list[tuple[int, int]],
    prior_counts: list[tuple[int, int]],
    weight: float,
    k_max: int,
    pessimistic: bool,
) -> None:
    def estimator(rows: list[tuple[int, int]]) -> AcceptanceEstimator:
        est = AcceptanceEstimator(6, half_life_s=0.0)
        est.observe_positions([t for t, _ in rows], [min(p, t) for t, p in rows], 0.0)
        return est

    def by_alpha(k: int) -> float:
        """E[L(k)] from `alpha` position by position, as the estimator's docstring defines it."""
        total = chain = 1.0
        last: float | None = None
        for i in range(1, min(k, est.max_k) + 1):
            a = est.alpha(i, pessimistic, prior, weight)
            if a is None:
                if pessimistic or last is None:
                    break
                a = last
            chain *= a
            total += chain
            last = a
        return total

    est, prior = estimator(counts), estimator(prior_counts)
    expected = tuple(by_alpha(k) for k in range(k_max + 1))
    assert est.expected_lengths(k_max, pessimistic, prior, weight) == expected
    assert tuple(est.expected_length(k, pessimistic, prior, weight) for k in range(k_max + 1)) == expected


def test_optimistic_lengths_bound_the_estimate_from_above_and_tighten_with_evidence() -> None:
    est = AcceptanceEstimator(4, half_life_s=0)
    assert est.optimistic_lengths(4) == (1.0, 2.0, 3.0, 4.0, 5.0)  # nothing seen: every draft accepted
    est.observe((6, 4), 1, 1.0)  # ten steps at k = 1, four accepted: positions 2.. unknown
    few = est.optimistic_lengths(4)
    assert est.expected_lengths(4, pessimistic=False)[1] < few[1] < 2.0
    assert few[2] - few[1] == pytest.approx(few[1] - 1.0)  # an unknown position is taken as accepted
    for _ in range(50):
        est.observe((6, 4), 1, 1.0)
    many = est.optimistic_lengths(4)
    assert est.expected_lengths(4, pessimistic=False)[1] < many[1] < few[1]  # more evidence, a tighter bound


def _requests(
    est: AcceptanceEstimator, rng: random.Random, alpha: float, start: float, seconds: float, spread: float
) -> None:
    """Five requests a second, each of 40 verify steps at k = 3, at a rate drawn around `alpha` (`spread`: requests
    differ, as real traffic does)."""
    for i in range(int(seconds * 5)):
        a = min(0.99, max(0.0, alpha + rng.uniform(-spread, spread)))
        est.observe_request([(histogram([a] * 3, 3, 40, rng), 3)], start + i / 5)


def test_a_step_change_drops_the_older_evidence_within_seconds() -> None:
    rng = random.Random(3)
    est = AcceptanceEstimator(3, half_life_s=60.0, change_z=4.0, recent_half_life_s=15.0)
    plain = AcceptanceEstimator(3, half_life_s=60.0)
    for e in (est, plain):
        rng = random.Random(3)
        _requests(e, rng, 0.85, 0.0, 120.0, 0.1)
        _requests(e, rng, 0.1, 120.0, 5.0, 0.1)
    # Five seconds after the drop the estimate is the new rate, where the half-life alone still averages both.
    assert est.changes >= 1 and est.alpha(1) == pytest.approx(0.1, abs=0.05)
    assert est.changed_at is not None and 120.0 <= est.changed_at <= 125.0 and plain.changed_at is None
    assert plain.alpha(1) > 0.6  # type: ignore[operator]  # evidence exists: not None
    # And back up after a minute at 0.1 (a fix landed), from a few requests: a route that stopped drafting explores.
    for e in (est, plain):
        _requests(e, rng, 0.1, 125.0, 60.0, 0.1)
        for i in range(8):
            e.observe_request([(histogram([0.85] * 3, 3, 40, rng), 3)], 200.0 + i * 2)
    assert est.alpha(1) == pytest.approx(0.85, abs=0.1) and plain.alpha(1) < 0.6  # type: ignore[operator]


def test_overdispersed_steady_traffic_is_not_a_change() -> None:
    """Requests whose rates spread widely (0.35-0.95) around a steady mean: no change in ten minutes, where a
    binomial test on the steps would fire (each request's 40 steps share one rate)."""
    rng = random.Random(4)
    est = AcceptanceEstimator(3, half_life_s=60.0, change_z=4.0, recent_half_life_s=15.0)
    _requests(est, rng, 0.65, 0.0, 600.0, 0.3)
    assert est.changes == 0


def test_change_detection_off_is_the_plain_estimator() -> None:
    rng, again = random.Random(5), random.Random(5)
    on, off = AcceptanceEstimator(3, change_z=0.0), AcceptanceEstimator(3)
    for t in range(200):
        rate = 0.9 if t < 100 else 0.1
        h = histogram([rate] * 3, 3, 30, rng)
        assert h == histogram([rate] * 3, 3, 30, again)
        on.observe_request([(h, 3), ((4, 0), 1)], float(t))
        off.observe(h, 3, float(t))
        off.observe((4, 0), 1, float(t))
    assert on.changes == 0 and on.trials == off.trials and on.passes == off.passes


_COUNTS = st.lists(st.sampled_from([0.0, 1e-13, 0.5, 3.0, 40.0, 777.0]), min_size=8, max_size=8)


@st.composite
def _estimator(draw: st.DrawFn, max_k: int | None = None) -> AcceptanceEstimator:
    est = AcceptanceEstimator(draw(st.integers(0, 8)) if max_k is None else max_k, z=draw(st.sampled_from([1.28, 2.0])))
    for _ in range(draw(st.integers(0, 3))):
        tried = draw(_COUNTS)
        share = draw(st.floats(0, 1))
        est.observe_positions(tried, [t * share for t in tried], 1.0)
    return est


@given(
    st.lists(
        st.tuples(_estimator(), st.integers(0, 10), st.none() | _estimator()),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([0.0, 1e-3, 5.0]),
)
@settings(max_examples=300, deadline=None)
def test_every_routes_lengths_at_once_are_each_routes_own(
    routes: list[tuple[AcceptanceEstimator, int, AcceptanceEstimator | None]], prior_weight: float
) -> None:
    """The control loop's one numpy pass over every route gives the very floats of each route's own
    `expected_lengths` (pessimistic, with a pool prior lending trials or not): the schedules must not move with it."""
    ests, ks, priors = (list(column) for column in zip(*routes, strict=True))
    want = [e.expected_lengths(k, True, p, prior_weight) for e, k, p in routes]
    assert pessimistic_lengths(ests, ks, priors, prior_weight) == want
