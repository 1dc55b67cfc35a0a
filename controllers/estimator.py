"""Per-position draft acceptance for one (route, pool), with forgetting and honest uncertainty.

Evidence comes from vLLM's per-request acceptance histogram: `hist[j]` = verify steps in which exactly j
drafts were accepted. With N steps and A_i = steps with at least i accepted, position i (1-based) was
*tried* A_{i-1} times (A_0 = N) and *passed* A_i times, so the conditional acceptance
alpha_i = P(draft i accepted | drafts 1..i-1 accepted) has a Beta posterior. Positions above the k a request
ran at get no evidence from it: unknown, not zero.

    a_i = prod_{j<=i} alpha_j            (P(first i drafts all accepted))
    E[L(k)] = 1 + sum_{i=1..k} a_i       (expected tokens per verify step, bonus token included)

`expected_length(k, pessimistic=True)` uses a lower credible bound of each alpha_i, so a route with little
data is not switched on out of optimism. Evidence decays with half-life `half_life_s` (exponential
forgetting), so a change in the traffic is followed.

An n-gram (or suffix) drafter proposes nothing when the text does not repeat: such a step yields one token and
verifies no drafts. For the tokens per step it is a rejection at position 1 (the caller folds it in there), but it
costs no verify work, so the cost side needs the proposal rate q = steps with a proposal / steps that could draft:
a route at k drafts q k tokens per step on average. `proposal_rate()` is 1 until steps without a proposal are seen.

A route starts with no evidence, so k = 0 until exploration has measured it. `prior` (another estimator: the pool's,
from the engines' own per-position counters, all routes together) lends each position up to `prior_weight` trials at
its own rate, so a new route starts where its pool is, and its own evidence outweighs the loan within a few requests.

A step change (a drafter that drifted, then a fix landing) would take several half-lives to be believed. With
`change_z` > 0 the estimator also keeps a recent window (half-life `recent_half_life_s`) and compares requests'
position-1 acceptance there with the older evidence: when the two means differ by more than `change_z` standard
errors, the older evidence is dropped: the estimator is rebuilt from its log of recent requests (the last
`_CHANGE_LOG`) after the split that best separates an older and a newer mean (the recent window alone would still be
mostly requests from before the change). The standard error comes from the
spread of per-request rates, not from the binomial count of steps: a request's steps are correlated and requests
differ (real traffic is overdispersed, controllers/drift.py), so counting steps as independent trials would see a
change in every few requests. Evidence from engine counters (`observe_positions`) has no requests and is not judged.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Sequence

import numpy as np

__all__ = ["AcceptanceEstimator", "pessimistic_lengths", "wilson_lower", "wilson_upper"]

# Requests a window must hold (decayed weight) before it is compared, and the least variance of per-request rates
# assumed (a window of identical rates, e.g. all 0, would otherwise make any difference infinitely significant).
_CHANGE_MIN_REQUESTS = 4.0
_CHANGE_MIN_VARIANCE = 1e-3
# Requests kept to find where a change began.
_CHANGE_LOG = 256


def wilson_lower(successes: float, trials: float, z: float) -> float:
    """Lower end of the Wilson score interval (0 with no trials); works with fractional (decayed) counts."""
    if trials <= 1e-12:  # decayed (or lent) to nothing: squaring it would underflow to a division by zero
        return 0.0
    centre, spread = _wilson(successes, trials, z)
    return max(0.0, centre - spread)


def wilson_upper(successes: float, trials: float, z: float) -> float:
    """Upper end of the Wilson score interval (1 with no trials)."""
    if trials <= 1e-12:
        return 1.0
    centre, spread = _wilson(successes, trials, z)
    return min(1.0, centre + spread)


def _wilson(successes: float, trials: float, z: float) -> tuple[float, float]:
    """The Wilson score interval's centre and half-width."""
    p = min(1.0, max(0.0, successes / trials))
    denom = 1.0 + z * z / trials
    centre = p + z * z / (2 * trials)
    spread = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return centre / denom, spread / denom


class _RateMoments:
    """Decayed count, sum and sum of squares of per-request rates."""

    __slots__ = ("at", "n", "s1", "s2")

    def __init__(self) -> None:
        self.n = self.s1 = self.s2 = 0.0
        self.at: float | None = None

    def add(self, rate: float, now: float, half_life_s: float) -> None:
        if self.at is not None and now > self.at and half_life_s > 0:
            f = 0.5 ** ((now - self.at) / half_life_s)
            self.n, self.s1, self.s2 = self.n * f, self.s1 * f, self.s2 * f
        if self.at is None or now > self.at:
            self.at = now
        self.n += 1.0
        self.s1 += rate
        self.s2 += rate * rate


