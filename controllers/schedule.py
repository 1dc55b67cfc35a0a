"""k as a function of batch size: per-route schedules, and the route-blind table a stock vLLM takes. Pure.

At each batch size B of a grid, the routes of a pool get their ks jointly from their measured acceptance and the
pool's fitted step time, every pool and batch size in one numpy solve (controllers/joint_k.py): from the pool's
`PoolProblem.full_at` up, the least TPOT over requests (its root mean square, joint_k.OBJECTIVES; the controller's
default objective sets it to 1: every batch size), below it the most goodput (controllers/policy.py). Between two
sizes whose answers differ, the switch is placed where the larger size's answer starts to do better (`_Cells.switches`).
The result, per route, is a schedule `((1, k1), (B2, k2), ...)`: k from each listed batch size up to the next. The
scheduler plugin looks it up at every engine step (backends/spec_cap.py has the wire format).

Under the goodput objective a pool may say its engines run at most `max_num_seqs` requests a step (`full_at`): a
batch that large is held there by a queue, so finishing requests sooner no longer shrinks it (below it, by Little's
law, it does, which goodput per slot rewards), and what requests see is their TPOT.

`batch_table` is what the same measurements imply for an engine without the plugin: one k for all requests at
each batch size, in the shape of vLLM's `num_speculative_tokens_per_batch_size` (`[[lo, hi, k], ...]`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from specgate.controllers.joint_k import TOL, TPOT_POWER, GroupStepTime, PoolArrays, hull_starts, polish, score
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
    "plan_schedules",
    "pool_schedules",
    "route_schedules",
    "schedule_gains",
]

# Rounds of single-move ascent from a neighbouring batch size's answer or the schedules in force (joint_k.polish).
_MORE_ROUNDS = 3
# Batch sizes at which k is decided; between two of them, whichever of their answers does better (`_Cells.switches`).
BATCH_GRID: tuple[int, ...] = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)

Floats = npt.NDArray[np.float64]
# Rows of routes' ks in route order, one per batch size: tuples, or an array (batch size, route).
KsRows = Sequence[tuple[int, ...]] | npt.NDArray[np.int64]
# The step time over arrays of (batch, mean k, largest k), elementwise with broadcasting.
VectorStepTime = Callable[[Floats, Floats, Floats], Floats]


@dataclass(frozen=True, slots=True)
class PoolProblem:
    """The routes of one pool and its step time; `previous` (the schedules in force) is one more starting point."""

    routes: Sequence[RouteState]
    step_time: StepTime
    previous: Mapping[str, Schedule] | None = None
    # The batch size from which the routes' ks minimise their TPOT over requests (joint_k.OBJECTIVES) instead of
    # maximising goodput, itself a batch size of the pool's schedules: 1 under the controller's default objective, or
    # the engines' `max_num_seqs` (a batch that large is held there by a queue). None: goodput throughout.
    full_at: int | None = None


def joint_optima(
    problems: Sequence[PoolProblem],
    batches: Sequence[float],
    starts: Sequence[Sequence[Mapping[str, int]] | None] | None = None,
    step_many: GroupStepTime | None = None,
) -> list[list[dict[str, int]]]:
    """For each pool, the joint goodput-optimal k of its routes at each batch size of `batches`
    (controllers/joint_k.py: Lagrangian starts polished by single-move ascent), also ascending from
    `starts[pool][j]` for `batches[j]` when given. `step_many(group, batch, kbar, kmax)` is the step time of pool
    number `group` over arrays; each pool's scalar step time, vectorised, when not given."""
    clamped = [
        None if starts is None or starts[i] is None else [_clamp(pr.routes, start) for start in starts[i] or ()]
        for i, pr in enumerate(problems)
    ]
    return _joint_optima(problems, batches, clamped, step_many)


def _joint_optima(
    problems: Sequence[PoolProblem],
    batches: Sequence[float],
    starts: Sequence[KsRows | None],
    step_many: GroupStepTime | None,
) -> list[list[dict[str, int]]]:
    """`joint_optima` with each start given as the routes' ks in order, within their bounds."""
    out: list[list[dict[str, int]]] = [[{} for _ in batches] for _ in problems]
    live = [i for i, pr in enumerate(problems) if pr.routes]
    if not live or not batches:
        return out
    step = step_many or _grouped([pr.step_time for pr in problems])
    best = _solve(PoolArrays([pr.routes for pr in problems]), live, batches, starts, step).ks.tolist()
    for i in live:
        names = [r.name for r in problems[i].routes]
        out[i] = [dict(zip(names, best[i][j], strict=False)) for j in range(len(batches))]
    return out


