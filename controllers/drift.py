"""Drift detection on a route's draft acceptance. Pure: windows of counts in, alert state out.

Each verified draft position is a Bernoulli trial. Trials are gathered into windows of at least
`min_trials`. The first `baseline_windows` windows learn the baseline rate p0 and the dispersion factor
phi (real traffic is overdispersed: requests are correlated, so the binomial variance is too small). Each
later window gives z = (p - p0) / sqrt(phi * p0 (1 - p0) / n), and two detectors watch for a *drop*:

- CUSUM (shift of about one standard error or more): S = max(0, S - z - k), alarm when S > h;
- EWMA (slow drift): e = lam * z + (1 - lam) * e, alarm when e < -L * sqrt(lam / (2 - lam)).

An alert fires only after `confirm` consecutive alarming windows, or when the rate stays below the route's
break-even acceptance (where speculation stops paying) for `confirm` windows, for a route whose baseline was
above it (a route that never paid is not drifting; the controller simply keeps it off). It resolves after `confirm`
consecutive windows back near the baseline (z > -1) and above break-even; the detectors then restart.

False alarms over many routes: the CUSUM threshold grows with the log of the number of routes watched
(h = h0 + ln(routes)), which keeps the family-wise false-alarm rate about that of one route at h0; together
with the minimum window size and the confirmation, this is measured in bench/drift_eval.py.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Literal

__all__ = [
    "DriftDetector",
    "DriftEvent",
    "DriftMonitor",
    "DriftSettings",
    "DriftUpdate",
    "first_position",
    "position_trials",
]

State = Literal["learning", "ok", "firing"]


@dataclass(frozen=True, slots=True)
class DriftSettings:
    min_trials: int = 200
    baseline_windows: int = 30
    cusum_k: float = 0.5
    cusum_h: float = 8.0
    ewma_lambda: float = 0.1
    ewma_l: float = 3.5
    confirm: int = 2
    # Besides `confirm` windows: how long the condition must have held before the alert fires, and how long the
    # recovery before it resolves (Prometheus' `for` and `keep_firing_for`). Measured from the first window of the
    # run to the last; 0 counts windows alone.
    for_s: float = 0.0
    keep_firing_for_s: float = 0.0
    # A window below break-even counts only when acceptance also fell against the baseline by this many standard
    # errors: break-even moves with load (more load, a higher bar), and load is the controller's business, not drift.
    break_even_z: float = 2.0
    routes: int = 1

    @property
    def h(self) -> float:
        return self.cusum_h + math.log(max(1, self.routes))


@dataclass(frozen=True, slots=True)
class DriftUpdate:
    state: State
    changed: bool
    rate: float
    z: float
    reason: str


@dataclass
class DriftDetector:
    settings: DriftSettings = field(default_factory=DriftSettings)
    state: State = "learning"
    p0: float | None = None
    phi: float = 1.0
    cusum: float = 0.0
    ewma: float = 0.0
    _trials: float = 0.0
    _passes: float = 0.0
    _baseline: list[tuple[float, float]] = field(default_factory=list)
    _alarm_run: int = 0
    _below_run: int = 0
    _ok_run: int = 0
    # When the current run of alarming / below-break-even / recovered windows began (`now` of its first window).
    _alarm_since: float = 0.0
    _below_since: float = 0.0
    _ok_since: float = 0.0
    # Trials in the last closed window.
    last_trials: float = 0.0
    reason: str = ""

    def add(
        self, trials: float, passes: float, break_even: float | None = None, now: float = 0.0
    ) -> DriftUpdate | None:
        """Add counts; returns an update each time a window closes, else None."""
        self._trials += trials
        self._passes += passes
        if self._trials < self.settings.min_trials:
            return None
        n, s = self._trials, self._passes
        self._trials = self._passes = 0.0
        self.last_trials = n
        return self._window(n, min(s, n) / n, break_even, now)

    def _learn(self, n: float, p: float) -> DriftUpdate:
        self._baseline.append((n, p))
        if len(self._baseline) >= self.settings.baseline_windows:
            total = sum(w for w, _ in self._baseline)
            self.p0 = min(0.999, max(0.001, sum(w * q for w, q in self._baseline) / total))
            ratios = [(q - self.p0) ** 2 / (self.p0 * (1 - self.p0) / w) for w, q in self._baseline]
            # An upper confidence bound of the dispersion, not the point estimate: a variance estimated from
            # B windows is uncertain by about sqrt(2 / (B - 1)), and underestimating it means false alarms.
            b = len(ratios)
            self.phi = max(1.0, sum(ratios) / max(1, b - 1)) * (1 + 2 * math.sqrt(2 / max(1, b - 1)))
            self.state = "ok"
            return DriftUpdate("ok", True, p, 0.0, f"baseline learned: p0={self.p0:.3f}, dispersion {self.phi:.2f}")
        return DriftUpdate("learning", False, p, 0.0, "learning the baseline")

    def _window(self, n: float, p: float, break_even: float | None, now: float) -> DriftUpdate:
        if self.p0 is None:
            return self._learn(n, p)
        s = self.settings
        z = (p - self.p0) / math.sqrt(self.phi * self.p0 * (1 - self.p0) / n)
        self.cusum = max(0.0, self.cusum - z - s.cusum_k)
        self.ewma = s.ewma_lambda * z + (1 - s.ewma_lambda) * self.ewma
        ewma_limit = -s.ewma_l * math.sqrt(s.ewma_lambda / (2 - s.ewma_lambda))
        # The window itself must be low too: CUSUM and EWMA remember a large drop for many windows after it ended,
        # and "the condition held for `for_s`" means acceptance stayed low, not that a blip is still being paid off.
        alarm = (self.cusum > s.h or self.ewma < ewma_limit) and z < -1.0
        below = break_even is not None and p < break_even < self.p0 and z <= -s.break_even_z
        self._alarm_run, self._alarm_since = _run(alarm, self._alarm_run, self._alarm_since, now)
        self._below_run, self._below_since = _run(below, self._below_run, self._below_since, now)
        recovered = z > -1.0 and not below
        self._ok_run, self._ok_since = _run(recovered, self._ok_run, self._ok_since, now)
        if self.state != "firing":
            if self._below_run >= s.confirm and now - self._below_since >= s.for_s:
                return self._fire(p, z, f"acceptance {p:.3f} below break-even {break_even:.3f}")
            if self._alarm_run >= s.confirm and now - self._alarm_since >= s.for_s:
                which = "CUSUM" if self.cusum > s.h else "EWMA"
                return self._fire(p, z, f"{which}: acceptance {p:.3f} vs baseline {self.p0:.3f} (z={z:.1f})")
            return DriftUpdate(self.state, False, p, z, "")
        if self._ok_run >= s.confirm and now - self._ok_since >= s.keep_firing_for_s:
            self.state = "ok"
            self.cusum = self.ewma = 0.0
            self._alarm_run = self._below_run = 0
            self.reason = f"recovered: acceptance {p:.3f} vs baseline {self.p0:.3f}"
            return DriftUpdate("ok", True, p, z, self.reason)
        return DriftUpdate("firing", False, p, z, self.reason)

    def _fire(self, p: float, z: float, reason: str) -> DriftUpdate:
        self.state = "firing"
        self._ok_run = 0
        self.reason = reason
        return DriftUpdate("firing", True, p, z, reason)


def _run(holds: bool, run: int, since: float, now: float) -> tuple[int, float]:
    """A run of consecutive windows where a condition holds: its length, and when its first window closed."""
    if not holds:
        return 0, now
    return run + 1, (now if run == 0 else since)


def first_position(histogram: tuple[int, ...] | list[int]) -> tuple[int, int]:
    """(trials, passes) of draft position 1 from an acceptance histogram of drafted steps (vLLM's, index j = steps
    that accepted j drafts): every drafted step tries position 1, and passes it when it accepted any draft. What drift
    is judged on: unlike the pooled positions 1..k, it does not move when k does (deeper positions pass less often, so
    a larger k lowers the pooled rate with nothing drifting), and steps where the drafter proposed nothing are not in
    the histogram (they say the text does not repeat, not that the drafter diverged)."""
    return sum(histogram), sum(histogram[1:])


def position_trials(histogram: tuple[int, ...] | list[int], k: int) -> tuple[int, int]:
    """(trials, passes) over draft positions 1..k from an acceptance histogram (index j = steps that accepted
    j drafts): position i is tried in every step whose first i - 1 drafts passed."""
    top = min(k, len(histogram) - 1)
    if top <= 0:
        return 0, 0
    at_least = [0] * (len(histogram) + 1)
    for j in range(len(histogram) - 1, -1, -1):
        at_least[j] = at_least[j + 1] + histogram[j]
    trials = sum(at_least[i - 1] for i in range(1, top + 1))
    passes = sum(at_least[i] for i in range(1, top + 1))
    return trials, passes


@dataclass(frozen=True, slots=True)
class DriftEvent:
    """A route's alert state changed (firing or resolved), with what the detector saw."""

    route: str
    state: State
    rate: float
    baseline: float | None
    z: float
    reason: str
    # Position-1 trials in the window that decided it.
    trials: float = 0.0


