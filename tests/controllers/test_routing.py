from __future__ import annotations

from typing import Any

import pytest
from specgate.controllers.routing import RequestFeatures, RouteRules, Rule, match_rule, select_route


def _rule(spec: dict[str, Any]) -> Rule:
    return Rule(**{key: frozenset(v) if isinstance(v, list) else v for key, v in spec.items()})


def routes(*specs: tuple[str, list[dict[str, Any]]]) -> list[RouteRules]:
    return [RouteRules(name, tuple(_rule(r) for r in rules)) for name, rules in specs]


TABLE = routes(
    ("tenant-a", [{"tenants": ["a"]}]),
    ("json", [{"json_response": True}, {"has_tools": True}]),
    ("code", [{"classes": ["code", "code-edit"]}, {"system_regex": "(?i)python"}]),
    ("small-model", [{"models": ["small"], "api": "completions"}]),
    ("long", [{"min_prompt_chars": 1000}]),
)


@pytest.mark.parametrize(
    ("features", "route"),
    [
        (RequestFeatures("m", "chat"), "default"),
        (RequestFeatures("m", "chat", tenant="a", json_response=True), "tenant-a"),  # first rule wins
        (RequestFeatures("m", "chat", json_response=True), "json"),
        (RequestFeatures("m", "chat", has_tools=True), "json"),
        (RequestFeatures("m", "chat", system_prompt="You write Python."), "code"),
        (RequestFeatures("m", "chat", classify=lambda: "code-edit"), "code"),
        (RequestFeatures("m", "chat", classify=lambda: "chat"), "default"),
        (RequestFeatures("m", "chat", classify=lambda: None), "default"),  # classifier failed: fail open
        (RequestFeatures("small", "completions"), "small-model"),
        (RequestFeatures("small", "chat"), "default"),
        (RequestFeatures("m", "chat", prompt_chars=1000), "long"),
    ],
)
def test_select_route(features: RequestFeatures, route: str) -> None:
    assert select_route(TABLE, "default", features) == route


def test_classifier_called_at_most_once_and_only_when_needed() -> None:
    calls = []

    def classify() -> str:
        calls.append(1)
        return "chat"

    select_route(TABLE, "default", RequestFeatures("m", "chat", tenant="a", classify=classify))
    assert calls == []
    select_route(
        routes(("x", [{"classes": ["a"]}, {"classes": ["b"]}])),
        "d",
        RequestFeatures("m", "chat", classify=classify),
    )
    assert calls == [1]


def test_empty_rule_matches_everything_and_no_rules_match_nothing() -> None:
    f = RequestFeatures("m", "chat")
    assert match_rule(Rule(), f)
    assert select_route(routes(("never", [])), "d", f) == "d"