def _unsolved(n: int, g: int, width: int) -> _Best:
    """No answers for `n` pools at `g` batch sizes: every route's k at 0, figures never better than any."""
    return _Best(np.zeros((n, g, width), dtype=np.int64), np.full((n, g), np.inf), np.full((n, g), -np.inf))


@dataclass(frozen=True, slots=True)
class _Best:
    """The best ks found per (pool number, batch size number), with their SLO violation and goodput."""

    ks: npt.NDArray[np.int64]  # (pool, batch size, slot)
    violation: Floats  # (pool, batch size)
    goodput: Floats


def _solve(
    pools: PoolArrays,
    live: Sequence[int],
    batches: Sequence[float],
    starts: Sequence[KsRows | None],
    step: GroupStepTime,
    more: tuple[npt.NDArray[np.int64], Sequence[int]] | None = None,
) -> _Best:
    """The best ks found at each batch size of `batches` for the pools `live` (controllers/joint_k.py); `more`, ks of
    shape (pool, batch size, slot) and the pools they hold answers for: one more start for each of those of `live`
    and each batch size."""
    g = len(batches)
    batch = np.asarray(batches, dtype=np.float64)
    hull = hull_starts(pools, batch, step)  # (start, pool, batch size, slot)
    pool_ids = np.asarray(live, dtype=np.int64)
    cell_group, cell_index = np.repeat(pool_ids, g), np.tile(np.arange(g, dtype=np.int64), len(live))
    group, index, ks = cell_group, cell_index, hull[0, cell_group, cell_index]
    for extra in hull[1:]:
        # Another start per cell, where it differs from the first.
        other = extra[cell_group, cell_index]
        at = np.flatnonzero((other != ks[: len(cell_group)]).any(axis=1))
        group, index = np.concatenate([group, cell_group[at]]), np.concatenate([index, cell_index[at]])
        ks = np.concatenate([ks, other[at]])
    best = _cells(pools, group, index, *polish(pools, group, batch[index], ks, step), g)
    # More starts, a few rounds of ascent each: each batch size's neighbours' answers (what a sequential pass over the
    # grid gets for free: near a knee one cell's ascent can stop where its neighbour's answer is better) and the
    # schedules in force. A start that needs more rounds is far from this cell's optimum and seldom beats it
    # (measured: docs/controller.md); the schedules in force need no ascent to be kept (the hysteresis test
    # compares them as they stand).
    rows = []
    for shift in (-1, 1) if g > 1 else ():
        j = np.arange(max(0, -shift), g - max(0, shift))
        near = best.ks[pool_ids][:, j + shift]  # (pool, batch size, slot): the neighbour's answer
        at, n = np.nonzero((near != best.ks[pool_ids][:, j]).any(axis=2))
        rows.append((pool_ids[at], j[n], near[at, n]))
    given = {i: start for i in live if (start := starts[i]) is not None}
    held = list(given)
    if held:
        before = np.stack([_padded(start, pools.width) for start in given.values()])  # (pool, batch size, slot)
        at, j = np.nonzero((before != best.ks[held]).any(axis=2))
        rows.append((np.asarray(held, dtype=np.int64)[at], j, before[at, j]))
    if more is not None:
        ks_more, pools_more = more
        ids = np.asarray(sorted(set(pools_more) & set(live)), dtype=np.int64)
        at, j = np.nonzero((ks_more[ids] != best.ks[ids]).any(axis=2))
        rows.append((ids[at], j, ks_more[ids][at, j]))
    group = np.concatenate([r[0] for r in rows]) if rows else np.zeros(0, dtype=np.int64)
    if len(group):
        index = np.concatenate([r[1] for r in rows])
        ks = np.concatenate([r[2] for r in rows])
        ks, violation, goodput = polish(pools, group, batch[index], ks, step, _MORE_ROUNDS)
        # Judged together with the answers so far, each a row of its own cell.
        here, j = cell_group, cell_index
        best = _cells(
            pools,
            np.concatenate([here, group]),
            np.concatenate([j, index]),
            np.concatenate([best.ks[here, j], ks]),
            np.concatenate([best.violation[here, j], violation]),
            np.concatenate([best.goodput[here, j], goodput]),
            g,
        )
    return best


