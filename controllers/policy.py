"""Choose k per route, jointly for the routes that share a pool, to maximise goodput. Pure.

For a pool whose engines run a batch of B requests, a share w_r of them from route r running at k_r:

    T      = T(B, kbar = sum_r w_r q_r k_r, kmax = max_r k_r)    step time (cost model)
    G      = B * sum_r w_r E_r[L(k_r)] / T                        tokens per second (goodput)
    TPOT_r = T / E_r[L(k_r)]

q_r is the route's proposal rate (the share of its steps whose drafter proposes anything; 1 for a model drafter):
a step without a proposal verifies no drafts. Its expected length E_r[L(k)] already counts those steps as one
token. Assignments that break a route's TPOT SLO rank below those that keep all SLOs; among equals the higher G
wins. Turning speculation off at high load is simply the k = 0 branch winning this argmax when the extra
verify work (the B * kbar term of T) costs more than the accepted tokens bring.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Assignment", "RouteState", "break_even_acceptance", "evaluate", "optimise", "speedups"]

StepTime = Callable[[float, float, float], float]


@dataclass(frozen=True, slots=True)
class RouteState:
    name: str
    share: float
    k_min: int
    k_max: int
    # E[L(k)] for k = 0..k_max (lengths[0] == 1.0).
    lengths: tuple[float, ...]
    tpot_slo_s: float | None = None
    # q: the share of its steps with a proposal, so drafts per step = q k (controllers/estimator.py).
    proposal_rate: float = 1.0
    # Finished requests per second: the route's weight in the pool's TPOT (controllers/joint_k.py; None or 0: its
    # batch share at its pool's requests per unit of batch share).
    request_rate: float | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    ks: Mapping[str, int]
    goodput: float
    step_s: float
    slo_violation: float
    # per route: expected speed-up of its tokens/s versus k = 0 everywhere
    speedup: Mapping[str, float]
    tpot_s: Mapping[str, float]


def _steps(
    routes: Sequence[RouteState], ks: Mapping[str, int], batch: float, step_time: StepTime
) -> tuple[float, float, float]:
    """(total share, step time with the routes at `ks`, step time without drafts)."""
    total_share = sum(r.share for r in routes) or 1.0
    # Shares normalised first: a decayed share can be denormal, and its product with q would underflow to 0.
    kbar = sum((r.share / total_share) * r.proposal_rate * ks[r.name] for r in routes)
    kmax = max((ks[r.name] for r in routes if r.share > 0), default=0)
    return total_share, step_time(batch, kbar, kmax), step_time(batch, 0.0, 0.0)


def speedups(
    routes: Sequence[RouteState], ks: Mapping[str, int], batch: float, step_time: StepTime
) -> dict[str, float]:
    """`evaluate`'s speed-up per route alone (the control loop reads it for every pool every tick)."""
    _, step, base = _steps(routes, ks, batch, step_time)
    return {r.name: r.lengths[min(ks[r.name], len(r.lengths) - 1)] * base / step for r in routes}


def evaluate(routes: Sequence[RouteState], ks: Mapping[str, int], batch: float, step_time: StepTime) -> Assignment:
    total_share, step, base = _steps(routes, ks, batch, step_time)
    good = 0.0
    violation = 0.0
    speedup: dict[str, float] = {}
    tpot: dict[str, float] = {}
    for r in routes:
        length = r.lengths[min(ks[r.name], len(r.lengths) - 1)]
        good += batch * (r.share / total_share) * length / step
        tpot[r.name] = step / length
        speedup[r.name] = length * base / step
        if r.tpot_slo_s is not None and tpot[r.name] > r.tpot_slo_s:
            violation += (tpot[r.name] - r.tpot_slo_s) / r.tpot_slo_s
    return Assignment(dict(ks), good, step, violation, speedup, tpot)


def _better(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """(slo_violation, goodput) pairs: fewer SLO violations first, then more goodput."""
    if abs(a[0] - b[0]) > 1e-9:
        return a[0] < b[0]
    return a[1] > b[1] * (1 + 1e-9)


def optimise(
    routes: Sequence[RouteState],
    batch: float,
    step_time: StepTime,
    start: Mapping[str, int] | None = None,
    sweeps: int = 6,
) -> Assignment:
    """Coordinate ascent from `start` (clamped to bounds): each route in turn takes its best k given the
    others, until nothing changes. Exact for one route; for several it finds a local optimum of a
    function that is close to separable (the routes interact only through T).

    A trial changes one route's k, so the goodput's numerator and the mean k move by that route's term alone:
    each trial costs one step-time call plus the SLO routes, not a pass over every route (the control loop runs
    this for every pool at every batch size of the schedule grid, each tick)."""
    n = len(routes)
    total = sum(r.share for r in routes) or 1.0
    w = [r.share / total for r in routes]
    # Weight of a route's k in the mean drafts per step.
    wq = [wi * r.proposal_rate for wi, r in zip(w, routes, strict=True)]
    # E[L(k)] for every k a route may take (a short table holds its last value beyond its end).
    tab = [[r.lengths[min(k, len(r.lengths) - 1)] for k in range(max(r.k_max, 0) + 1)] for r in routes]
    live = [r.share > 0 for r in routes]
    slo = [(i, r.tpot_slo_s) for i, r in enumerate(routes) if r.tpot_slo_s is not None]
    ks = [min(max((start or {}).get(r.name, r.k_min), r.k_min), r.k_max) for r in routes]

    def score(num: float, kbar: float, kmax: int, changed: int, k: int) -> tuple[float, float]:
        step = step_time(batch, kbar, kmax)
        violation = 0.0
        for j, target in slo:
            tpot = step / tab[j][k if j == changed else ks[j]]
            if tpot > target:
                violation += (tpot - target) / target
        return violation, batch * num / step

    def totals() -> tuple[float, float]:
        return sum(w[i] * tab[i][ks[i]] for i in range(n)), sum(wq[i] * ks[i] for i in range(n))

    num, kbar = totals()
    best = score(num, kbar, max((ks[i] for i in range(n) if live[i]), default=0), -1, 0)
    for _ in range(sweeps):
        changed = False
        for i, r in enumerate(routes):
            others = max((ks[j] for j in range(n) if live[j] and j != i), default=0)
            row, wi, qi = tab[i], w[i], wq[i]
            base_num, base_kbar = num - wi * row[ks[i]], kbar - qi * ks[i]
            for k in range(r.k_min, r.k_max + 1):
                if k == ks[i]:
                    continue
                trial = score(base_num + wi * row[k], base_kbar + qi * k, max(others, k) if live[i] else others, i, k)
                if _better(trial, best):
                    best, ks[i], changed = trial, k, True
                    # Recomputed, not accumulated: no rounding drift over many accepted moves.
                    num, kbar = totals()
                    base_num, base_kbar = num - wi * row[k], kbar - qi * k
        if not changed:
            break
    return evaluate(routes, {r.name: ks[i] for i, r in enumerate(routes)}, batch, step_time)


def break_even_acceptance(k: int, cost_ratio: float) -> float:
    """The per-position acceptance a at which k drafts stop paying: 1 + a + ... + a^k = cost_ratio, where
    cost_ratio = T(k) / T(0) is what a step with k drafts costs relative to a plain one. 0 when drafts are
    free, 1 when even perfect acceptance cannot pay for them."""
    if k <= 0 or cost_ratio <= 1.0:
        return 0.0
    if cost_ratio >= k + 1:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        if sum(mid**i for i in range(k + 1)) < cost_ratio:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
