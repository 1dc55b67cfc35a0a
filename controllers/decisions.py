"""The decision table: each route's k, versioned and immutable.

The request path reads `DecisionTable` through a plain attribute: swapping in a new table is one
reference assignment, so readers never lock, await or see half an update.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from specgate.controllers.k_schedule import Schedule, compress, k_at

__all__ = ["DecisionTable", "KBounds", "RouteDecision", "static_table"]


@dataclass(frozen=True, slots=True)
class KBounds:
    """A route's speculation bounds; `pin` fixes k."""

    min: int = 0
    max: int = 16
    pin: int | None = None


@dataclass(frozen=True, slots=True)
class RouteDecision:
    k: int
    reason: str
    # A share of the route's requests runs at explore_k, so acceptance above k stays known.
    explore_k: int | None = None
    explore_share: float = 0.0
    # k by the engine's batch size, ((1, k1), (b2, k2), ...): k from each listed size up to the next. None: the
    # controller does not adapt (static mode); `k` holds for every batch size.
    schedule: Schedule | None = None
    # An explorer runs explore_k up to this batch size and the route's schedule past it (where exploring was not
    # found to pay: its drafts slow every request of a batch, and a load ramp can take it there within its life).
    # None: at any batch size.
    explore_until: int | None = None

    def k_at(self, batch: int) -> int:
        """The k for a request that joins a batch of `batch` requests: the schedule's, else `k`."""
        return self.k if self.schedule is None else k_at(self.schedule, batch)

    def explore_k_at(self, batch: int) -> int:
        """An exploring request's k at a batch of `batch` requests (explore_k must be set): at least explore_k up to
        explore_until (more where the route's own schedule drafts more there: an explorer never drafts less than the
        route's other requests), the route's k past it."""
        assert self.explore_k is not None
        k = self.k_at(batch)
        return max(k, self.explore_k) if self.explore_until is None or batch <= self.explore_until else k

    def explorer_schedule(self) -> Schedule:
        """`explore_k_at` as a schedule, for engines that apply one per step (explore_k must be set)."""
        assert self.explore_k is not None
        route = self.schedule if self.schedule is not None else ((1, self.k),)
        if self.explore_until is None:
            return compress([(lo, max(k, self.explore_k)) for lo, k in route])
        above = self.explore_until + 1
        below = [(lo, max(k, self.explore_k)) for lo, k in route if lo < above]
        later = [(lo, k) for lo, k in route if lo > above]
        return compress([*below, (above, self.k_at(above)), *later])


@dataclass(frozen=True, slots=True)
class DecisionTable:
    version: int
    routes: Mapping[str, RouteDecision]
    fallback_k: int = 0

    def k_for(self, route: str) -> int:
        decision = self.routes.get(route)
        return self.fallback_k if decision is None else decision.k


def static_table(bounds_by_route: Mapping[str, KBounds], engine_max_k: int, version: int = 1) -> DecisionTable:
    """k per route from its bounds alone: the pin if set, else the engines' max k within the route's bounds."""
    routes: dict[str, RouteDecision] = {}
    for name, bounds in bounds_by_route.items():
        if bounds.pin is not None:
            routes[name] = RouteDecision(bounds.pin, "pinned in config")
        else:
            k = max(bounds.min, min(bounds.max, engine_max_k))
            routes[name] = RouteDecision(k, "static: engine max k within route bounds")
    return DecisionTable(version, MappingProxyType(routes), fallback_k=engine_max_k)
