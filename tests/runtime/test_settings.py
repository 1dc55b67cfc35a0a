"""The config -> pure settings edge: what the controllers get is what the config says."""

from __future__ import annotations

import pytest
from specgate.controllers.decisions import KBounds
from specgate.controllers.routing import RequestFeatures, Rule, select_route
from specgate.runtime.settings import route_bounds, route_rules

from specgate.config import RoutingConfig

ROUTING = RoutingConfig.model_validate(
    {
        "routes": [
            {"name": "code", "match": [{"classes": ["code"], "api": "chat"}, {"system_regex": "(?i)python"}]},
            {"name": "tenant", "match": [{"tenants": ["a"], "models": ["m"], "min_prompt_chars": 3}], "k": {"pin": 2}},
        ],
        "default_route": "other",
    }
)


def test_rules_keep_every_condition_and_the_priority_order() -> None:
    rules = route_rules(ROUTING)
    assert [r.name for r in rules] == ["code", "tenant"]
    assert rules[0].rules == (Rule(api="chat", classes=frozenset({"code"})), Rule(system_regex="(?i)python"))
    assert rules[1].rules == (Rule(models=frozenset({"m"}), tenants=frozenset({"a"}), min_prompt_chars=3),)
    assert select_route(rules, "other", RequestFeatures("m", "chat", classify=lambda: "code")) == "code"
    assert select_route(rules, "other", RequestFeatures("m", "chat", tenant="a", prompt_chars=5)) == "tenant"
    assert select_route(rules, "other", RequestFeatures("m", "completions", classify=lambda: "code")) == "other"


def test_bounds_cover_the_default_route() -> None:
    bounds = route_bounds(ROUTING)
    assert bounds == {"code": KBounds(), "tenant": KBounds(pin=2), "other": KBounds()}


def test_a_pools_declared_drafting_cost_reaches_its_step_time_prior() -> None:
    from specgate.runtime.settings import build_controller

    from specgate.config import validate_config

    pool = {"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9"]}
    speculation = {"method": "draft_model", "max_k": 4}
    declared = build_controller(
        validate_config({"pools": [{**pool, "speculation": {**speculation, "draft_cost": 0.02}}]})
    )
    default = build_controller(validate_config({"pools": [{**pool, "speculation": speculation}]}))
    t0 = default.cost_model("p").prior[0]
    assert declared.cost_model("p").prior[2] == 0.02 * t0
    assert default.cost_model("p").prior[2] == 0.1 * t0  # the draft_model round number (cost_model.DRAFTERS)


def test_a_measured_step_time_is_the_pools_step_time_prior() -> None:
    """`speculation.step_time`: the operator's measured step time replaces the cost prior's round numbers (floor,
    slope, knee, draft token cost) as the starting point of the pool's step-time fit; t3 stays the method's."""
    from specgate.runtime.settings import build_controller

    from specgate.config import validate_config

    pool = {"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9"]}
    measured = {"floor_s": 0.009, "per_token_s": 0.00006, "knee_tokens": 8, "draft_token_cost": 0.34}
    speculation = {"method": "eagle", "max_k": 4, "step_time": measured}
    model = build_controller(validate_config({"pools": [{**pool, "speculation": speculation}]})).cost_model("p")
    assert model.shape == (0.34, 8.0)
    assert model.prior[:2].tolist() == [0.009, 0.00006] and model.prior[2] == pytest.approx(0.04 * 0.009)
    assert model.predict(1, 0, 0) == pytest.approx(0.009)
    assert model.predict(100, 2, 2) == pytest.approx(0.009 + 0.00006 * (100 * 1.68 - 8) + 2 * 0.04 * 0.009)


def test_every_controller_setting_in_the_config_reaches_the_controller() -> None:
    """Each `controller.*` key (other than the two mapped under other names) arrives in ControllerSettings, with the
    value the config gives it, not the default: a key added to the config and forgotten here would be a no-op."""
    from specgate.runtime.settings import build_controller

    from specgate.config import ControllerConfig, validate_config

    pool = {"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9"]}
    changed = {
        "z": 0.0,
        "prior_weight": 7.0,
        "half_life_s": 33.0,
        "max_step": 3,
        "kv_draft_share": 0.07,
        "change_z": 0.0,
        "recent_half_life_s": 9.0,
        "explore_futile_requests": 5.0,
        "cold_start_paying_share": 0.5,
        "objective": "goodput",
    }
    settings = build_controller(validate_config({"pools": [pool], "controller": changed})).settings
    for key, value in changed.items():
        assert getattr(settings, key) == value
    assert settings.adaptive is ControllerConfig().enabled
    defaults = build_controller(validate_config({"pools": [pool]})).settings
    for key in ControllerConfig.model_fields.keys() - {"enabled", "cost_prior"}:
        assert getattr(defaults, key) == getattr(ControllerConfig(), key), key


def test_the_objective_sets_where_each_pools_schedules_are_chosen_for_the_tpot() -> None:
    """`controller.objective`: "tpot" (default) from batch 1 in every pool; "goodput" from the engines' step limit
    up where a pool gives it (`speculation.max_num_seqs`), nowhere else; anything else is a config error."""
    from specgate.runtime.settings import build_controller

    from specgate.config import ConfigError, validate_config

    speculation = {"method": "eagle", "max_k": 4, "max_num_seqs": 192}
    pools = [
        {"name": "a", "model": "m", "endpoints": ["http://127.0.0.1:9"], "speculation": speculation},
        {"name": "b", "model": "m", "endpoints": ["http://127.0.0.1:10"]},
    ]
    tpot = build_controller(validate_config({"pools": pools}))
    goodput = build_controller(validate_config({"pools": pools, "controller": {"objective": "goodput"}}))
    assert [tpot._full_at(p) for p in ("a", "b")] == [1, 1]
    assert [goodput._full_at(p) for p in ("a", "b")] == [192, None]
    with pytest.raises(ConfigError, match="objective"):
        validate_config({"pools": pools, "controller": {"objective": "throughput"}})


def test_the_engines_max_num_seqs_reaches_the_pools_schedule_problem() -> None:
    """`speculation.max_num_seqs`: under the goodput objective, the batch size from which the pool's routes take the
    ks of the least TPOT (controllers/schedule.py, `PoolProblem.full_at`); unset, goodput at every batch size."""
    from specgate.runtime.settings import build_controller

    from specgate.config import ConfigError, validate_config

    pool = {"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9"]}
    speculation = {"method": "eagle", "max_k": 4}
    full = build_controller(validate_config({"pools": [{**pool, "speculation": {**speculation, "max_num_seqs": 192}}]}))
    plain = build_controller(validate_config({"pools": [{**pool, "speculation": speculation}]}))
    assert full._pools["p"].max_num_seqs == 192
    assert plain._pools["p"].max_num_seqs is None
    with pytest.raises(ConfigError, match="max_num_seqs needs speculation"):
        validate_config({"pools": [{**pool, "speculation": {"method": "none", "max_num_seqs": 192}}]})
    with pytest.raises(ConfigError, match="max_num_seqs"):
        validate_config({"pools": [{**pool, "speculation": {**speculation, "max_num_seqs": 0}}]})
