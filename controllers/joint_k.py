"""The joint choice of k for the routes of many pools at many batch sizes, in numpy. Pure.

Each (pool, batch size) is one problem (controllers/policy.py's objective): maximise goodput
B * sum_r w_r L_r(k_r) / T(B, kbar, kmax) with kbar = sum_r w_r q_r k_r and kmax the largest k of a route with
traffic, fewest SLO violations first; or (`OBJECTIVES`) the root mean square of the TPOT over requests,
B * (sum_r u_r L_r(k_r)^-2)^-1/2 / T with u_r the routes' request shares: the same moves with -L_r(k)^-2 in place of
L_r(k) (both concave in k). It is solved in two moves:

1. **Starts from the Lagrangian.** Fix the largest k at M and price a unit of mean drafts at mu: each route then
   takes its own argmax of w_r L_r(k) - mu w_r q_r k (separable). Every M and every mu at which some route's choice
   changes (the slopes of its tokens per draft) gives one candidate per pool, whatever the batch size; each
   (pool, batch size) keeps its best candidate. When T is linear in kbar and non-decreasing in kmax, the best
   candidate is the exact optimum (tests/controllers/test_joint_k.py checks it against exhaustive search): the
   optimum x* with kmax = M* is feasible under the cap M*, Dinkelbach's argument puts the optimum of that
   linear-fractional problem on the cap's candidates (E[L(k)] is concave, so the slopes are its hull's), and a
   candidate whose kmax is below M* only steps faster. Past a knee (T flat, then linear: a knapsack below it) and
   under SLOs it is a start, not an answer.
2. **Single-move ascent.** From each start (and, for a few rounds, from the schedules in force and from each batch
   size's neighbours' answers: controllers/schedule.py), the best single change of one route's k is taken while
   it helps, every row in lockstep: all rows' moves are
   scored in one array pass per round, so the cost is a few numpy calls per round, not per route.

It replaced a coordinate ascent (Gauss-Seidel sweeps from all-off, all-max and the schedules in force); measured in
docs/controller.md (bench/solver_quality.py, bench/tick_cost.py): better answers in ~3-4% of cells, worse in
~0.1-0.2%; exhaustive search better in 0-2 of ~2,000 cells against 40-50; and several times cheaper.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
from specgate.controllers.policy import RouteState

__all__ = ["OBJECTIVES", "TPOT_POWER", "GroupStepTime", "PoolArrays", "hull_starts", "polish", "score"]

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
# The step time over arrays of (batch, mean k, largest k), for rows of several pools: the first array says which
# pool (by index) each row (leading axis) is.
GroupStepTime = Callable[[Ints, Floats, Floats, Floats], Floats]
# What a (pool, batch size) maximises: "goodput", B * sum_r w_r L_r / T (tokens per second), or "tpot", the TPOT
# requests see minimised: its root mean square over requests, T * (sum_r u_r / L_r^2)^1/2 with u_r the routes' request
# shares (as B over it, larger being better like goodput). The square weighs both the mean and the spread between routes
# (E[TPOT^2] = mean^2 + variance): the mean alone let one route's drafts slow the others' requests for a small gain
# (measured in the simulator, docs/controller.md: on mixed-routes the mean's p99 was 1.03x the best baseline's, the
# square's 1.015x; on kv-pressure 1.06x against 1.00x, its mean lower too).
OBJECTIVES = ("goodput", "tpot")
# The power of the TPOT averaged over requests under "tpot" (1: the mean; 3 measured: mixed-routes' mean 0.865x ->
# 0.879x the best baseline for its p99 1.015x -> 0.983x).
TPOT_POWER = 2.0

TOL = 1e-9
# A price of drafts above every slope: every route at its cheapest k.
_PRICE_CEILING = 1e12
# Relative distance above a slope at which it is priced: far above rounding (1e-16), far below any real gap.
_NUDGE = 1e-9


class PoolArrays:
    """The routes of every pool as arrays (pool, route slot, k), padded to the largest pool with share-0 routes fixed
    at k = 0. A pool without routes is all padding."""

    def __init__(self, groups: Sequence[Sequence[RouteState]], objective: str = "goodput") -> None:
        n = len(groups)
        self.width = width = max(1, max((len(routes) for routes in groups), default=0))
        self.k1 = k1 = max((r.k_max for routes in groups for r in routes), default=0) + 1
        # One flat list per field, route by route (pool by pool); padding slots take the defaults set below.
        at = [p * width + i for p, routes in enumerate(groups) for i in range(len(routes))]
        routes = [r for group in groups for r in group]
        totals = [sum(r.share for r in group) or 1.0 for group in groups]
        share = np.zeros(n * width)
        share[at] = [r.share / totals[p] for p, group in enumerate(groups) for r in group]
        rate = np.zeros(n * width)
        rate[at] = [r.proposal_rate for r in routes]
        target = np.full(n * width, np.inf)
        target[at] = [r.tpot_slo_s or np.inf for r in routes]
        tab = np.ones((n * width, k1))
        # E[L(k)] for every k a route may take (a short table holds its last value beyond its end).
        tab[at] = [(*r.lengths[:k1], *(r.lengths[-1:] * max(0, k1 - len(r.lengths)))) for r in routes]
        low, high = np.zeros(n * width, dtype=np.int64), np.zeros(n * width, dtype=np.int64)
        low[at] = [r.k_min for r in routes]
        high[at] = [r.k_max for r in routes]
        ks = np.arange(k1)
        self.w = share.reshape(n, width)
        self.tab = tab.reshape(n, width, k1)
        self.allowed = ((ks >= low[:, None]) & (ks <= high[:, None])).reshape(n, width, k1)
        self.live = (share > 0).reshape(n, width)
        self.target = target.reshape(n, width)
        # A route's weight in the mean drafts per step: its share times its proposal rate.
        self.wq = (share * rate).reshape(n, width)
        self.has_slo = bool(np.isfinite(self.target).any())
        if objective not in OBJECTIVES:
            raise ValueError(f"objective {objective!r}: one of {', '.join(OBJECTIVES)}")
        self.tpot = objective == "tpot"
        # What the objective sums over a pool's routes, each weighted by `u`: E[L(k)] by batch share (goodput), or
        # -E[L(k)]^-2 by request share (TPOT; concave in k like E[L(k)], so the Lagrangian starts still apply).
        # Request shares from the routes' finished requests per second; batch shares where none is known.
        self.val = -(self.tab**-TPOT_POWER) if self.tpot else self.tab
        self.u = self.w
        if self.tpot:
            rates = np.zeros(n * width)
            rates[at] = [r.request_rate or 0.0 for r in routes]
            self.u = _request_shares(rates.reshape(n, width), self.w)
        # Each route's weighted term of the objective and of the mean drafts at every k (pool, slot, k): the products
        # every solve step reads.
        self.uval = self.u[:, :, None] * self.val
        self.wqk = self.wq[:, :, None] * np.arange(k1, dtype=np.float64)

    def num(self, value: Floats) -> Floats:
        """Tokens per step per request from the weighted sum of `val`: the sum itself (goodput), or the power mean of
        the routes' E[L] by request share with power -2 (TPOT: the step time over it is the TPOT's root mean square
        over requests). A pool without routes sums to 0 there (-inf, never chosen)."""
        if not self.tpot:
            return value
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.asarray((-value) ** (-1.0 / TPOT_POWER), dtype=np.float64)
        mean[~(value < 0)] = -np.inf
        return mean


def _request_shares(rates: Floats, w: Floats) -> Floats:
    """Each route's share of its pool's requests (pool, slot) from finished requests per second; a route with batch
    share but no finished request yet (its requests are long, or new) counts at its pool's requests per unit of batch
    share; batch shares where no route of the pool has a rate."""
    known = rates > 0
    counted = (w * known).sum(axis=1, keepdims=True)
    per_share = np.where(counted > 0, (rates * known).sum(axis=1, keepdims=True) / np.maximum(counted, 1e-300), 1.0)
    filled = np.where(known, rates, w * per_share)
    total = filled.sum(axis=1, keepdims=True)
    return np.asarray(np.where(total > 0, filled / np.where(total > 0, total, 1.0), w), dtype=np.float64)


def _violation(step: Floats, lengths: Floats, target: Floats) -> Floats:
    """SLO violation summed over the last axis: TPOT = step / length against each route's target."""
    return np.asarray((np.maximum(0.0, step[..., None] / lengths - target) / target).sum(axis=-1), dtype=np.float64)


