from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.picker import EndpointLoad, Scoring, pick_endpoint


@pytest.mark.parametrize(
    ("loads", "expected"),
    [
        ([], None),
        ([EndpointLoad(0, False)], None),
        ([EndpointLoad(3, True), EndpointLoad(1, True)], 1),
        # engine reports more running than we sent (other replicas): that counts
        ([EndpointLoad(1, True, running=10, waiting=0, kv_usage=0), EndpointLoad(2, True, 2, 0, 0)], 1),
        # waiting and KV pressure weigh in
        ([EndpointLoad(0, True, 2, 3, 0), EndpointLoad(0, True, 4, 0, 0)], 1),
        ([EndpointLoad(0, True, 2, 0, 0.99), EndpointLoad(0, True, 4, 0, 0.0)], 1),
        # a stale (unknown) endpoint is not idle: it is charged the worst fresh load (5), so 2 wins
        ([EndpointLoad(0, True), EndpointLoad(0, True, 5, 0, 0), EndpointLoad(0, True, 2, 0, 0)], 2),
        # ... or its own outstanding requests when they are more
        ([EndpointLoad(7, True), EndpointLoad(0, True, 5, 0, 0)], 1),
    ],
)
def test_pick(loads: list[EndpointLoad], expected: int | None) -> None:
    assert pick_endpoint(loads) == expected


def test_tie_between_unknown_and_fresh_rotates() -> None:
    # Unknown is charged the worst fresh load (5): a tie, broken by the rotation, never always the same one.
    loads = [EndpointLoad(0, True), EndpointLoad(0, True, 5, 0, 0)]
    assert [pick_endpoint(loads, rotation=r) for r in range(4)] == [0, 1, 0, 1]


def test_unknown_is_not_preferred_over_idle() -> None:
    loads = [EndpointLoad(0, True), EndpointLoad(0, True, 0, 0, 0), EndpointLoad(0, True, 8, 0, 0)]
    assert pick_endpoint(loads, rotation=0) == 1


def test_exclude_and_rotation() -> None:
    loads = [EndpointLoad(0, True)] * 3
    assert pick_endpoint(loads, exclude={0, 1}) == 2
    assert {pick_endpoint(loads, rotation=r) for r in range(3)} == {0, 1, 2}


loads_st = st.lists(
    st.builds(
        EndpointLoad,
        st.integers(0, 100),
        st.booleans(),
        st.none() | st.floats(0, 100),
        st.none() | st.floats(0, 100),
        st.none() | st.floats(0, 1),
    ),
    max_size=8,
)


@given(loads_st, st.integers(0, 20))
def test_picks_only_healthy_and_never_none_when_one_is(loads: list[EndpointLoad], rotation: int) -> None:
    choice = pick_endpoint(loads, rotation=rotation)
    if any(load.healthy for load in loads):
        assert choice is not None and loads[choice].healthy
    else:
        assert choice is None


# Prefix affinity and the load bound (filter -> score -> pick).
AFFINITY = Scoring(load=1.0, prefix=3.0, load_bound=1.2, load_slack=1.0)
NAMES = ["http://a:8000", "http://b:8000", "http://c:8000"]


def _first_choice(key: int) -> int:
    idle = [EndpointLoad(0, True, 0, 0, 0)] * 3
    choice = pick_endpoint(idle, scoring=AFFINITY, names=NAMES, affinity=key)
    assert choice is not None
    return choice


@given(st.integers(0, 2**64 - 1), st.integers(0, 100))
def test_same_prefix_same_endpoint_whatever_the_rotation(key: int, rotation: int) -> None:
    idle = [EndpointLoad(0, True, 0, 0, 0)] * 3
    assert pick_endpoint(idle, rotation=rotation, scoring=AFFINITY, names=NAMES, affinity=key) == _first_choice(key)


@given(st.integers(0, 2**64 - 1))
def test_affinity_yields_to_the_load_bound(key: int) -> None:
    home = _first_choice(key)
    loads = [EndpointLoad(0, True, 0, 0, 0)] * 3
    # Home at 4 running, others idle: cap = 1.2 * 4 / 3 + 1 = 2.6, home is over it.
    loads = [EndpointLoad(0, True, 4 if i == home else 0, 0, 0) for i in range(3)]
    assert pick_endpoint(loads, scoring=AFFINITY, names=NAMES, affinity=key) != home
    # One running at home is within the slack (cap 1.4): the prefix stays.
    loads = [EndpointLoad(0, True, 1 if i == home else 0, 0, 0) for i in range(3)]
    assert pick_endpoint(loads, scoring=AFFINITY, names=NAMES, affinity=key) == home


@given(st.lists(st.integers(0, 40), min_size=3, max_size=3), st.integers(0, 2**64 - 1))
def test_the_pick_is_within_the_bound(running: list[int], key: int) -> None:
    loads = [EndpointLoad(0, True, r, 0, 0) for r in running]
    choice = pick_endpoint(loads, scoring=AFFINITY, names=NAMES, affinity=key)
    assert choice is not None
    assert running[choice] <= 1.2 * sum(running) / 3 + 1.0