def _cells(
    pools: PoolArrays,
    group: npt.NDArray[np.int64],
    index: npt.NDArray[np.int64],
    ks: npt.NDArray[np.int64],
    violation: Floats,
    goodput: Floats,
    g: int,
) -> _Best:
    """The best row per (pool number, batch size number): fewest SLO violations, then most goodput (the first row
    among equals)."""
    order = np.lexsort((np.arange(len(group)), -goodput, violation, index, group))
    key = (group * g + index)[order]
    first = order[np.concatenate([[True], key[1:] != key[:-1]])]
    out_ks = np.zeros((len(pools.w), g, pools.width), dtype=np.int64)
    out_v = np.full((len(pools.w), g), np.inf)
    out_g = np.full((len(pools.w), g), -np.inf)
    out_ks[group[first], index[first]] = ks[first]
    out_v[group[first], index[first]] = violation[first]
    out_g[group[first], index[first]] = goodput[first]
    return _Best(out_ks, out_v, out_g)


@lru_cache(maxsize=8192)
def _compressed(sizes: tuple[int, ...], ks: tuple[int, ...]) -> Schedule:
    """A route's ks on the grid as its schedule. Cached: a route's answer seldom changes from one tick to the next."""
    return compress(list(zip(sizes, ks, strict=True)))


def _padded(starts: KsRows, width: int) -> npt.NDArray[np.int64]:
    """Rows of routes' ks as an array (rows, `width`), 0 in the slots past a row's routes."""
    if isinstance(starts, np.ndarray):
        out = np.zeros((len(starts), width), dtype=np.int64)
        out[:, : starts.shape[1]] = starts
        return out
    return np.array([start + (0,) * (width - len(start)) for start in starts], dtype=np.int64).reshape(-1, width)


def _switch_points(
    arrays: PoolArrays,
    group: npt.NDArray[np.int64],
    first: npt.NDArray[np.int64],
    second: npt.NDArray[np.int64],
    lo: Sequence[int],
    hi: Sequence[int],
    step: GroupStepTime,
) -> list[int]:
    """Per row (pool `group`), the least batch size in (lo, hi] at which the routes' ks `second` do better than
    `first` (fewer SLO violations, then more of the objective), by bisection: `hi` where `first` holds throughout.
    One crossing is assumed between two sizes (the step time is piecewise linear in the batch)."""
    low, high = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    while True:
        rows = np.flatnonzero(high - low > 1)
        if not len(rows):
            return [int(b) for b in high]
        mid = (low[rows] + high[rows]) // 2
        n = len(rows)
        both = np.concatenate([rows, rows])
        batch = np.concatenate([mid, mid]).astype(np.float64)
        v, t = score(arrays, group[both], batch, np.concatenate([first[rows], second[rows]]), step)
        better = np.where(np.abs(v[n:] - v[:n]) > TOL, v[n:] < v[:n], t[n:] > t[:n] * (1 + TOL))
        high[rows] = np.where(better, mid, high[rows])
        low[rows] = np.where(better, low[rows], mid)


def _with_switches(
    own: Sequence[int], ks: npt.NDArray[np.int64], switches: Mapping[int, int]
) -> tuple[tuple[int, ...], list[int]]:
    """A pool's batch sizes with the switch points between them (`_Cells.switches`: from `switches[j]` on, size
    j + 1's answer), and for each, the row of `ks` (batch size, slot) that holds there."""
    at: list[int] = []
    where: list[int] = []
    for j, b in enumerate(own):
        at.append(b)
        where.append(j)
        if j in switches:
            at.append(switches[j])
            where.append(j + 1)
    return tuple(at), where