def _pick(violation: Floats | None, goodput: Floats) -> Ints:
    """Per row (leading axes), the index along the last axis with the fewest SLO violations, then the most goodput."""
    if violation is not None:
        least = violation.min(axis=-1, keepdims=True)
        goodput = np.where(violation <= least + TOL, goodput, -np.inf)
    return np.asarray(goodput.argmax(axis=-1), dtype=np.int64)


def hull_starts(pools: PoolArrays, batch: Floats, step: GroupStepTime) -> Ints:
    """Per pool and batch size of `batch`, the best Lagrangian candidates: ks of shape (starts, pools, batch sizes,
    slots). One start without SLOs; with SLOs also the candidate with the most goodput whatever its violations (the
    Lagrangian does not price violations: the ascent from there often ends better than from the fewest violations,
    measured: docs/controller.md)."""
    g, width, k1 = pools.tab.shape
    w, wq, tab, live = pools.w, pools.wq, pools.tab, pools.live
    val = pools.val
    # Prices: 0, one above all, and every slope of a route's tokens per unit of mean drafts between consecutive k
    # (E[L(k)] is concave: its increments are survival probabilities, so these are its hull's slopes, the only prices
    # where its choice changes). Each slope is taken a hair above itself, where the route already prefers the smaller
    # k (at the slope itself the two tie, and rounding would pick either), so each interval between two slopes is
    # represented by a price inside it.
    rate = np.where(w > 0, wq / np.where(w > 0, w, 1.0), 0.0)
    steps_up = np.diff(val, axis=2)
    if pools.u is not pools.w:
        gain = np.where(w > 0, pools.u / np.where(w > 0, w, 1.0), 1.0)  # objective weight per unit of batch share
        steps_up = steps_up * gain[:, :, None]
    slopes = steps_up / np.maximum(rate, 1e-12)[:, :, None] * (1 + _NUDGE)
    prices = np.concatenate([np.zeros((g, 1)), slopes.reshape(g, -1), np.full((g, 1), _PRICE_CEILING)], axis=1)
    # Route slot first and k outermost: the running argmax over k and the sums over routes below are then
    # elementwise operations on whole arrays, not reductions along a short last axis (several times faster).
    tokens = np.moveaxis(pools.uval, (0, 1, 2), (2, 1, 0))  # (k, slot, pool)
    drafts = pools.wqk.transpose(2, 1, 0)
    allowed = np.moveaxis(pools.allowed, (0, 1, 2), (2, 1, 0))[..., None]
    # Each route's best k among k <= M for every M at once: a running argmax over k (the first maximum wins) of its
    # value at k, tokens less drafts at the price (slot, pool, price; -inf where it may not take k), kept as (slot,
    # pool, M, price) so that each candidate below is one index into the last two axes. Taken k by k: the whole
    # (k, slot, pool, price) array cost more to allocate each tick than to compute.
    n_prices = prices.shape[1]
    small = np.int8 if k1 <= 127 else np.int64
    upto = np.zeros((width, g, k1, n_prices), dtype=small)
    top = np.where(allowed[0], tokens[0][..., None] - drafts[0][..., None] * prices, -np.inf)
    arg = upto[:, :, 0]
    for k in range(1, k1):
        value = np.where(allowed[k], tokens[k][..., None] - drafts[k][..., None] * prices, -np.inf)
        rises = value > top
        top, arg = np.where(rises, value, top), np.where(rises, small(k), arg)
        upto[:, :, k] = arg
    # Under a cap M a route's choice depends only on the slopes below M: a price from a slope at or above M gives
    # the same candidate as the next price down. The (M, price) pairs kept are the same for every pool.
    position = np.concatenate([[-1], np.tile(np.arange(k1 - 1), width), [-1]])  # each price's slope position
    cap, price = np.nonzero(position[None, :] < np.arange(k1)[:, None])
    # A live route is capped at M; one without traffic takes its best k whatever M.
    capped = np.take(upto.reshape(width, g, k1 * n_prices), cap * n_prices + price, axis=2)  # (slot, pool, candidate)
    ks = np.where(live.T[:, :, None], capped, np.take(arg, price, axis=2)).astype(np.int64)
    # M is feasible when every live route has an allowed k <= M.
    reach = np.asarray((np.logical_or.accumulate(pools.allowed, axis=2) | ~live[:, :, None]).all(axis=1))  # (pool, M)
    ok = reach[:, cap]  # (pool, candidate)
    kmax_int = np.where(live.T[:, :, None], ks, 0).max(axis=0)
    if np.isfinite(val).all() and (np.diff(val, n=2, axis=2) <= 0).all():  # `_distinct`'s condition: finite, concave
        ks, ok, kmax_int = _distinct(ks, ok, kmax_int, cap)
    flat = ks + ((np.arange(g)[None, :, None] * width + np.arange(width)[:, None, None]) * k1)
    lengths = np.take(tab, flat)  # (slot, pool, candidate)
    values = np.take(val, flat) if pools.tpot else lengths
    num = pools.num((values * pools.u.T[:, :, None]).sum(axis=0))
    kbar = (ks * wq.T[:, :, None]).sum(axis=0)
    kmax = kmax_int.astype(np.float64)
    b = batch[None, :, None]
    steps = step(np.arange(g, dtype=np.int64), b, kbar[:, None, :], kmax[:, None, :])  # (pool, batch, candidate)
    goodput = np.where(ok[:, None, :], b * num[:, None, :] / steps, -np.inf)
    best = [_pick(None, goodput)]  # (pool, batch)
    if pools.has_slo:
        violation = _violation(steps, np.moveaxis(lengths, 0, 2)[:, None], pools.target[:, None, None, :])
        best.insert(0, _pick(np.where(ok[:, None, :], violation, np.inf), goodput))
    chosen = [np.take_along_axis(ks[:, :, None, :], pick[None, :, :, None], axis=3)[..., 0] for pick in best]
    return np.asarray(np.moveaxis(np.stack(chosen), 1, 3), dtype=np.int64)  # (start, pool, batch, slot)


