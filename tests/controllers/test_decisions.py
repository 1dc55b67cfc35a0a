from __future__ import annotations

from specgate.controllers.decisions import static_table
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
