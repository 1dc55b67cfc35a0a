from __future__ import annotations

import pytest

from controllers.routing import RequestFeatures, match_rule, select_route
from gateway.config import RouteConfig, RouteMatch


def routes(*specs: tuple[str, list[dict]]) -> list[RouteConfig]:
    return [RouteConfig.model_validate({"name": name, "match": rules}) for name, rules in specs]


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
    assert match_rule(RouteMatch(), f)
    assert select_route(routes(("never", [])), "d", f) == "d"