def _distinct(ks: Ints, ok: npt.NDArray[np.bool_], kmax: Ints, cap: Ints) -> tuple[Ints, npt.NDArray[np.bool_], Ints]:
    """`hull_starts`' candidates (ks: (slot, pool, candidate), caps ascending) without those that repeat an earlier
    one: under the cap M a candidate whose live routes all stay below M is the same under the cap M - 1 at its price,
    and where every route's term is concave in k (E[L(k)] is: its increments are survival probabilities; the caller
    checks), every price's candidate under a cap is one of that cap's (the choices change only at the slopes below it).
    About half of them go; equal candidates score alike and the first of them is the one kept, so every start is
    the one the full list gives (tests/controllers/test_joint_k.py). Each pool keeps its own; the shorter lists are
    padded with infeasible candidates."""
    keep = (cap == 0) | (kmax >= cap)  # (pool, candidate)
    counts = keep.sum(axis=1)
    pool, candidate = np.nonzero(keep)  # pool by pool, candidates in order
    rank = np.arange(len(pool)) - np.repeat(np.cumsum(counts) - counts, counts)
    order = np.zeros((len(keep), int(counts.max())), dtype=np.int64)  # (pool, kept); padding: candidate 0
    order[pool, rank] = candidate
    real = np.zeros(order.shape, dtype=bool)
    real[pool, rank] = True
    rows = np.arange(len(keep))[:, None]
    return ks[:, rows, order], ok[rows, order] & real, kmax[rows, order]


