"""Do the routes group requests of similar acceptance? Pure.

Routes exist so that each gets the k its requests pay for; that works when a route's requests accept drafts alike.
Per request, draft position 1 of its drafted steps gives (trials n, passes s) (controllers/drift.py first_position:
the same on every k, steps without a proposal left out). Over a route's recent requests (decayed by `half_life_s`):

- the spread: the standard deviation of per-request acceptance s/n around the route's mean, weighted by trials, with
  the binomial noise a request of n trials has anyway taken out. Large: the route mixes requests that accept very
  differently (code that copies and prose that does not): it should be split, each part would get its own k;
- two routes on the same pool whose means are within `merge_within` of each other (and whose spreads are small)
  behave the same: they could be merged (fewer routes: each learns faster).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["RouteAdvice", "RouteSpread", "advise"]


@dataclass
class RouteSpread:
    """Decayed sums over a route's requests of trials, passes and the trial-weighted squared acceptance."""

    half_life_s: float = 600.0
    requests: float = 0.0
    trials: float = 0.0
    passes: float = 0.0
    # sum of n * (s/n)^2 = s^2 / n, and of the binomial variance's share, s (n - s) / (n (n - 1)) per request.
    _sq: float = 0.0
    _noise: float = 0.0
    _at: float | None = None

    def decay_to(self, now: float) -> None:
        """Age the sums to `now`: a route whose traffic stopped fades out of the check instead of keeping its last
        verdict."""
        if self._at is not None and self.half_life_s > 0:
            f = 0.5 ** (max(0.0, now - self._at) / self.half_life_s)
            self.requests *= f
            self.trials *= f
            self.passes *= f
            self._sq *= f
            self._noise *= f
        self._at = now

    def add(self, trials: int, passes: int, now: float) -> None:
        """One request's position-1 trials and passes; requests with fewer than two trials say nothing of spread."""
        if trials < 2:
            return
        self.decay_to(now)
        self.requests += 1
        self.trials += trials
        self.passes += passes
        self._sq += passes * passes / trials
        # An unbiased estimate of the request's binomial variance of s/n, weighted by n: p(1 - p) n / (n - 1) / n * n.
        self._noise += passes * (trials - passes) / (trials * (trials - 1))

    @property
    def mean(self) -> float | None:
        return self.passes / self.trials if self.trials else None

    @property
    def spread(self) -> float | None:
        """Trial-weighted standard deviation of per-request acceptance beyond binomial noise; None without data."""
        if self.requests < 2 or not self.trials:
            return None
        p = self.passes / self.trials
        between = (self._sq - self.trials * p * p - self._noise) / self.trials
        return math.sqrt(max(0.0, between))


@dataclass(frozen=True, slots=True)
class RouteAdvice:
    kind: str  # "split" or "merge"
    routes: tuple[str, ...]
    reason: str


def advise(
    spreads: dict[str, tuple[str, RouteSpread]],
    *,
    split_above: float = 0.25,
    merge_within: float = 0.05,
    min_requests: float = 30.0,
) -> list[RouteAdvice]:
    """`spreads`: route -> (its pool, its spread). Routes with fewer than `min_requests` recent requests are not
    judged."""
    ready = {
        name: (pool, s) for name, (pool, s) in spreads.items() if s.requests >= min_requests and s.mean is not None
    }
    out: list[RouteAdvice] = []
    for name, (_, s) in sorted(ready.items()):
        spread = s.spread
        if spread is not None and spread > split_above:
            out.append(
                RouteAdvice(
                    "split",
                    (name,),
                    f"per-request acceptance spreads {spread:.2f} around {s.mean:.2f} over {s.requests:.0f} requests: "
                    "the route mixes requests that accept drafts very differently; split it so each part gets its k",
                )
            )
    names = sorted(ready)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            (pool_a, sa), (pool_b, sb) = ready[a], ready[b]
            if pool_a != pool_b or sa.mean is None or sb.mean is None:
                continue
            tight = all((x.spread or 0.0) <= split_above for x in (sa, sb))
            if tight and abs(sa.mean - sb.mean) <= merge_within:
                out.append(
                    RouteAdvice(
                        "merge",
                        (a, b),
                        f"acceptance {sa.mean:.2f} and {sb.mean:.2f} on pool {pool_a}, both homogeneous: the routes "
                        "behave the same and could be one (each would learn from twice the traffic)",
                    )
                )
    return out
