"""Per-endpoint circuit breaker. Pure: the caller passes the clock.

closed --(failure_threshold consecutive failed tries)--> open --(open_s)--> half-open
half-open: one trial request at a time; success -> closed, failure -> open again for twice as long (up to
max_open_s). Health checks are a separate, slower signal (an engine can answer /health and still fail requests);
the breaker reacts to what real requests see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["BreakerSettings", "CircuitBreaker"]

State = Literal["closed", "open", "half_open"]


@dataclass(frozen=True, slots=True)
class BreakerSettings:
    failure_threshold: int = 5
    open_s: float = 10.0
    max_open_s: float = 120.0


@dataclass(slots=True)
class CircuitBreaker:
    settings: BreakerSettings = BreakerSettings()
    state: State = "closed"
    failures: int = 0
    opened_at: float = 0.0
    open_for: float = 0.0
    trial_in_flight: bool = False
    opens: int = 0

    def allows(self, now: float) -> bool:
        """May a request be sent now? (Moves open -> half-open when the wait is over.)"""
        if self.state == "open" and now - self.opened_at >= self.open_for:
            self.state = "half_open"
            self.trial_in_flight = False
        if self.state == "closed":
            return True
        return self.state == "half_open" and not self.trial_in_flight

    def on_dispatch(self) -> None:
        if self.state == "half_open":
            self.trial_in_flight = True

    def on_success(self) -> None:
        self.state = "closed"
        self.failures = 0
        self.trial_in_flight = False
        self.open_for = 0.0

    def on_abandoned(self) -> None:
        """The request ended without a verdict (the client left): let the next trial through."""
        self.trial_in_flight = False

    def on_failure(self, now: float) -> None:
        self.failures += 1
        if self.state == "half_open":
            self._open(now, min(self.settings.max_open_s, max(self.open_for, self.settings.open_s) * 2))
        elif self.state == "closed" and self.failures >= self.settings.failure_threshold:
            self._open(now, self.settings.open_s)

    def _open(self, now: float, seconds: float) -> None:
        self.state = "open"
        self.opened_at = now
        self.open_for = seconds
        self.trial_in_flight = False
        self.opens += 1
