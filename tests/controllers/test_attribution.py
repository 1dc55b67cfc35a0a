"""Routes' shares of an engine's speculation counters (controllers/attribution.py)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.attribution import InFlightShares, attribute

routes = st.sampled_from(["code", "chat", "sum"])
# (route, start, length) of requests at one endpoint.
requests = st.lists(st.tuples(routes, st.floats(0, 100), st.floats(0, 50)), max_size=20)


@given(requests, st.floats(0, 200))
def test_weights_are_each_routes_request_seconds_in_the_interval(
    reqs: list[tuple[str, float, float]], cut: float
) -> None:
    """Replaying starts and ends in time order, `take` at `cut` and at the end gives each route the time its
    requests were in flight before and after the cut, however they overlapped."""
    # At one instant starts come before ends, so that a request of no length starts before it ends.
    events = sorted([(s, 0, r) for r, s, _ in reqs] + [(s + d, 1, r) for r, s, d in reqs])
    shares = InFlightShares()
    first: dict[str, float] = {}
    taken = False
    for t, ending, route in events:
        if not taken and t > cut:
            first, taken = shares.take(cut), True
        (shares.end if ending else shares.begin)(route, t)
    if not taken:
        first = shares.take(cut)
    second = shares.take(max(cut, 250.0))
    assert shares.in_flight == 0
    for route in {r for r, _, _ in reqs}:
        before = sum(max(0.0, min(s + d, cut) - s) for r, s, d in reqs if r == route)
        after = sum(max(0.0, s + d - max(s, cut)) for r, s, d in reqs if r == route)
        assert math.isclose(first.get(route, 0.0), before, abs_tol=1e-6)
        assert math.isclose(second.get(route, 0.0), after, abs_tol=1e-6)


@given(
    st.floats(1, 1e6),
    st.floats(0, 1),
    st.dictionaries(routes, st.floats(0, 1e4), max_size=3),
)
def test_shares_add_up_to_the_counters_and_keep_the_interval_acceptance(
    drafts: float, rate: float, weights: dict[str, float]
) -> None:
    per_pos = {0: drafts * rate, 1: drafts * rate * rate}
    accepted = per_pos[0] + per_pos[1]
    shares = attribute(drafts, 2 * drafts, accepted, per_pos, weights)
    if not any(w > 0 for w in weights.values()):
        assert shares == {}
        return
    assert set(shares) == {r for r, w in weights.items() if w > 0}
    assert math.isclose(sum(s.drafts for s in shares.values()), drafts, rel_tol=1e-9)
    assert math.isclose(sum(s.accepted_tokens for s in shares.values()), accepted, rel_tol=1e-9, abs_tol=1e-9)
    for s in shares.values():  # one interval, one acceptance: what overlap cannot separate
        assert math.isclose(s.accepted_per_pos[0], s.drafts * rate, rel_tol=1e-9, abs_tol=1e-9)


def test_one_route_alone_gets_everything_and_nothing_is_credited_without_requests() -> None:
    (share,) = attribute(10, 40, 25, {0: 9, 1: 7}, {"code": 3.5}).values()
    assert (share.drafts, share.draft_tokens, share.accepted_tokens, share.accepted_per_pos) == (
        10,
        40,
        25,
        {0: 9, 1: 7},
    )
    assert attribute(10, 40, 25, {0: 9}, {}) == {}  # drafts of another replica or a probe
    assert attribute(0, 0, 0, {}, {"code": 1.0}) == {}