def changed(recent: _RateMoments, whole: _RateMoments, z: float) -> bool:
    """Whether the recent requests' mean rate differs from the older ones' (whole minus recent: the recent window
    forgets faster, so what remains weighs older requests) by more than z standard errors, with the spread of rates
    within each part pooled (the whole window's spread would include the change itself and hide it)."""
    old_n = whole.n - recent.n
    if recent.n < _CHANGE_MIN_REQUESTS or old_n < _CHANGE_MIN_REQUESTS:
        return False
    new_mean = recent.s1 / recent.n
    old_mean = (whole.s1 - recent.s1) / old_n
    within = (recent.s2 - recent.n * new_mean * new_mean) + (whole.s2 - recent.s2 - old_n * old_mean * old_mean)
    variance = max(_CHANGE_MIN_VARIANCE, within / whole.n)
    gap = new_mean - old_mean
    return gap * gap > z * z * variance * (1.0 / recent.n + 1.0 / old_n)


def first_position_rate(groups: Sequence[tuple[Sequence[int], int]]) -> float | None:
    """A request's share of drafted steps whose first draft was accepted; None when no step drafted."""
    tried = passed = 0
    for histogram, k in groups:
        if k > 0 and len(histogram) > 1:
            tried += sum(histogram)
            passed += sum(histogram) - histogram[0]
    return passed / tried if tried > 0 else None


def change_point(rates: Sequence[float]) -> int:
    """The index that best splits a sequence of rates into an older and a newer part of different means (the
    largest two-sample statistic, each part at least `_CHANGE_MIN_REQUESTS` long); the newest few when none can."""
    n = len(rates)
    least = int(_CHANGE_MIN_REQUESTS)
    if n < 2 * least:
        return max(0, n - least)
    head = list(itertools.accumulate(rates))  # head[j - 1]: the sum of the first j

    def score(j: int) -> float:
        gap = head[j - 1] / j - (head[-1] - head[j - 1]) / (n - j)
        return gap * gap * j * (n - j) / n

    return max(range(least, n - least + 1), key=score)


