"""The control loop's route check (runtime/control_loop.py) judges routes by the configured `routing.check`."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from specgate.backends.pool import PoolSet
from specgate.backends.webhooks import Alert
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


def test_a_route_whose_drafter_changes_starts_its_drift_baseline_over() -> None:
    pools = [
        {
            "name": "p",
            "model": "m",
            "endpoints": ["http://127.0.0.1:9"],
            "speculation": {"method": "ngram", "max_k": 4},
        },
        {
            "name": "q",
            "model": "n",
            "endpoints": ["http://127.0.0.1:8"],
            "speculation": {"method": "ngram", "max_k": 4},
        },
    ]
    routing = {"routes": [{"name": "a", "pools": ["p"]}, {"name": "b", "pools": ["q"]}], "default_route": "a"}
    config = validate_config({"pools": pools, "routing": routing})
    pool_set = PoolSet(config)
    leader = SimpleNamespace(info=SimpleNamespace(role="leader"))  # the seat a lone replica holds
    loop = ControlLoop(
        config, pool_set, ObservationSink(), Dispatcher(config, pool_set, None), GatewayMetrics(), leader
    )  # type: ignore[arg-type]
    assert loop.drift is not None
    before = dict(loop.drift.detectors)
    loop._firing["b"] = Alert("SpecgateAcceptanceDrift", {"route": "b"}, {}, "firing", 1.0)
    pools[1]["speculation"] = {"method": "draft_model", "max_k": 3}  # pool q gets another drafter
    reloaded = validate_config({"pools": pools, "routing": routing})
    loop.reconfigure(reloaded, Dispatcher(reloaded, pool_set, None), None)
    assert loop.drift.detectors["a"] is before["a"]
    assert loop.drift.detectors["b"] is not before["b"]
    # Its alert, about the old drafter, is resolved (nothing else would resolve it).
    assert "b" not in loop._firing
    assert loop.metrics.alerts_fired.labels("SpecgateAcceptanceDrift", "resolved")._value.get() == 1
