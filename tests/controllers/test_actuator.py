from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.actuator import Actuation, PoolOption, actuate

PLUGIN4 = PoolOption(max_k=4, per_request_k=True)
STOCK4 = PoolOption(max_k=4, per_request_k=False)
PLAIN = PoolOption(max_k=0, per_request_k=False)
STOCK2 = PoolOption(max_k=2, per_request_k=False)


@pytest.mark.parametrize(
    ("desired", "options", "expected"),
    [
        (3, [PLUGIN4], Actuation(0, 3, 3)),
        (9, [PLUGIN4], Actuation(0, 4, 4)),
        (0, [PLUGIN4], Actuation(0, 0, 0)),
        # k=0 prefers a pool that does not draft at all
        (0, [PLUGIN4, PLAIN], Actuation(1, None, 0)),
        (3, [PLUGIN4, PLAIN], Actuation(0, 3, 3)),
        # stock pools: closest configured k
        (3, [PLAIN, STOCK4, STOCK2], Actuation(1, None, 4)),
        (1, [PLAIN, STOCK4, STOCK2], Actuation(0, None, 0)),  # tie 0 vs 2: fewer wasted drafts
        (2, [PLAIN, STOCK4, STOCK2], Actuation(2, None, 2)),
        (0, [STOCK4], Actuation(0, None, 4)),
        # an unavailable pool is passed over while another is available
        (0, [PLUGIN4, PoolOption(0, False, available=False)], Actuation(0, 0, 0)),
        # none available: still an answer (the relay then reports the outage properly)
        (2, [PoolOption(4, True, available=False)], Actuation(0, 2, 2)),
    ],
)
def test_actuate(desired: int, options: list[PoolOption], expected: Actuation) -> None:
    assert actuate(desired, options) == expected


def test_no_pools() -> None:
    with pytest.raises(ValueError):
        actuate(1, [])


@given(
    st.integers(-3, 20),
    st.lists(st.builds(PoolOption, st.integers(0, 8), st.booleans(), st.booleans()), min_size=1, max_size=5),
)
def test_applied_k_is_feasible(desired: int, options: list[PoolOption]) -> None:
    act = actuate(desired, options)
    chosen = options[act.pool_index]
    assert 0 <= act.applied_k <= chosen.max_k
    if chosen.per_request_k:
        assert act.cap == act.applied_k == min(max(desired, 0), chosen.max_k)
    else:
        assert act.cap is None and act.applied_k == chosen.max_k
    if any(o.available for o in options):
        assert chosen.available