class AcceptanceEstimator:
    def __init__(
        self,
        max_k: int,
        half_life_s: float = 60.0,
        z: float = 1.28,
        change_z: float = 0.0,
        recent_half_life_s: float = 15.0,
    ) -> None:
        if max_k < 0:
            raise ValueError("max_k must be >= 0")
        self.max_k = max_k
        self.half_life_s = half_life_s
        self.z = z
        # Step changes (module docstring): the recent window's evidence, and per-request rates in both windows.
        self.change_z = change_z
        self.recent_half_life_s = recent_half_life_s
        self._log: deque[tuple[float, tuple[tuple[tuple[int, ...], int], ...], float]] = deque(maxlen=_CHANGE_LOG)
        self._moments = _RateMoments()
        self._recent_moments = _RateMoments()
        self.changes = 0
        # When the last step change dropped the older evidence (None: never).
        self.changed_at: float | None = None
        # index i = position (1..max_k); index 0 unused
        self.trials = [0.0] * (max_k + 1)
        self.passes = [0.0] * (max_k + 1)
        # Steps that could draft: with a proposal, and without one (decayed like the rest).
        self.proposed = 0.0
        self.unproposed = 0.0
        self._last: float | None = None

    def decay_to(self, now: float) -> None:
        if self._last is not None and now > self._last and self.half_life_s > 0:
            factor = 0.5 ** ((now - self._last) / self.half_life_s)
            self.trials = [t * factor for t in self.trials]
            self.passes = [p * factor for p in self.passes]
            self.proposed *= factor
            self.unproposed *= factor
        if self._last is None or now > self._last:
            self._last = now

    def observe(self, histogram: Sequence[int], k: int, now: float) -> None:
        """Add one request's histogram; k = the cap it ran at (positions above k learn nothing)."""
        self.decay_to(now)
        steps = sum(histogram)
        if steps <= 0 or k <= 0:
            return
        top = min(k, self.max_k, len(histogram) - 1)
        at_least = [0] * (len(histogram) + 1)
        for j in range(len(histogram) - 1, -1, -1):
            at_least[j] = at_least[j + 1] + histogram[j]
        for i in range(1, top + 1):
            self.trials[i] += at_least[i - 1]
            self.passes[i] += at_least[i]

    def observe_request(self, groups: Sequence[tuple[Sequence[int], int]], now: float) -> None:
        """One request's evidence: (histogram, k) groups as `observe` takes them. With `change_z` > 0, also judged for
        a step change in acceptance against the older evidence (module docstring)."""
        for histogram, k in groups:
            self.observe(histogram, k, now)
        if self.change_z <= 0:
            return
        rate = first_position_rate(groups)
        if rate is None:
            return
        self._log.append((now, tuple((tuple(h), k) for h, k in groups), rate))
        self._add_rate(rate, now)
        if changed(self._recent_moments, self._moments, self.change_z):
            self._restart_at_change(now)

    def _add_rate(self, rate: float, now: float) -> None:
        self._moments.add(rate, now, self.half_life_s)
        self._recent_moments.add(rate, now, self.recent_half_life_s)

    def _restart_at_change(self, now: float) -> None:
        """Keep only the requests since the change: the logged requests after the split that best separates them
        from the ones before (the recent window alone would still be mostly requests from before the change)."""
        log = list(self._log)
        rates = [r for _, _, r in log]
        split = change_point(rates)
        self.trials = [0.0] * (self.max_k + 1)
        self.passes = [0.0] * (self.max_k + 1)
        self._moments, self._recent_moments = _RateMoments(), _RateMoments()
        last = self._last
        self._last = None
        self._log.clear()
        for at, groups, rate in log[split:]:
            for histogram, k in groups:
                self.observe(histogram, k, at)
            self._add_rate(rate, at)
            self._log.append((at, groups, rate))
        self.decay_to(max(now, last or now))
        self.changes += 1
        self.changed_at = max(now, last or now)

    def observe_proposals(self, proposed: int, unproposed: int, now: float) -> None:
        """Steps of one request that could draft: `proposed` carried drafts, `unproposed` found nothing to propose."""
        self.decay_to(now)
        self.proposed += max(0, proposed)
        self.unproposed += max(0, unproposed)

    def proposal_rate(self) -> float:
        """q: the share of steps that carry a proposal (1 with no evidence: every step drafts, as before)."""
        total = self.proposed + self.unproposed
        return 1.0 if total <= 0 else (self.proposed + 1.0) / (total + 1.0)

    def observe_positions(self, tried: Sequence[float], passed: Sequence[float], now: float) -> None:
        """Counts by position 1.. (tried[0] is position 1): what an engine's per-position counters give."""
        self.decay_to(now)
        for i, (t, p) in enumerate(zip(tried, passed, strict=False), 1):
            if i > self.max_k or t <= 0:
                break
            self.trials[i] += t
            self.passes[i] += min(p, t)

    def evidence(self, position: int) -> float:
        return self.trials[position] if 1 <= position <= self.max_k else 0.0

    def alpha(
        self,
        position: int,
        pessimistic: bool = False,
        prior: AcceptanceEstimator | None = None,
        prior_weight: float = 0,
    ) -> float | None:
        """Conditional acceptance at a position; None when there is no evidence there (nor in `prior`)."""
        t = self.evidence(position)
        s = self.passes[position] if t > 0 else 0.0
        if prior is not None and prior_weight > 0:
            lent = min(prior_weight, prior.evidence(position))
            if lent > 0:
                s += lent * prior.passes[position] / prior.trials[position]
                t += lent
        if t <= 0:
            return None
        return wilson_lower(s, t, self.z) if pessimistic else s / t

    def expected_length(
        self, k: int, pessimistic: bool = True, prior: AcceptanceEstimator | None = None, prior_weight: float = 0
    ) -> float:
        """E[L(k)]; an unknown position contributes nothing (pessimistic) or repeats the last known alpha."""
        return self.expected_lengths(max(k, 0), pessimistic, prior, prior_weight)[max(k, 0)]

    def expected_lengths(
        self, k_max: int, pessimistic: bool = True, prior: AcceptanceEstimator | None = None, prior_weight: float = 0
    ) -> tuple[float, ...]:
        """(E[L(0)], ..., E[L(k_max)]) in one pass over the positions: E[L(k)] = 1 + sum over i <= k of the product
        of `alpha` at positions 1..i; an unknown position contributes nothing (pessimistic) or repeats the last known
        alpha. The control loop asks for all of them, for every route, every tick: `alpha` and the Wilson bound are
        written out here, the same operations in the same order (a test holds them to `alpha`)."""
        out = [1.0]
        total = chain = 1.0
        last: float | None = None
        z = self.z
        zz = z * z
        lend = prior is not None and prior_weight > 0
        for i in range(1, min(k_max, self.max_k) + 1):
            t = self.trials[i]
            s = self.passes[i] if t > 0 else 0.0
            if lend:
                assert prior is not None
                lent = min(prior_weight, prior.trials[i] if i <= prior.max_k else 0.0)
                if lent > 0:
                    s += lent * prior.passes[i] / prior.trials[i]
                    t += lent
            a: float | None
            if t <= 0:
                a = None
            elif not pessimistic:
                a = s / t
            elif t <= 1e-12:
                a = 0.0
            else:
                p = min(1.0, max(0.0, s / t))
                denom = 1.0 + zz / t
                centre = p + zz / (2 * t)
                spread = z * math.sqrt(p * (1 - p) / t + zz / (4 * t * t))
                a = max(0.0, centre / denom - spread / denom)
            if a is None:
                if pessimistic or last is None:
                    break
                a = last
            chain *= a
            total += chain
            last = a
            out.append(total)
        out.extend([total] * (k_max + 1 - len(out)))
        return tuple(out)

    def optimistic_lengths(self, k_max: int) -> tuple[float, ...]:
        """E[L(k)] for k = 0..k_max on the upper end of each position's interval (a position without evidence: every
        draft accepted): what speculation could give at best on what has been seen."""
        out = [1.0]
        total = chain = 1.0
        for i in range(1, k_max + 1):
            chain *= wilson_upper(self.passes[i], self.trials[i], self.z) if i <= self.max_k else 1.0
            total += chain
            out.append(total)
        return tuple(out)

    def position_rates(self) -> list[float | None]:
        """a_i (unconditional) by position 1..max_k, point estimates; None where unknown."""
        out: list[float | None] = []
        chain = 1.0
        for i in range(1, self.max_k + 1):
            a = self.alpha(i)
            if a is None:
                out.extend([None] * (self.max_k - i + 1))
                break
            chain *= a
            out.append(chain)
        return out


