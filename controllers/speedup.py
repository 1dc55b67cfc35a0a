"""Measured speed-up per route: time per output token of the route's requests that ran without speculation
against those that ran with it, both as exponentially weighted means over recent requests. Pure.

Both sides come from live traffic: a route at k > 0 still sends its exploration share (or the requests of a
pinned-off period) at other k, and a route at k = 0 sends its exploration share at k > 0. The figure is `None`
until each side has seen `min_samples` requests, so a dashboard never shows a ratio of two guesses. Requests
of one route are alike enough for this to be meaningful; the batch they ran in still adds noise, which is why the
controller itself decides from the acceptance estimate and the step-time model, and this is for operators to
check those against.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SpeedupMeter"]


@dataclass
class _Ewma:
    value: float = 0.0
    weight: float = 0.0
    count: int = 0

    def add(self, x: float, decay: float) -> None:
        self.count += 1
        self.weight = self.weight * decay + 1.0
        self.value += (x - self.value) / self.weight


@dataclass
class SpeedupMeter:
    # Each new request weighs 1; older ones fade with this factor per request.
    decay: float = 0.98
    min_samples: int = 5
    _off: dict[str, _Ewma] = field(default_factory=dict)
    _on: dict[str, _Ewma] = field(default_factory=dict)

    def add(self, route: str, k: int, completion_tokens: int, seconds: float | None) -> None:
        if not seconds or seconds <= 0 or completion_tokens < 2:
            return
        side = self._on if k > 0 else self._off
        side.setdefault(route, _Ewma()).add(seconds / completion_tokens, self.decay)

    def speedup(self, route: str) -> float | None:
        off, on = self._off.get(route), self._on.get(route)
        if off is None or on is None or off.count < self.min_samples or on.count < self.min_samples:
            return None
        return off.value / on.value if on.value > 0 else None