def test_without_a_key_load_decides() -> None:
    loads = [EndpointLoad(0, True, 3, 0, 0), EndpointLoad(0, True, 1, 0, 0), EndpointLoad(0, True, 2, 0, 0)]
    assert pick_endpoint(loads, scoring=AFFINITY, names=NAMES, affinity=None) == 1


def test_zero_weights_are_round_robin() -> None:
    loads = [EndpointLoad(0, True, 9, 0, 0), EndpointLoad(0, True, 0, 0, 0), EndpointLoad(0, True, 5, 0, 0)]
    plain = Scoring(load=0.0, prefix=0.0)
    assert [pick_endpoint(loads, rotation=r, scoring=plain) for r in range(6)] == [0, 1, 2, 0, 1, 2]


def test_unhealthy_first_choice_goes_to_the_second() -> None:
    key = 12345
    home = _first_choice(key)
    loads = [EndpointLoad(0, i != home, 0, 0, 0) for i in range(3)]
    second = pick_endpoint(loads, scoring=AFFINITY, names=NAMES, affinity=key)
    assert second is not None and second != home
    # The same second choice when home is excluded after a failed try instead.
    idle = [EndpointLoad(0, True, 0, 0, 0)] * 3
    assert pick_endpoint(idle, {home}, scoring=AFFINITY, names=NAMES, affinity=key) == second


@given(st.integers(0, 2**64 - 1))
def test_a_remembered_endpoint_keeps_the_prefix_within_the_bound(key: int) -> None:
    home = _first_choice(key)
    moved = (home + 1) % 3
    idle = [EndpointLoad(0, True, 0, 0, 0)] * 3
    assert pick_endpoint(idle, scoring=AFFINITY, names=NAMES, affinity=key, last=NAMES[moved]) == moved
    # Over the bound there, it spills to the home (ranked second), not to the third endpoint.
    loads = [EndpointLoad(0, True, 4 if i == moved else 0, 0, 0) for i in range(3)]
    assert pick_endpoint(loads, scoring=AFFINITY, names=NAMES, affinity=key, last=NAMES[moved]) == home


BALANCE_NEW = Scoring(load=1.0, prefix=3.0, load_bound=1.2, load_slack=1.0, new_bound=1.0)


@given(st.integers(0, 2**64 - 1))
def test_a_new_prefix_goes_home_only_while_home_carries_at_most_the_mean(key: int) -> None:
    home = _first_choice(key)
    idle = [EndpointLoad(0, True, 0, 0, 0)] * 3
    # Home carries 4 conversations, the others 2 (mean 2.67): a new conversation goes elsewhere, a known one home.
    active = [4 if i == home else 2 for i in range(3)]
    placed = pick_endpoint(idle, scoring=BALANCE_NEW, names=NAMES, affinity=key, active=active)
    assert placed is not None and placed != home
    assert pick_endpoint(idle, scoring=BALANCE_NEW, names=NAMES, affinity=key) == home
    # Equal counts: home is at the mean and keeps it, so replicas that share no placements still agree.
    assert pick_endpoint(idle, scoring=BALANCE_NEW, names=NAMES, affinity=key, active=[3, 3, 3]) == home
    # Without `new_bound` the counts are not read.
    assert pick_endpoint(idle, scoring=AFFINITY, names=NAMES, affinity=key, active=active) == home


@given(st.integers(0, 2**64 - 1))
def test_a_new_prefix_still_respects_the_load_bound(key: int) -> None:
    home = _first_choice(key)
    loads = [EndpointLoad(0, True, 9 if i == home else 0, 0, 0) for i in range(3)]
    active = [0 if i == home else 5 for i in range(3)]  # fewest conversations, but over the load bound
    assert pick_endpoint(loads, scoring=BALANCE_NEW, names=NAMES, affinity=key, active=active) != home


@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 20)), min_size=1, max_size=6),
    st.integers(0, 2**64 - 1),
)
def test_a_new_prefix_goes_within_both_bounds(cells: list[tuple[int, int]], key: int) -> None:
    names = [f"http://e{i}:8000" for i in range(len(cells))]
    loads = [EndpointLoad(0, True, r, 0, 0) for r, _ in cells]
    active = [a for _, a in cells]
    choice = pick_endpoint(loads, scoring=BALANCE_NEW, names=names, affinity=key, active=active)
    assert choice is not None
    running = [r for r, _ in cells]
    assert running[choice] <= max(1.2 * sum(running) / len(running) + 1.0, min(running))
    within = [a for (r, a) in cells if r <= max(1.2 * sum(running) / len(running) + 1.0, min(running))]
    assert active[choice] <= max(sum(within) / len(within), min(within))