def pessimistic_lengths(
    estimators: Sequence[AcceptanceEstimator],
    k_maxes: Sequence[int],
    priors: Sequence[AcceptanceEstimator | None],
    prior_weight: float,
) -> list[tuple[float, ...]]:
    """`estimators[i].expected_lengths(k_maxes[i], True, priors[i], prior_weight)` for every i at once, in numpy: the
    control loop asks for every route's every tick (a tenth of a tick for 100 routes, one at a time). The same
    operations in the same order, so the same floats (a test holds them to `expected_lengths`): an unknown position
    takes acceptance 0 here, which adds nothing from there on, as the scalar loop's stop does."""
    if not estimators:
        return []
    width = max(1, max(k_maxes, default=0))
    tops = [min(k, est.max_k) + 1 for est, k in zip(estimators, k_maxes, strict=True)]
    pad = [[0.0] * (width + 1 - top) for top in range(width + 2)]  # zeros past each row's own positions
    trials = np.array([est.trials[:top] + pad[top] for est, top in zip(estimators, tops, strict=True)], dtype=float)
    passes = np.array([est.passes[:top] + pad[top] for est, top in zip(estimators, tops, strict=True)], dtype=float)
    trials, passes = trials[:, 1:], passes[:, 1:]
    s = np.where(trials > 0, passes, 0.0)
    t = trials
    if prior_weight > 0:
        lent_t, lent_s = np.zeros_like(t), np.zeros_like(t)
        for row, (prior, k) in enumerate(zip(priors, k_maxes, strict=True)):
            if prior is None:
                continue
            top = min(k, prior.max_k)
            tried = np.asarray(prior.trials[1 : top + 1], dtype=np.float64)
            lent = np.minimum(prior_weight, tried)
            # lent * passes / trials, in that order (the scalar loop's rounding).
            share = np.divide(lent * np.asarray(prior.passes[1 : top + 1]), tried, out=np.zeros(top), where=lent > 0)
            lent_t[row, :top] = np.where(lent > 0, lent, 0.0)
            lent_s[row, :top] = share
        s, t = s + lent_s, t + lent_t
    z = np.array([est.z for est in estimators])[:, None]
    zz = z * z
    safe = np.where(t > 1e-12, t, 1.0)
    p = np.minimum(1.0, np.maximum(0.0, s / safe))
    denom = 1.0 + zz / safe
    centre = p + zz / (2 * safe)
    spread = z * np.sqrt(p * (1 - p) / safe + zz / (4 * safe * safe))
    a = np.where(t > 1e-12, np.maximum(0.0, centre / denom - spread / denom), 0.0)
    # Beyond a route's own positions (its k_max, its estimator's max_k): nothing.
    a[np.arange(width)[None, :] >= np.minimum(k_maxes, [e.max_k for e in estimators])[:, None]] = 0.0
    totals = np.cumsum(np.concatenate([np.ones((len(a), 1)), np.cumprod(a, axis=1)], axis=1), axis=1)
    rows: list[list[float]] = totals.tolist()
    return [tuple(row[: max(k, 0) + 1]) for row, k in zip(rows, k_maxes, strict=True)]
