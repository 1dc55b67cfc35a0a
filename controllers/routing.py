"""Put a request on a route: rules in priority order, first match wins, else the default route. Pure.

The classifier is expensive compared with the other conditions, so a rule asks for the class label only
when its cheaper conditions already hold, and `RequestFeatures.label` is computed at most once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["RequestFeatures", "RouteRules", "Rule", "match_rule", "select_route"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: every condition given (not None) must hold."""

    models: frozenset[str] | None = None
    api: str | None = None
    tenants: frozenset[str] | None = None
    system_regex: str | None = None
    has_tools: bool | None = None
    json_response: bool | None = None
    min_prompt_chars: int | None = None
    max_prompt_chars: int | None = None
    classes: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class RouteRules:
    """A route and its rules; the route matches when any rule does."""

    name: str
    rules: tuple[Rule, ...] = ()


@dataclass(slots=True)
class RequestFeatures:
    model: str
    api: str
    tenant: str | None = None
    system_prompt: str = ""
    has_tools: bool = False
    json_response: bool = False
    prompt_chars: int = 0
    # Called at most once, only when a rule needs the class label.
    classify: Callable[[], str | None] | None = None
    _label: str | None = field(default=None, repr=False)
    _classified: bool = field(default=False, repr=False)

    def label(self) -> str | None:
        if not self._classified:
            self._classified = True
            self._label = self.classify() if self.classify else None
        return self._label


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def match_rule(rule: Rule, f: RequestFeatures) -> bool:
    checks = (
        rule.models is None or f.model in rule.models,
        rule.api is None or f.api == rule.api,
        rule.tenants is None or (f.tenant is not None and f.tenant in rule.tenants),
        rule.has_tools is None or f.has_tools == rule.has_tools,
        rule.json_response is None or f.json_response == rule.json_response,
        rule.min_prompt_chars is None or f.prompt_chars >= rule.min_prompt_chars,
        rule.max_prompt_chars is None or f.prompt_chars <= rule.max_prompt_chars,
        rule.system_regex is None or _regex(rule.system_regex).search(f.system_prompt) is not None,
    )
    if not all(checks):
        return False
    return rule.classes is None or f.label() in rule.classes


def select_route(routes: Sequence[RouteRules], default: str, f: RequestFeatures) -> str:
    for route in routes:
        if any(match_rule(rule, f) for rule in route.rules):
            return route.name
    return default