def _on_grid(
    routes: Sequence[RouteState], schedules: Mapping[str, Schedule], sizes: Sequence[int]
) -> npt.NDArray[np.int64]:
    """The routes' ks on their schedules at each batch size of `sizes` (batch size, route), clamped to their bounds
    (a route without a schedule at its k_min), as `_clamp` would give them, computed column by column."""
    grid = tuple(sizes)
    columns = [on_grid(schedules[r.name], grid) if r.name in schedules else (r.k_min,) * len(grid) for r in routes]
    lo = np.array([r.k_min for r in routes], dtype=np.int64)
    hi = np.array([r.k_max for r in routes], dtype=np.int64)
    ks = np.array(columns, dtype=np.int64).reshape(len(routes), len(grid)).T
    return np.asarray(np.minimum(np.maximum(ks, lo), hi), dtype=np.int64)


def _clamp(routes: Sequence[RouteState], start: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(min(max(start.get(r.name, r.k_min), r.k_min), r.k_max) for r in routes)


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
    """Each pool's route schedules: each route's k at every batch size of `grid` (jointly for the routes sharing the
    pool, within each route's bounds; a route with k_min == k_max is pinned), for the most goodput below the pool's
    full batch (`PoolProblem.full_at`, itself a batch size of its schedules) and the least TPOT from it up, with the
    switch points between sizes (`_Cells.switches`)."""
    return [fresh for fresh, _ in plan_schedules(problems, grid, step_many)]


def plan_schedules(
    problems: Sequence[PoolProblem], grid: Sequence[int] = BATCH_GRID, step_many: GroupStepTime | None = None
) -> list[tuple[Mapping[str, Schedule], Gain | None]]:
    """What each tick needs per pool: the fresh schedules (`pool_schedules`) and how much they gain over the pool's
    `previous` ones (`schedule_gains`; None without routes or previous schedules). One set of arrays and one solve
    serve both: the fresh schedules' figures are the solver's own."""
    sizes = sorted(set(grid))
    g = len(sizes)
    live = [i for i, pr in enumerate(problems) if pr.routes]
    if not live or not g:
        return [({r.name: compress([]) for r in pr.routes}, None) for pr in problems]
    # The schedules in force, read at each batch size: a start for the solver and the figures to beat.
    held = {
        i: _on_grid(problems[i].routes, problems[i].previous or {}, sizes)
        for i in live
        if problems[i].previous is not None
    }
    starts = [held.get(i) if pr.previous else None for i, pr in enumerate(problems)]
    step = step_many or _grouped([pr.step_time for pr in problems])
    cells = _Cells(problems, sizes)
    # Pools whose every batch size is solved for the TPOT have no goodput cells to solve.
    on_grid = [i for i in live if cells.has_grid(i)]
    if cells.pools is not None and on_grid:
        best = _solve(cells.pools, on_grid, [float(b) for b in sizes], starts, step)
    else:
        best = _unsolved(len(problems), len(sizes), cells.width)
    cells.solve(best, starts, step, held)
    switches = cells.switches(step)
    previous = [pr.previous if i in held else None for i, pr in enumerate(problems)]
    before = cells.score(previous, step, held, cells.held_full) if held else None
    fresh: dict[int, Mapping[str, Schedule]] = {}
    for i in live:
        own, ks, _, _ = cells.of(i)
        at, where = _with_switches(own, ks, switches.get(i, {}))
        chosen: list[list[int]] = ks[where].T.tolist()  # (slot, batch size)
        fresh[i] = {r.name: _compressed(at, tuple(chosen[n])) for n, r in enumerate(problems[i].routes)}
    out: list[tuple[Mapping[str, Schedule], Gain | None]] = []
    for i, pr in enumerate(problems):
        if not pr.routes:
            out.append(({}, None))
            continue
        gain = None
        if before is not None and i in held:
            own, _, violation, value = cells.of(i)
            gain = _gain(own, before[0][i], before[1][i], violation, value, pr.full_at)
        out.append((fresh[i], gain))
    return out


def route_schedules(
    routes: Sequence[RouteState],
    step_time: StepTime,
    grid: Sequence[int] = BATCH_GRID,
    previous: Mapping[str, Schedule] | None = None,
    step_many: VectorStepTime | None = None,
    full_at: int | None = None,
) -> Mapping[str, Schedule]:
    """`pool_schedules` for one pool."""
    many = None if step_many is None else (lambda group, b, kbar, kmax: step_many(b, kbar, kmax))
    return pool_schedules([PoolProblem(routes, step_time, previous, full_at)], grid, many)[0]


def _full_sizes(full_at: int | None, sizes: Sequence[int]) -> tuple[int, ...]:
    """A pool's batch sizes solved for the TPOT: its full batch and the grid's beyond it (none without one)."""
    return () if full_at is None else tuple(sorted({full_at, *(b for b in sizes if b >= full_at)}))


class _Cells:
    """Each pool's batch sizes and their answers: the grid's below its full batch (goodput), then its full batch and
    the grid's beyond it (TPOT; `PoolProblem.full_at`). A pool without one has the grid's alone, exactly as solved
    without any: the full batches of other pools are not its batch sizes."""

    def __init__(self, problems: Sequence[PoolProblem], sizes: Sequence[int]) -> None:
        self.problems, self.sizes = problems, list(sizes)
        self.width = max(1, max((len(pr.routes) for pr in problems), default=0))
        self.full = [i for i, pr in enumerate(problems) if pr.routes and pr.full_at is not None]
        self.full_sizes = sorted({b for i in self.full for b in _full_sizes(problems[i].full_at, sizes)})
        self.tpot = PoolArrays([pr.routes for pr in problems], "tpot") if self.full else None
        # Each pool's cells: indices into the grid's sizes (goodput), then into the full sizes (TPOT).
        everywhere = list(range(len(self.sizes)))
        self._split: list[tuple[list[int], list[int]]] = [(everywhere, []) for _ in problems]
        for i in self.full:
            full_at = problems[i].full_at
            assert full_at is not None
            own = set(_full_sizes(full_at, sizes))
            grid = [j for j, b in enumerate(self.sizes) if b < full_at]
            self._split[i] = (grid, [c for c, b in enumerate(self.full_sizes) if b in own])
        # The arrays of goodput's objective, where some pool has batch sizes solved for it.
        on_grid = any(pr.routes and self._split[i][0] for i, pr in enumerate(problems))
        self.pools = PoolArrays([pr.routes for pr in problems]) if on_grid else None
        self._of: dict[int, tuple[tuple[int, ...], npt.NDArray[np.int64], Floats, Floats]] = {}
        # The answers (`solve`): at the grid's sizes, and at the full sizes; the schedules in force read at the full
        # sizes (a start there, and the figures to beat: `score`).
        self.best: _Best | None = None
        self.full_best: _Best | None = None
        self.held_full: dict[int, KsRows] = {}

    def solve(
        self,
        best: _Best,
        starts: Sequence[KsRows | None],
        step: GroupStepTime,
        held_grid: Mapping[int, KsRows] | None = None,
    ) -> None:
        """Take `best`, the grid's answers, and solve the pools' full batches (and the grid's sizes beyond them) for the
        TPOT, from the same kinds of starts as every cell (the Lagrangian's, the neighbours', the schedules in force
        where `starts` has them) and goodput's answer at the grid's size at or below where the pool has one. The
        ascent stops at local optima past a knee: against exhaustive search over 4,000 random problems the least rms
        TPOT was missed in 7 (by 0.9% at worst) with or without goodput's answers as starts (for the mean TPOT: 6, by
        2.0%, with them); without the Lagrangian's starts, in 250 of 4,000 (25%, mean TPOT). `held_grid`: the
        schedules in force already read at the grid's sizes (`_on_grid`), reused where the full sizes are the grid's
        (every pool solved for the TPOT from batch 1)."""
        self.best = best
        self._of.clear()
        if self.tpot is None:
            return
        same = held_grid is not None and self.full_sizes == self.sizes
        self.held_full = {
            i: held_grid[i]
            if same and held_grid is not None and i in held_grid
            else _on_grid(pr.routes, pr.previous, self.full_sizes)
            for i, pr in enumerate(self.problems)
            if i in self.full and pr.previous and (given := starts[i]) is not None and len(given)
        }
        held = [self.held_full.get(i) for i in range(len(self.problems))]
        below = np.maximum(np.searchsorted(self.sizes, self.full_sizes, side="right") - 1, 0)
        sizes = [float(b) for b in self.full_sizes]
        # Goodput's answers as starts where there are some (a pool solved for the TPOT from batch 1 has none).
        solved = [i for i in self.full if self.has_grid(i)]
        more = (best.ks[:, below], solved) if solved else None
        self.full_best = _solve(self.tpot, self.full, sizes, held, step, more)

    def has_grid(self, i: int) -> bool:
        """Whether pool `i` has batch sizes solved for goodput (below its full batch)."""
        return bool(self._split[i][0])

    def sizes_of(self, i: int) -> tuple[int, ...]:
        """Pool `i`'s batch sizes, ascending."""
        grid, full = self._split[i]
        return tuple([self.sizes[j] for j in grid] + [self.full_sizes[c] for c in full])

    def of(self, i: int) -> tuple[tuple[int, ...], npt.NDArray[np.int64], Floats, Floats]:
        """Pool `i`'s batch sizes and, at each, the routes' ks (batch size, slot), SLO violation and objective."""
        if i not in self._of:
            self._of[i] = self._gather(i)
        return self._of[i]

    def _gather(self, i: int) -> tuple[tuple[int, ...], npt.NDArray[np.int64], Floats, Floats]:
        grid, full = self._split[i]
        own = self.sizes_of(i)
        assert self.best is not None
        if not full:
            return own, self.best.ks[i], self.best.violation[i], self.best.goodput[i]
        assert self.full_best is not None
        if not grid:  # solved for the TPOT throughout
            fb = self.full_best
            return own, fb.ks[i, full], fb.violation[i, full], fb.goodput[i, full]
        ks = np.concatenate([self.best.ks[i, grid], self.full_best.ks[i, full]])
        violation = np.concatenate([self.best.violation[i, grid], self.full_best.violation[i, full]])
        value = np.concatenate([self.best.goodput[i, grid], self.full_best.goodput[i, full]])
        return own, ks, violation, value

    def switches(self, step: GroupStepTime) -> dict[int, dict[int, int]]:
        """Where between two of a pool's batch sizes whose answers differ the larger one's answer starts to do better
        (fewer SLO violations, then more of the objective): per pool, {j: b} for sizes j and j + 1 (answer j from size
        j up to b - 1, answer j + 1 from b). A size's answer otherwise holds up to the next size, and the grid is
        coarse where knees are (48 to 64): deciding there at the bucket's lower end had drafts run up to the next
        size. Bisection over the integers between, every pair of every pool in one scoring pass per halving."""
        out: dict[int, dict[int, int]] = {}
        for tpot in (False, True):
            arrays = self.tpot if tpot else self.pools
            if arrays is None:
                continue
            group: list[int] = []
            pair: list[int] = []
            lo: list[int] = []
            hi: list[int] = []
            first: list[npt.NDArray[np.int64]] = []
            second: list[npt.NDArray[np.int64]] = []
            for i in range(len(self.problems)):
                if not self.problems[i].routes:
                    continue
                grid, full = self._split[i]
                if tpot and not full:
                    continue
                own, ks, _, _ = self.of(i)
                start, stop = (len(grid), len(own)) if tpot else (0, len(grid))
                if stop - start < 2:
                    continue
                sizes = np.asarray(own[start:stop])
                # Neighbours with integers between them whose answers differ.
                apart = (sizes[1:] - sizes[:-1] > 1) & (ks[start + 1 : stop] != ks[start : stop - 1]).any(axis=1)
                for j in (start + np.flatnonzero(apart)).tolist():
                    group.append(i)
                    pair.append(j)
                    lo.append(own[j])
                    hi.append(own[j + 1])
                    first.append(ks[j])
                    second.append(ks[j + 1])
            if not group:
                continue
            found = _switch_points(arrays, np.asarray(group), np.stack(first), np.stack(second), lo, hi, step)
            for i, j, b, top in zip(group, pair, found, hi, strict=True):
                if b < top:
                    out.setdefault(i, {})[j] = b
        return out

    def score(
        self,
        schedules: Sequence[Mapping[str, Schedule] | None],
        step: GroupStepTime,
        at_grid: Mapping[int, KsRows] | None = None,
        at_full: Mapping[int, KsRows] | None = None,
    ) -> tuple[dict[int, Floats], dict[int, Floats]]:
        """(SLO violation, objective) of the schedules given for each pool (None: not scored) at each of its batch
        sizes (`of`), every pool in one pass per objective; `at_grid`, `at_full`: their ks at the grid's sizes and
        at the full sizes where already read (`_on_grid`)."""
        parts: dict[bool, tuple[list[int], list[int], list[npt.NDArray[np.int64]]]] = {
            False: ([], [], []),
            True: ([], [], []),
        }
        for i, given in enumerate(schedules):
            if given is None:
                continue
            routes = self.problems[i].routes
            grid, full = self._split[i]
            read = at_grid[i] if at_grid is not None and i in at_grid else _on_grid(routes, given, self.sizes)
            if not full:
                read_full: KsRows = []
            elif at_full is not None and i in at_full:
                read_full = at_full[i]
            else:
                read_full = _on_grid(routes, given, self.full_sizes)
            for tpot, cells, ks in ((False, grid, read), (True, full, read_full)):
                if not cells:
                    continue
                group, index, rows = parts[tpot]
                group += [i] * len(cells)
                index += cells
                rows.append(_padded(np.asarray(ks, dtype=np.int64)[cells], self.width))
        violation: dict[int, list[Floats]] = {}
        value: dict[int, list[Floats]] = {}
        for tpot, (group, index, rows) in parts.items():
            if not group:
                continue
            arrays = self.tpot if tpot else self.pools
            assert arrays is not None
            sizes = np.asarray(self.full_sizes if tpot else self.sizes, dtype=np.float64)
            v, t = score(arrays, np.array(group, dtype=np.int64), sizes[index], np.concatenate(rows), step)
            # Rows are pool by pool: each pool's a run of them.
            start = 0
            for i, n in Counter(group).items():
                violation.setdefault(i, []).append(v[start : start + n])
                value.setdefault(i, []).append(t[start : start + n])
                start += n
        return (
            {i: np.concatenate(got) if len(got) > 1 else got[0] for i, got in violation.items()},
            {i: np.concatenate(got) if len(got) > 1 else got[0] for i, got in value.items()},
        )


@dataclass(frozen=True, slots=True)
class Gain:
    """How much better one set of a pool's schedules is than another: the largest relative gain of the objective
    (goodput, or the TPOT's mean square) over the pool's batch sizes (not its switch points: measured, scoring them
    too took the simulator's acceptance-drift from 1.001x to 1.004x the best baseline), the batch size where
    it is, and whether the new ones break fewer SLOs at some batch size."""

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
    step = step_many or _grouped([pr.step_time for pr in problems])
    cells = _Cells(problems, sizes)
    old_v, old_g = cells.score([pr.previous if i in live else None for i, pr in enumerate(problems)], step)
    new_v, new_g = cells.score([fresh[i] if i in live else None for i in range(len(problems))], step)
    for i in live:
        out[i] = _gain(cells.sizes_of(i), old_v[i], old_g[i], new_v[i], new_g[i], problems[i].full_at)
    return out


def _gain(
    sizes: Sequence[int], old_v: Floats, old_g: Floats, new_v: Floats, new_g: Floats, full_at: int | None = None
) -> Gain:
    """New against old figures at each batch size of `sizes`: the largest relative gain (goodput's; from `full_at` up,
    the TPOT's mean square's), where it is, and whether the new break fewer SLOs somewhere."""
    ratio = np.maximum(new_g / np.maximum(old_g, 1e-12), 0.0)
    if full_at is not None:
        # From the full batch up the figure is B over the TPOT's power mean: its power is what the margin reads (the
        # mean square, not its root, which halves every relative change: measured in the simulator, low-load's worst
        # seed held k = 3 where k = 4 gained 1.4% of the root, 1.046x the best baseline; read so, 1.019x).
        ratio = np.where(np.asarray(sizes) >= full_at, ratio**TPOT_POWER, ratio)
    ratio = ratio - 1.0
    best = int(np.argmax(ratio))
    gained = float(ratio[best]) > 0.0
    return Gain(float(ratio[best]) if gained else 0.0, sizes[best] if gained else 1, bool((new_v < old_v - TOL).any()))


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
