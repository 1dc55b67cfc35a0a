"""The config -> pure settings edge: what the controllers get is what the config says."""

from __future__ import annotations

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
