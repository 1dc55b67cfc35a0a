"""Route split/merge advice from per-request acceptance (controllers/route_check.py)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers.route_check import RouteSpread, advise


def _fill(spread: RouteSpread, rates: list[float], rng: random.Random, requests: int = 200, trials: int = 12) -> None:
    for i in range(requests):
        p = rates[i % len(rates)]
        spread.add(trials, sum(rng.random() < p for _ in range(trials)), float(i))


@settings(max_examples=30, deadline=None)
@given(p=st.floats(0.05, 0.95), trials=st.integers(3, 40), seed=st.integers(0, 10**6))
def test_homogeneous_requests_have_little_spread_whatever_their_size(p: float, trials: int, seed: int) -> None:
    s = RouteSpread()
    _fill(s, [p], random.Random(seed), requests=300, trials=trials)
    # Binomial noise is taken out (unbiased); what is left is the estimate's own noise, at most ~0.15 with 3 trials per
    # request, far below the 0.25 that advises a split.
    assert s.spread is not None and s.spread < 0.17
    assert s.mean is not None and abs(s.mean - p) < 0.08


def test_a_mixed_route_spreads_and_is_advised_to_split() -> None:
    rng = random.Random(1)
    mixed, pure = RouteSpread(), RouteSpread()
    _fill(mixed, [0.9, 0.1], rng)  # copy-heavy code and prose on one route
    _fill(pure, [0.85], rng)
    assert mixed.spread is not None and 0.3 < mixed.spread < 0.5
    advice = advise({"mixed": ("p", mixed), "code": ("p", pure)})
    assert [(a.kind, a.routes) for a in advice] == [("split", ("mixed",))]


def test_two_alike_routes_on_one_pool_are_advised_to_merge_not_across_pools() -> None:
    rng = random.Random(2)
    a, b, c = RouteSpread(), RouteSpread(), RouteSpread()
    for s in (a, b, c):
        _fill(s, [0.6], rng, requests=400)
    advice = advise({"a": ("p", a), "b": ("p", b), "c": ("q", c)})
    assert [(x.kind, x.routes) for x in advice] == [("merge", ("a", "b"))]


def test_too_few_requests_are_not_judged_and_old_requests_fade() -> None:
    rng = random.Random(3)
    s = RouteSpread(half_life_s=10.0)
    _fill(s, [0.9, 0.1], rng, requests=20)
    assert advise({"r": ("p", s)}) == []
    s.add(10, 5, 1000.0)  # long after: the old requests weigh almost nothing
    assert s.requests < 1.1
    s.add(1, 1, 1001.0)  # one trial: no information on spread
    assert s.requests < 1.1


def test_a_route_whose_traffic_stopped_fades_out_of_the_check() -> None:
    rng = random.Random(4)
    s = RouteSpread(half_life_s=1000.0)
    _fill(s, [0.9, 0.1], rng, requests=60)  # at t = 0 .. 59
    assert [a.kind for a in advise({"r": ("p", s)})] == ["split"]
    s.decay_to(10_059.0)  # ten half-lives without a request
    assert s.requests < 0.1 and advise({"r": ("p", s)}) == []
