from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.decisions import RouteDecision, static_table
from specgate.controllers.k_schedule import k_at
from specgate.runtime.settings import route_bounds

from specgate.config import RoutingConfig


def test_static_table_pins_bounds_and_default() -> None:
    routing = RoutingConfig.model_validate(
        {
            "routes": [
                {"name": "code", "k": {"max": 3}},
                {"name": "chat", "k": {"pin": 0}},
                {"name": "wide", "k": {"min": 6}},
            ],
            "default_route": "other",
        }
    )
    table = static_table(route_bounds(routing), engine_max_k=4)
    assert table.k_for("code") == 3
    assert table.k_for("chat") == 0
    assert table.k_for("wide") == 6  # the floor wins; the actuator clamps to what a pool can do
    assert table.k_for("other") == 4
    assert table.k_for("unknown") == 4
    assert table.routes["chat"].reason == "pinned in config"


def test_an_explorers_schedule_is_the_explore_k_up_to_its_bound_and_the_routes_past_it() -> None:
    d = RouteDecision(1, "goodput", 4, 1.0, ((1, 3), (16, 1), (64, 0)), explore_until=8)
    assert [d.explore_k_at(b) for b in (1, 8, 9, 16, 63, 64)] == [4, 4, 3, 1, 1, 0]
    assert d.explorer_schedule() == ((1, 4), (9, 3), (16, 1), (64, 0))
    assert all(k_at(d.explorer_schedule(), b) == d.explore_k_at(b) for b in range(1, 200))
    unbounded = RouteDecision(0, "off", 1, 0.01, ((1, 0),))
    assert unbounded.explorer_schedule() == ((1, 1),) and unbounded.explore_k_at(500) == 1
    static = RouteDecision(2, "static", 3, 0.5, None, explore_until=4)
    assert static.explorer_schedule() == ((1, 3), (5, 2))
    # One draft above the route's k at a high load (k = 0 there), up to twice it: at smaller batches, where the
    # route's schedule drafts more, an explorer drafts as much as the route's other requests, never less.
    busy = RouteDecision(0, "goodput", 1, 0.001, ((1, 2), (32, 1), (64, 0)), explore_until=1200)
    assert busy.explorer_schedule() == ((1, 2), (32, 1), (1201, 0))
    assert [busy.explore_k_at(b) for b in (1, 40, 600, 1201)] == [2, 1, 1, 0]


@given(
    st.lists(st.tuples(st.integers(2, 300), st.integers(0, 7)), max_size=6),
    st.integers(0, 7),
    st.integers(0, 8),
    st.integers(1, 300),
)
def test_an_explorers_schedule_agrees_with_its_k_at_every_batch(
    points: list[tuple[int, int]], first: int, explore: int, until: int
) -> None:
    schedule = tuple(sorted({lo: k for lo, k in [(1, first), *points]}.items()))
    d = RouteDecision(first, "x", explore, 1.0, schedule, explore_until=until)
    own = d.explorer_schedule()
    assert own[0][0] == 1 and all(a[0] < b[0] for a, b in itertools.pairwise(own))
    assert all(k_at(own, b) == d.explore_k_at(b) for b in range(1, 320))
    assert all(d.explore_k_at(b) >= d.k_at(b) for b in range(1, 320))  # never fewer drafts than the route's