class DriftMonitor:
    """One detector per route; the CUSUM threshold accounts for how many routes are watched."""

    def __init__(self, routes: list[str], settings: DriftSettings | None = None) -> None:
        self.settings = replace(settings or DriftSettings(), routes=max(1, len(routes)))
        self.detectors = {r: DriftDetector(self.settings) for r in routes}
        self.last_rate: dict[str, float] = {}

    def carry_from(self, old: DriftMonitor, fresh: Collection[str] = ()) -> None:
        """Go on from `old` after a config reload: routes that still exist keep their baseline, their state (a firing
        alert stays firing until it recovers) and their last rate, under the new settings. Routes in `fresh` (their
        drafter changed: another pool, method or k) start over: their baseline described the old drafter."""
        for route in [r for r in self.detectors if r not in fresh]:
            before = old.detectors.get(route)
            if before is not None:
                before.settings = self.settings
                self.detectors[route] = before
            if route in old.last_rate:
                self.last_rate[route] = old.last_rate[route]

    def add(
        self, route: str, trials: float, passes: float, break_even: float | None = None, now: float = 0.0
    ) -> DriftEvent | None:
        """Counts for a route; an event when its alert starts firing or resolves, else None."""
        det = self.detectors.get(route)
        if det is None or trials <= 0:
            return None
        before = det.state
        update = det.add(trials, passes, break_even, now)
        if update is None:
            return None
        self.last_rate[route] = update.rate
        if update.changed and (update.state == "firing" or before == "firing"):
            return DriftEvent(route, update.state, update.rate, det.p0, update.z, update.reason, det.last_trials)
        return None

    def state(self, route: str) -> State:
        return self.detectors[route].state
