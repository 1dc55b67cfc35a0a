"""A config reload: the new controller goes on from what the old one learnt (SpeculationController.carry_from)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers.controller import ControllerSettings, PoolSpec, RouteSpec, SpeculationController
from specgate.controllers.drift import DriftMonitor, DriftSettings

from tests.controllers.test_controller import drive


def _settings(**kw: object) -> ControllerSettings:
    return ControllerSettings(**{"min_dwell_s": 0.0, "half_life_s": 20.0, **kw})  # type: ignore[arg-type]  # a loose dict of overrides


def _learnt() -> SpeculationController:
    """A controller that has seen good acceptance at low load on route r (pool p) for a while."""
    c = SpeculationController(_settings(), [RouteSpec("r", "p", 0, 4)], [PoolSpec("p", 4, "gpu")])
    assert drive(c, [(0.85, 4, 40)], random.Random(5))[-1] >= 3
    return c


def test_a_route_and_pool_that_remain_keep_their_k_acceptance_and_fit() -> None:
    old = _learnt()
    old.pin("r", 2)
    new = SpeculationController(
        _settings(half_life_s=30.0), [RouteSpec("r", "p", 0, 4), RouteSpec("fresh", "p", 0, 4)], [PoolSpec("p", 4)]
    )
    new.carry_from(old)
    assert new.estimator("r", "p") is old.estimator("r", "p")
    assert new.estimator("r", "p").half_life_s == 30.0  # under the new settings
    assert new.cost_model("p") is old.cost_model("p")
    assert new.route_status("r")["k"] == old.route_status("r")["k"]
    assert new.route_status("r")["pinned_by"] == "admin"
    assert new.table().routes["r"].schedule == old.table().routes["r"].schedule
    assert new.version > old.version and list(new.log) == list(old.log)
    # The new route starts as any route does at a start: safe k, no evidence.
    assert new.route_status("fresh")["k"] == 0
    assert new.route_status("fresh")["acceptance"]["evidence_steps"] == 0


def test_narrower_bounds_clamp_the_carried_k_and_an_outside_pin_is_dropped() -> None:
    old = _learnt()
    old.pin("r", 3)
    new = SpeculationController(_settings(), [RouteSpec("r", "p", 0, 2)], [PoolSpec("p", 4)])
    new.carry_from(old)
    status = new.route_status("r")
    assert status["pin"] is None  # 3 is outside [0, 2]
    assert status["k"] <= 2 and all(k <= 2 for _, k in new.table().routes["r"].schedule)


def test_a_pool_whose_drafter_changed_starts_afresh() -> None:
    old = _learnt()
    new = SpeculationController(_settings(), [RouteSpec("r", "p", 0, 4)], [PoolSpec("p", 4, "gpu", "eagle3")])
    new.carry_from(old)
    assert new.cost_model("p") is not old.cost_model("p")
    assert new.estimator("r", "p") is not old.estimator("r", "p")
    assert new.route_status("r")["k"] == 0  # as at a start: nothing is known about this drafter


@pytest.mark.parametrize(
    "pool",
    [
        PoolSpec("p", 4, "gpu", draft_cost=0.5),
        PoolSpec("p", 4, "cpu"),
        PoolSpec("p", 4, "gpu", step_time=(0.009, 0.00006, 0.0, 0.34)),
    ],
    ids=str,
)
def test_a_pool_whose_cost_settings_changed_refits_its_step_time_and_keeps_its_acceptance(pool: PoolSpec) -> None:
    """The step-time fit starts from the cost prior and the declared drafting cost: a new one starts it afresh. The
    drafter is the same, so what the routes' acceptance taught stays, and so do their k and schedules."""
    old = _learnt()
    new = SpeculationController(_settings(), [RouteSpec("r", "p", 0, 4)], [pool])
    new.carry_from(old)
    assert new.cost_model("p") is not old.cost_model("p")
    if pool.draft_cost is not None:
        assert new.cost_model("p").prior[2] == pytest.approx(0.5 * new.cost_model("p").prior[0])
    assert new.estimator("r", "p") is old.estimator("r", "p")
    assert new.route_status("r")["k"] == old.route_status("r")["k"] >= 3
    assert new.table().routes["r"].schedule == old.table().routes["r"].schedule


def test_admin_flags_carry_over() -> None:
    old = _learnt()
    old.kill_switch = True
    old.paused = True
    new = SpeculationController(_settings(), [RouteSpec("r", "p", 0, 4)], [PoolSpec("p", 4)])
    new.carry_from(old)
    assert new.kill_switch and new.paused


@settings(max_examples=60, deadline=None)
@given(
    old_k=st.integers(0, 6),
    k_min=st.integers(0, 6),
    span=st.integers(0, 6),
    pool_max=st.integers(0, 8),
    pin=st.none() | st.integers(0, 12),
)
def test_carried_k_is_always_within_the_new_bounds(
    old_k: int, k_min: int, span: int, pool_max: int, pin: int | None
) -> None:
    old = SpeculationController(_settings(), [RouteSpec("r", "p", 0, 8)], [PoolSpec("p", 8)])
    old.pin("r", old_k)
    old.tick(1.0, {"p": 1.0})
    k_max = k_min + span
    config_pin = None if pin is None else max(k_min, min(k_max, pin))
    new = SpeculationController(_settings(), [RouteSpec("r", "p", k_min, k_max, config_pin)], [PoolSpec("p", 8)])
    new.carry_from(old)
    new.tick(2.0, {"p": 1.0})
    d = new.table().routes["r"]
    top = min(k_max, 8)
    assert min(k_min, top) <= d.k <= top
    assert all(min(k_min, top) <= k <= top for _, k in d.schedule or ())


def test_drift_detectors_of_remaining_routes_keep_their_baseline_and_state() -> None:
    old = DriftMonitor(["a", "b"], DriftSettings(min_trials=10, baseline_windows=2))
    for _ in range(4):
        old.add("a", 10, 8)
    assert old.state("a") == "ok"
    new = DriftMonitor(["a", "c"], DriftSettings(min_trials=20, baseline_windows=2))
    new.carry_from(old)
    assert new.state("a") == "ok" and new.detectors["a"].p0 == old.detectors["a"].p0
    assert new.detectors["a"].settings.min_trials == 20
    assert new.state("c") == "learning" and "b" not in new.detectors
