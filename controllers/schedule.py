"""k as a function of batch size: per-route schedules, and the route-blind table a stock vLLM takes. Pure.

At each batch size B of a grid, the routes of a pool get the goodput-optimal k jointly (controllers/policy.py)
from their measured acceptance and the pool's fitted step time. The result, per route, is a schedule
`((1, k1), (B2, k2), ...)`: k from each listed batch size up to the next. The scheduler plugin looks it up at
every engine step (backends/spec_cap.py has the wire format).

`batch_table` is what the same measurements imply for an engine without the plugin: one k for all requests at
each batch size, in the shape of vLLM's `num_speculative_tokens_per_batch_size` (`[[lo, hi, k], ...]`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from specgate.controllers.k_schedule import Schedule, compress, on_grid
from specgate.controllers.policy import RouteState, StepTime, evaluate

__all__ = [
    "BATCH_GRID",
    "Gain",
    "GroupStepTime",
    "PoolProblem",
    "VectorStepTime",
    "batch_table",
    "joint_optima",
    "pool_schedules",
    "route_schedules",
    "schedule_gains",
]

# Batch sizes at which k is decided; between two of them the smaller one's k holds.
BATCH_GRID: tuple[int, ...] = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)

Floats = npt.NDArray[np.float64]
# The step time over arrays of (batch, mean k, largest k), elementwise with broadcasting.
VectorStepTime = Callable[[Floats, Floats, Floats], Floats]
# The same for rows of several pools: the first array says which pool (by index) each row is.
GroupStepTime = Callable[[npt.NDArray[np.int64], Floats, Floats, Floats], Floats]

_TOL = 1e-9


@dataclass(frozen=True, slots=True)
class PoolProblem:
    """The routes of one pool and its step time; `previous` (the schedules in force) is one more starting point."""

    routes: Sequence[RouteState]
    step_time: StepTime
    previous: Mapping[str, Schedule] | None = None


@dataclass(frozen=True, slots=True)
class _Row:
    """One problem: pool number `group` at batch size number `j` (of `batches`), starting from `ks`."""

    group: int
    j: int
    ks: tuple[int, ...]


class _Pools:
    """The routes of every pool as arrays, padded to the largest pool with share-0 routes fixed at k = 0: built once
    per solve and shared by its problem sets (each row of those picks its pool's slice)."""

    def __init__(self, groups: Sequence[Sequence[RouteState]]) -> None:
        self.width = max(len(routes) for routes in groups)
        self.k1 = k1 = max(r.k_max for routes in groups for r in routes) + 1
        per_group = []
        for routes in groups:
            total = sum(r.share for r in routes) or 1.0
            pad = self.width - len(routes)
            per_group.append(
                (
                    [r.share / total for r in routes] + [0.0] * pad,
                    [[r.lengths[min(k, len(r.lengths) - 1)] for k in range(k1)] for r in routes] + [[1.0] * k1] * pad,
                    [[r.k_min <= k <= r.k_max for k in range(k1)] for r in routes]
                    + [[k == 0 for k in range(k1)]] * pad,
                    [r.share > 0 for r in routes] + [False] * pad,
                    [r.tpot_slo_s if r.tpot_slo_s else np.inf for r in routes] + [np.inf] * pad,
                    [r.share / total * r.proposal_rate for r in routes] + [0.0] * pad,
                )
            )
        self.w = np.array([g[0] for g in per_group], dtype=np.float64)
        self.tab = np.array([g[1] for g in per_group], dtype=np.float64)
        self.allowed = np.array([g[2] for g in per_group], dtype=bool)
        self.live = np.array([g[3] for g in per_group], dtype=bool)
        self.target = np.array([g[4] for g in per_group], dtype=np.float64)
        # A route's weight in the mean drafts per step: its share times its proposal rate.
        self.wq = np.array([g[5] for g in per_group], dtype=np.float64)


class _Problems:
    """Many independent joint choices (one per pool, batch size and starting point) solved in lockstep with numpy.

    The control loop needs every pool's optimum at every batch size of the grid each tick; a pure-Python
    coordinate ascent per (pool, batch size, start) costs ~0.4 ms each, ~150 ms per tick for 10 pools
    (bench/tick_cost.py). Here a row is one problem; routes are padded to the largest pool with share-0 routes
    fixed at k = 0, so one pass over route slots moves every pool's routes at once."""

    def __init__(self, pools: _Pools, rows: Sequence[_Row], batches: Floats, step: GroupStepTime) -> None:
        self.step = step
        index = np.array([row.group for row in rows], dtype=np.int64)
        self.w = pools.w[index]
        self.tab = pools.tab[index]
        self.allowed = pools.allowed[index]
        self.live = pools.live[index]
        self.target = pools.target[index]
        self.wq = pools.wq[index]
        self.has_slo = bool(np.isfinite(self.target).any())
        self.unsettled = np.empty(0, dtype=np.int64)
        self.group = index
        self.batch = batches[np.array([row.j for row in rows], dtype=np.int64)]
        self.karange = np.arange(pools.k1, dtype=np.float64)
        width = pools.width
        self.ks = np.array([row.ks + (0,) * (width - len(row.ks)) for row in rows], dtype=np.int64)

    def _lengths(self, ks: npt.NDArray[np.int64]) -> Floats:
        rows = np.arange(len(ks))[:, None]
        return np.asarray(self.tab[rows, np.arange(ks.shape[1])[None, :], ks], dtype=np.float64)

    def _totals(self, ks: npt.NDArray[np.int64]) -> tuple[Floats, Floats, Floats]:
        num = (self._lengths(ks) * self.w).sum(axis=1)
        kbar = (ks * self.wq).sum(axis=1)
        kmax = np.where(self.live, ks, 0).max(axis=1).astype(np.float64)
        return num, kbar, kmax

    def _violation(self, step: Floats, lengths: Floats) -> Floats:
        """SLO violation summed over routes; `step` (P, ...) and `lengths` (P, ..., R) broadcast."""
        if not self.has_slo:
            return np.zeros(step.shape, dtype=np.float64)
        target = self.target.reshape(self.target.shape[0], *([1] * (lengths.ndim - 2)), self.target.shape[1])
        tpot = step[..., None] / lengths
        return np.asarray((np.maximum(0.0, tpot - target) / target).sum(axis=-1), dtype=np.float64)

    def score(self) -> tuple[Floats, Floats]:
        """(SLO violation, goodput) of each row's starting ks, as they stand: no ascent."""
        num, kbar, kmax = self._totals(self.ks)
        step = self.step(self.group, self.batch, kbar, kmax)
        return self._violation(step, self._lengths(self.ks)), self.batch * num / step

    def solve(self, sweeps: int = 6) -> tuple[npt.NDArray[np.int64], Floats, Floats]:
        """Coordinate ascent from the starts: each route slot in turn takes its best k given the others (fewest SLO
        violations, then most goodput), until nothing moves. Returns ks, violation, goodput per row.

        Rows are independent problems: a row that made no move in a whole sweep is at its fixed point and would
        make none later, so each sweep runs only on the rows that moved in the one before (the same answers, a
        fraction of the work once most rows have settled)."""
        ks = self.ks
        active = np.arange(len(ks))
        for _ in range(sweeps):
            part = self if len(active) == len(ks) else self._rows(active)
            moved = part._sweep(part.ks)
            ks[active] = part.ks
            active = active[moved]
            if not len(active):
                break
        self.unsettled = active  # rows the sweep limit stopped before their fixed point
        num, kbar, kmax = self._totals(ks)
        step = self.step(self.group, self.batch, kbar, kmax)
        return ks, self._violation(step, self._lengths(ks)), self.batch * num / step

    def _rows(self, index: npt.NDArray[np.int64]) -> _Problems:
        """The same problems restricted to the rows `index` (their ks copied)."""
        part = object.__new__(_Problems)
        part.step, part.has_slo, part.karange = self.step, self.has_slo, self.karange
        for name in ("w", "tab", "allowed", "live", "target", "wq", "group", "batch", "ks"):
            setattr(part, name, getattr(self, name)[index])
        return part

    def _sweep(self, ks: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """One pass over the route slots, moving `ks` in place; which rows moved."""
        p, width = ks.shape
        rows = np.arange(p)
        b = self.batch[:, None]
        moved = np.zeros(p, dtype=bool)
        num, kbar, _ = self._totals(ks)
        free = (self.allowed.sum(axis=2) > 1).any(axis=0).tolist()  # slots where some row has a choice
        for i in range(width):
            if not free[i]:
                continue
            allowed = self.allowed[:, i, :]
            masked = np.where(self.live, ks, 0)
            masked[:, i] = 0
            others = masked.max(axis=1)[:, None]
            cur = ks[:, i]
            w, wq = self.w[:, i], self.wq[:, i]
            tab = self.tab[:, i, :]
            t_num = (num - w * tab[rows, cur])[:, None] + w[:, None] * tab
            t_kbar = (kbar - wq * cur)[:, None] + wq[:, None] * self.karange[None, :]
            t_kmax = np.where(self.live[:, i, None], np.maximum(others, self.karange[None, :]), others + 0.0)
            step = self.step(self.group, b, t_kbar, t_kmax)
            good = b * t_num / step
            cur_g = good[rows, cur]
            if self.has_slo:
                lengths = np.repeat(self._lengths(ks)[:, None, :], len(self.karange), axis=1)
                lengths[:, :, i] = tab
                viol = np.where(allowed, self._violation(step, lengths), np.inf)
                vmin = viol.min(axis=1)
                fit = allowed & (viol <= vmin[:, None] + _TOL)
                pick = np.where(fit, good, -np.inf).argmax(axis=1)
                cur_v, new_v = viol[rows, cur], viol[rows, pick]
                new_g = good[rows, pick]
                better = np.where(np.abs(new_v - cur_v) > _TOL, new_v < cur_v, new_g > cur_g * (1 + _TOL))
            else:
                # No SLO anywhere: goodput alone decides (the common case; half the work).
                masked_good = np.where(allowed, good, -np.inf)
                pick = masked_good.argmax(axis=1)
                better = masked_good[rows, pick] > cur_g * (1 + _TOL)
            if better.any():
                ks[better, i] = pick[better]
                num, kbar, _ = self._totals(ks)
                moved |= better
        return moved


def _better(v1: float, g1: float, v0: float, g0: float) -> bool:
    return v1 < v0 - _TOL or (abs(v1 - v0) <= _TOL and g1 > g0 * (1 + _TOL))


def _best_rows(
    rows: Sequence[_Row], violation: Floats, goodput: Floats, ks: npt.NDArray[np.int64]
) -> dict[tuple[int, int], tuple[int, ...]]:
    """Per (pool number, batch size number): the ks of the best row (fewest SLO violations, then most goodput)."""
    best: dict[tuple[int, int], int] = {}
    vs, gs = violation.tolist(), goodput.tolist()
    for i, row in enumerate(rows):
        key = (row.group, row.j)
        b = best.get(key)
        if b is None or _better(vs[i], gs[i], vs[b], gs[b]):
            best[key] = i
    table: list[list[int]] = ks.tolist()
    return {key: tuple(table[i]) for key, i in best.items()}


def joint_optima(
    problems: Sequence[PoolProblem],
    batches: Sequence[float],
    starts: Sequence[Sequence[Mapping[str, int]] | None] | None = None,
    step_many: GroupStepTime | None = None,
) -> list[list[dict[str, int]]]:
    """For each pool, the joint goodput-optimal k of its routes at each batch size of `batches`: coordinate ascent
    (controllers/policy.py's objective) from all-off, from all-max and, when given, from `starts[pool][j]` for
    `batches[j]`; the best kept (the routes interact through the step time, and the largest k's drafting cost
    couples them, so one start can stop at a local optimum). `step_many(group, batch, kbar, kmax)` is the step
    time of pool number `group` over arrays; each pool's scalar step time, vectorised, when not given."""
    clamped = [
        None if starts is None or starts[i] is None else [_clamp(pr.routes, start) for start in starts[i] or ()]
        for i, pr in enumerate(problems)
    ]
    return _joint_optima(problems, batches, clamped, step_many)


def _joint_optima(
    problems: Sequence[PoolProblem],
    batches: Sequence[float],
    starts: Sequence[Sequence[tuple[int, ...]] | None],
    step_many: GroupStepTime | None,
) -> list[list[dict[str, int]]]:
    """`joint_optima` with each start given as the routes' ks in order, within their bounds."""
    g = len(batches)
    out: list[list[dict[str, int]]] = [[{} for _ in batches] for _ in problems]
    live = [i for i, pr in enumerate(problems) if pr.routes]
    if not live or not g:
        return out
    step = step_many or _grouped([pr.step_time for pr in problems])
    batch = np.asarray(batches, dtype=np.float64)
    first: list[_Row] = []
    for i in live:
        routes = problems[i].routes
        origins = [tuple(r.k_min for r in routes), tuple(r.k_max for r in routes)]
        own = starts[i]
        for j in range(g):
            mine = origins + ([own[j]] if own is not None else [])
            first += [_Row(i, j, ks) for ks in dict.fromkeys(mine)]
    unsettled: set[tuple[int, int]] = set()
    pools = _Pools([pr.routes for pr in problems])
    answers = _run(pools, first, batch, step, unsettled=unsettled)
    if g > 1:
        # Each batch size's answer is a start for its neighbours (what a sequential pass over the grid gets for
        # free): a lockstep ascent from all-off alone stops at (high-acceptance route on, others off) where the
        # cheaper route on wins, near a knee. Only starts that differ from the answer are run again.
        second = [
            _Row(i, j, answers[(i, n)])
            for i in live
            for j in range(g)
            for n in {max(0, j - 1), min(g - 1, j + 1)}
            if answers[(i, n)] != answers[(i, j)]
        ]
        if second:
            # An answer is a fixed point unless a row of its (pool, batch size) hit the sweep limit: only those run
            # again from where they stopped (conservatively, the whole cell).
            again = [_Row(i, j, answers[(i, j)]) for i in live for j in range(g) if (i, j) in unsettled]
            settled = [_Row(i, j, answers[(i, j)]) for i in live for j in range(g) if (i, j) not in unsettled]
            answers = _run(pools, second + again, batch, step, settled)
    for i in live:
        names = [r.name for r in problems[i].routes]
        out[i] = [dict(zip(names, answers[(i, j)], strict=False)) for j in range(g)]
    return out


def _on_grid(
    routes: Sequence[RouteState], schedules: Mapping[str, Schedule], sizes: Sequence[int]
) -> list[tuple[int, ...]]:
    """Per batch size of `sizes`: the routes' ks on their schedules, clamped to their bounds (a route without a
    schedule at its k_min), as `_clamp` would give them, computed column by column."""
    grid = tuple(sizes)
    columns = [on_grid(schedules[r.name], grid) if r.name in schedules else (r.k_min,) * len(grid) for r in routes]
    lo = np.array([r.k_min for r in routes])
    hi = np.array([r.k_max for r in routes])
    clipped: list[list[int]] = np.minimum(np.maximum(np.array(columns).T, lo), hi).tolist()
    return [tuple(row) for row in clipped]


def _clamp(routes: Sequence[RouteState], start: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(min(max(start.get(r.name, r.k_min), r.k_min), r.k_max) for r in routes)


def _run(
    pools: _Pools,
    rows: list[_Row],
    batch: Floats,
    step: GroupStepTime,
    settled: Sequence[_Row] = (),
    unsettled: set[tuple[int, int]] | None = None,
) -> dict[tuple[int, int], tuple[int, ...]]:
    """The best row per (pool, batch size) after solving `rows`; `settled` rows are answers already (fixed points of
    the ascent): scored as they stand, the same figures an ascent from them would end with, and compared after.
    `unsettled` collects the (pool, batch size) of rows the sweep limit stopped short."""
    solver = _Problems(pools, rows, batch, step)
    ks, violation, goodput = solver.solve()
    if settled:
        fixed = _Problems(pools, settled, batch, step)
        v, g = fixed.score()
        ks, violation, goodput = (
            np.concatenate([ks, fixed.ks]),
            np.concatenate([violation, v]),
            np.concatenate([goodput, g]),
        )
        rows = [*rows, *settled]
    best = _best_rows(rows, violation, goodput, ks)
    if unsettled is not None:
        unsettled.update({(rows[int(n)].group, rows[int(n)].j) for n in solver.unsettled})
    return best


def _grouped(step_times: Sequence[StepTime]) -> GroupStepTime:
    """Per-pool scalar step times as one array function (slow; for callers without a vectorised step time)."""
    fns = [np.vectorize(fn, otypes=[np.float64]) for fn in step_times]

    def step(group: npt.NDArray[np.int64], b: Floats, kbar: Floats, kmax: Floats) -> Floats:
        b, kbar, kmax = np.broadcast_arrays(b, kbar, kmax)
        out = np.empty(b.shape, dtype=np.float64)
        for index in np.unique(group):
            rows = group == index
            out[rows] = fns[int(index)](b[rows], kbar[rows], kmax[rows])
        return out

    return step


def pool_schedules(
    problems: Sequence[PoolProblem], grid: Sequence[int] = BATCH_GRID, step_many: GroupStepTime | None = None
) -> list[Mapping[str, Schedule]]:
    """Each pool's route schedules: each route's goodput-optimal k at every batch size of `grid` (jointly for the
    routes sharing the pool, within each route's bounds; a route with k_min == k_max is pinned)."""
    sizes = sorted(set(grid))
    starts = [_on_grid(pr.routes, pr.previous, sizes) if pr.previous and pr.routes else None for pr in problems]
    best = _joint_optima(problems, [float(b) for b in sizes], starts, step_many)
    return [
        {r.name: compress([(b, answer[j][r.name]) for j, b in enumerate(sizes)]) for r in pr.routes}
        for pr, answer in zip(problems, best, strict=True)
    ]


def route_schedules(
    routes: Sequence[RouteState],
    step_time: StepTime,
    grid: Sequence[int] = BATCH_GRID,
    previous: Mapping[str, Schedule] | None = None,
    step_many: VectorStepTime | None = None,
) -> Mapping[str, Schedule]:
    """`pool_schedules` for one pool."""
    many = None if step_many is None else (lambda group, b, kbar, kmax: step_many(b, kbar, kmax))
    return pool_schedules([PoolProblem(routes, step_time, previous)], grid, many)[0]


@dataclass(frozen=True, slots=True)
class Gain:
    """How much better one set of a pool's schedules is than another: the largest relative goodput gain over the
    grid, the batch size where it is, and whether the new ones break fewer SLOs at some batch size."""

    gain: float = 0.0
    at: int = 1
    fewer_violations: bool = False


def schedule_gains(
    problems: Sequence[PoolProblem],
    fresh: Sequence[Mapping[str, Schedule]],
    grid: Sequence[int] = BATCH_GRID,
    step_many: GroupStepTime | None = None,
) -> list[Gain | None]:
    """For each pool, `fresh` against its `previous` schedules at every batch size of `grid` (each route's k clamped
    to its bounds), every pool scored in one numpy pass (the hysteresis test of every tick); None where a pool has
    no routes or no previous schedules."""
    out: list[Gain | None] = [None] * len(problems)
    live = [i for i, pr in enumerate(problems) if pr.routes and pr.previous is not None]
    if not live or not grid:
        return out
    sizes = sorted(set(grid))
    rows: list[_Row] = []
    for i in live:
        pr = problems[i]
        assert pr.previous is not None
        for schedules in (pr.previous, fresh[i]):
            rows += [_Row(i, j, at) for j, at in enumerate(_on_grid(pr.routes, schedules, sizes))]
    step = step_many or _grouped([pr.step_time for pr in problems])
    violation, goodput = _Problems(
        _Pools([pr.routes for pr in problems]), rows, np.asarray(sizes, dtype=np.float64), step
    ).score()
    g = len(sizes)
    for n, i in enumerate(live):
        old = slice(2 * n * g, (2 * n + 1) * g)
        new = slice((2 * n + 1) * g, (2 * n + 2) * g)
        ratio = goodput[new] / np.maximum(goodput[old], 1e-12) - 1.0
        best = int(np.argmax(ratio))
        gained = float(ratio[best]) > 0.0
        out[i] = Gain(
            float(ratio[best]) if gained else 0.0,
            sizes[best] if gained else 1,
            bool((violation[new] < violation[old] - _TOL).any()),
        )
    return out


def batch_table(
    routes: Sequence[RouteState], step_time: StepTime, max_k: int, grid: Sequence[int] = BATCH_GRID
) -> list[tuple[int, int, int]]:
    """One k for every request at each batch size (what a stock engine can apply), chosen for the pool's goodput
    under the routes' shares: `[(lo, hi, k), ...]` covering 1..grid[-1]; the last row is open-ended in vLLM
    (`hi` = the grid's largest size)."""
    sizes = sorted(set(grid))
    rows: list[tuple[int, int, int]] = []
    for i, batch in enumerate(sizes):
        best_k, best_goodput = 0, float("-inf")
        for k in range(max_k + 1):
            goodput = evaluate(routes, {r.name: k for r in routes}, float(batch), step_time).goodput
            if goodput > best_goodput * (1 + 1e-9):
                best_k, best_goodput = k, goodput
        hi = sizes[i + 1] - 1 if i + 1 < len(sizes) else batch
        if rows and rows[-1][2] == best_k:
            rows[-1] = (rows[-1][0], hi, best_k)
        else:
            rows.append((batch, hi, best_k))
    return rows
