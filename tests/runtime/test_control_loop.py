"""The control loop's route check (runtime/control_loop.py) judges routes by the configured `routing.check`."""

from __future__ import annotations

from typing import Any

from specgate.backends.pool import PoolSet
from specgate.controllers.observations import ObservationSink
from specgate.controllers.route_check import RouteSpread
from specgate.runtime.control_loop import ControlLoop
from specgate.runtime.dispatch import Dispatcher
from specgate.runtime.metrics import GatewayMetrics

from specgate.config import validate_config


def _loop(check: dict[str, Any]) -> ControlLoop:
    config = validate_config(
        {
            "pools": [{"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9"]}],
            "routing": {"routes": [{"name": "mixed"}, {"name": "a"}, {"name": "b"}], "check": check},
        }
    )
    pools = PoolSet(config)
    return ControlLoop(config, pools, ObservationSink(), Dispatcher(config, pools, None), GatewayMetrics(), None)  # type: ignore[arg-type]


def _spread(rates: list[float], requests: int = 40, trials: int = 50) -> RouteSpread:
    s = RouteSpread()
    for i in range(requests):
        s.add(trials, round(rates[i % len(rates)] * trials), now=float(i))
    return s


def _advice(loop: ControlLoop) -> set[tuple[str, tuple[str, ...]]]:
    loop.spreads = {"mixed": _spread([0.6, 0.3]), "a": _spread([0.6]), "b": _spread([0.62])}
    return {(a.kind, a.routes) for a in loop.route_advice()}


def test_the_default_threshold_leaves_a_gap_of_0_3_alone_a_lower_one_splits_it() -> None:
    # Halves 0.3 apart spread 0.15: under the default 0.25.
    assert _advice(_loop({})) == {("merge", ("a", "b"))}
    assert _advice(_loop({"split_above": 0.12})) == {("split", ("mixed",)), ("merge", ("a", "b"))}


def test_merge_distance_and_minimum_requests_come_from_the_config() -> None:
    assert _advice(_loop({"merge_within": 0.01})) == set()
    assert _advice(_loop({"split_above": 0.12, "min_requests": 100})) == set()