def _totals(pools: PoolArrays, group: Ints, ks: Ints) -> tuple[Floats, Floats, Floats, Ints, Floats, Floats]:
    """Per row (pool number `group`, the routes' `ks`): each route's E[L(k)], the objective's weighted sum over the
    routes (`PoolArrays.val`: for goodput, the share-weighted tokens per step), the mean drafts per step, the
    routes' ks with those of routes without traffic at 0 (their max is kmax), and each route's terms of the two
    sums (`PoolArrays.uval`, `PoolArrays.wqk`)."""
    at = (group[:, None], np.arange(ks.shape[1])[None, :], ks)
    terms, drafts = pools.uval[at], pools.wqk[at]
    return pools.tab[at], terms.sum(axis=1), drafts.sum(axis=1), np.where(pools.live[group], ks, 0), terms, drafts


def score(pools: PoolArrays, group: Ints, batch: Floats, ks: Ints, step: GroupStepTime) -> tuple[Floats, Floats]:
    """(SLO violation, goodput) of each row: pool number `group`, batch size `batch`, the routes' `ks` (rows, slots).
    Under the TPOT objective the second is B over the TPOT's root mean square (`PoolArrays`), larger being better
    likewise."""
    lengths, num, kbar, masked, _, _ = _totals(pools, group, ks)
    steps = step(group, batch, kbar, masked.max(axis=1).astype(np.float64))
    if pools.has_slo:
        violation = _violation(steps, lengths, pools.target[group])
    else:
        violation = np.zeros(len(ks), dtype=np.float64)
    return violation, batch * pools.num(num) / steps


