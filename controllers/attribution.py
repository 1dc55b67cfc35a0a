"""Per-route acceptance from an engine's speculation counters, when its answers carry no per-request metrics. Pure.

vLLM's `/metrics` counts drafts and accepted tokens by draft position for the whole engine. Between two scrapes
the gateway knows which of its requests were in flight at the endpoint, and for how long: each route gets the
share of the counters' increase that its requests' time in flight is of the total. Exact when the endpoint served
one route in the interval; otherwise a route with low acceptance is credited with some of its neighbours' accepted
tokens and the reverse, in proportion to how much they overlapped (measured on the real engine:
tests/runtime/test_counter_acceptance_vllm.py, docs/engines.md). Requests of other gateway replicas, and time
spent queued or in prefill, are not seen: they blur the shares the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["InFlightShares", "RouteShare", "attribute"]


class InFlightShares:
    """Request-seconds in flight per route at one endpoint since the last `take`. O(1) per request start and end."""

    __slots__ = ("_active", "_at", "_weight")

    def __init__(self, now: float = 0.0) -> None:
        self._active: dict[str, int] = {}
        self._weight: dict[str, float] = {}
        self._at = now

    def _advance(self, now: float) -> None:
        dt = now - self._at
        if dt <= 0:
            return
        for route, n in self._active.items():
            self._weight[route] = self._weight.get(route, 0.0) + n * dt
        self._at = now

    def begin(self, route: str, now: float) -> None:
        self._advance(now)
        self._active[route] = self._active.get(route, 0) + 1

    def end(self, route: str, now: float) -> None:
        self._advance(now)
        left = self._active.get(route, 0) - 1
        if left > 0:
            self._active[route] = left
        else:
            self._active.pop(route, None)

    def take(self, now: float) -> dict[str, float]:
        """The request-seconds per route since the last call, and start a new interval."""
        self._advance(now)
        weights, self._weight = self._weight, {}
        return weights

    @property
    def in_flight(self) -> int:
        return sum(self._active.values())


@dataclass(frozen=True, slots=True)
class RouteShare:
    """A route's part of an interval's counter increase (fractions of a count: it is an estimate)."""

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    accepted_per_pos: dict[int, float]


def attribute(
    drafts: float,
    draft_tokens: float,
    accepted_tokens: float,
    accepted_per_pos: Mapping[int, float],
    weights: Mapping[str, float],
) -> dict[str, RouteShare]:
    """Split an interval's counter increases between routes by their weights. Nothing when no route was in flight
    (the drafts were someone else's: another replica, a probe) or nothing was drafted."""
    total = sum(w for w in weights.values() if w > 0)
    if total <= 0 or drafts <= 0:
        return {}
    out: dict[str, RouteShare] = {}
    for route, w in weights.items():
        if w <= 0:
            continue
        share = w / total
        out[route] = RouteShare(
            drafts * share,
            draft_tokens * share,
            accepted_tokens * share,
            {pos: v * share for pos, v in accepted_per_pos.items()},
        )
    return out
