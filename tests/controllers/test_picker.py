from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.picker import EndpointLoad, pick_endpoint


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