def polish(
    pools: PoolArrays, group: Ints, batch: Floats, ks: Ints, step: GroupStepTime, limit: int = 0
) -> tuple[Ints, Floats, Floats]:
    """Single-move ascent from each row's `ks` (rows, slots): each round every row takes its best change of one
    route's k (fewest SLO violations, then most goodput) if it beats where the row stands; rows that did not move
    are at their fixed point and drop out. Returns the ks, violation and goodput of every row. `limit` bounds the
    rounds (default: enough for every slot to walk its whole range)."""
    ks = ks.copy()
    width, k1 = pools.tab.shape[1:]
    karange = np.arange(k1, dtype=np.float64)
    active = np.arange(len(ks))
    # A row that stops is scored where it stands: the figures its last round computed (`score`'s).
    violation, goodput = np.zeros(len(ks)), np.zeros(len(ks))
    for _ in range(limit or width * k1 + 1):
        if not len(active):
            break
        moved, slot, k, here_v, here_g = _best_moves(pools, group[active], batch[active], ks[active], karange, step)
        stopped = active[~moved]
        violation[stopped], goodput[stopped] = here_v[~moved], here_g[~moved]
        rows = active[moved]
        ks[rows, slot[moved]] = k[moved]
        active = rows
    if len(active):  # stopped by `limit`
        violation[active], goodput[active] = score(pools, group[active], batch[active], ks[active], step)
    return ks, violation, goodput


def _best_moves(
    pools: PoolArrays, group: Ints, batch: Floats, ks: Ints, karange: Floats, step: GroupStepTime
) -> tuple[npt.NDArray[np.bool_], Ints, Ints, Floats, Floats]:
    """For each row, its best single move (slot, k), whether it improves on the row as it stands, and the row's own
    SLO violation and goodput (`score`'s)."""
    n, width = ks.shape
    k1 = len(karange)
    rows = np.arange(n)
    live = pools.live[group]
    lengths, num, kbar, masked, terms, drafts = _totals(pools, group, ks)
    ranked = np.sort(masked, axis=1)
    top = ranked[:, -1:]
    second = ranked[:, -2:-1] if width > 1 else np.zeros((n, 1), dtype=masked.dtype)
    others = np.where(masked == top, second, top)[:, :, None].astype(np.float64)  # largest k of the other slots
    # Each route's term of the objective and of the mean drafts replaced by its term at every k.
    t_num = pools.num((num[:, None] - terms)[:, :, None] + pools.uval[group])
    t_kbar = (kbar[:, None] - drafts)[:, :, None] + pools.wqk[group]
    t_kmax = np.where(live[:, :, None], np.maximum(others, karange), others)
    b = batch[:, None, None]
    steps = step(group, b, t_kbar, t_kmax)  # (row, slot, k)
    allowed = pools.allowed[group]
    goodput = np.where(allowed, b * t_num / steps, -np.inf).reshape(n, -1)
    here_step = step(group, batch, kbar, top[:, 0].astype(np.float64))
    here_good = batch * pools.num(num) / here_step
    if pools.has_slo:
        target = pools.target[group]
        # Every route's violation at each trial's step time with today's lengths, then the moved route's own term.
        each = np.maximum(0.0, steps[..., None] / lengths[:, None, None, :] - target[:, None, None, :])
        each = each / target[:, None, None, :]
        own_now = np.take_along_axis(each, np.broadcast_to(np.arange(width)[None, :, None, None], (n, width, k1, 1)), 3)
        own_new = np.maximum(0.0, steps / pools.tab[group] - target[:, :, None]) / target[:, :, None]
        violation = np.where(allowed, each.sum(axis=3) - own_now[..., 0] + own_new, np.inf).reshape(n, -1)
        pick = _pick(violation, goodput)
        here_v = _violation(here_step, lengths, target)
        new_v, new_g = violation[rows, pick], goodput[rows, pick]
        better = np.where(np.abs(new_v - here_v) > TOL, new_v < here_v, new_g > here_good * (1 + TOL))
    else:
        pick = _pick(None, goodput)
        better = goodput[rows, pick] > here_good * (1 + TOL)
        here_v = np.zeros(n, dtype=np.float64)
    slot, k = np.divmod(pick, k1)
    return better, slot, k, here_v, here_good
