"""k as a function of batch size: per-route schedules, and the route-blind table a stock vLLM takes. Pure.

At each batch size B of a grid, the routes of a pool get the goodput-optimal k jointly (controllers/policy.py)
from their measured acceptance and the pool's fitted step time, every pool and batch size in one numpy solve
(controllers/joint_k.py). The result, per route, is a schedule
`((1, k1), (B2, k2), ...)`: k from each listed batch size up to the next. The scheduler plugin looks it up at
every engine step (backends/spec_cap.py has the wire format).

Where a pool's engines run at most `max_num_seqs` requests a step and the operator says so (`PoolProblem.full_at`),
a batch that large is held there by a queue: finishing requests sooner no longer shrinks the batch (below it, by
Little's law, it does, which goodput per slot rewards), and what requests see is their TPOT. From that batch size up
the routes take the ks of the least mean TPOT over requests instead (joint_k.OBJECTIVES), solved once more for those
cells only.

`batch_table` is what the same measurements imply for an engine without the plugin: one k for all requests at
each batch size, in the shape of vLLM's `num_speculative_tokens_per_batch_size` (`[[lo, hi, k], ...]`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from specgate.controllers.joint_k import TOL, GroupStepTime, PoolArrays, hull_starts, polish, score
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
# Batch sizes at which k is decided; between two of them the smaller one's k holds.
BATCH_GRID: tuple[int, ...] = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)

Floats = npt.NDArray[np.float64]
# The step time over arrays of (batch, mean k, largest k), elementwise with broadcasting.
VectorStepTime = Callable[[Floats, Floats, Floats], Floats]


@dataclass(frozen=True, slots=True)
class PoolProblem:
    """The routes of one pool and its step time; `previous` (the schedules in force) is one more starting point."""

    routes: Sequence[RouteState]
    step_time: StepTime
    previous: Mapping[str, Schedule] | None = None
    # The most requests the pool's engines run in a step (vLLM's `max_num_seqs`), where known: a batch that large is
    # held there by a queue, so at that batch size and above the routes' ks minimise their mean TPOT over requests
    # (joint_k.OBJECTIVES) instead of maximising goodput, and it is a batch size of the grid. None: goodput throughout.
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
    starts: Sequence[Sequence[tuple[int, ...]] | None],
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
    starts: Sequence[Sequence[tuple[int, ...]] | None],
    step: GroupStepTime,
    more: npt.NDArray[np.int64] | None = None,
) -> _Best:
    """The best ks found at each batch size of `batches` for the pools `live` (controllers/joint_k.py); `more`, ks of
    shape (pool, batch size, slot), one more start for each pool of `live` and batch size."""
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
    held = [i for i in live if starts[i] is not None]
    if held:
        before = np.stack([_padded(starts[i] or (), pools.width) for i in held])  # (pool, batch size, slot)
        at, j = np.nonzero((before != best.ks[held]).any(axis=2))
        rows.append((np.asarray(held, dtype=np.int64)[at], j, before[at, j]))
    if more is not None:
        at, j = np.nonzero((more[pool_ids] != best.ks[pool_ids]).any(axis=2))
        rows.append((pool_ids[at], j, more[pool_ids][at, j]))
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


def _padded(starts: Sequence[tuple[int, ...]], width: int) -> npt.NDArray[np.int64]:
    return np.array([start + (0,) * (width - len(start)) for start in starts], dtype=np.int64).reshape(-1, width)


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
    routes sharing the pool, within each route's bounds; a route with k_min == k_max is pinned), and from a pool's
    full batch (`PoolProblem.full_at`, itself a batch size of its schedules) up, the k of the least mean TPOT."""
    return [fresh for fresh, _ in plan_schedules(problems, grid, step_many)]


def plan_schedules(
    problems: Sequence[PoolProblem], grid: Sequence[int] = BATCH_GRID, step_many: GroupStepTime | None = None
) -> list[tuple[Mapping[str, Schedule], Gain | None]]:
    """What each tick needs per pool: the fresh schedules (`pool_schedules`) and how much they gain over the pool's
    `previous` ones (`schedule_gains`; None without routes or previous schedules). One set of arrays and one solve
    serve both: the fresh schedules' figures are the solver's own."""
    sizes = _sizes(problems, grid)
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
    pools = _Objectives(problems, sizes)
    best = _solve(pools.goodput, live, [float(b) for b in sizes], starts, step)
    if pools.full:
        best = _with_full(best, pools, sizes, starts, step)
    chosen: list[list[list[int]]] = best.ks.transpose(0, 2, 1).tolist()  # (pool, slot, batch size)
    before: tuple[Floats, Floats] | None = None
    if held:
        group = np.repeat(np.asarray(list(held), dtype=np.int64), g)
        cell = np.tile(np.arange(g, dtype=np.int64), len(held))
        before = pools.score(group, cell, _padded([row for rows in held.values() for row in rows], pools.width), step)
    out: list[tuple[Mapping[str, Schedule], Gain | None]] = []
    place = {i: n for n, i in enumerate(held)}
    grid_key = tuple(sizes)
    for i, pr in enumerate(problems):
        if not pr.routes:
            out.append(({}, None))
            continue
        fresh = {r.name: _compressed(grid_key, tuple(chosen[i][n])) for n, r in enumerate(pr.routes)}
        gain = None
        if before is not None and i in place:
            span = slice(place[i] * g, (place[i] + 1) * g)
            gain = _gain(sizes, before[0][span], before[1][span], best.violation[i], best.goodput[i])
        out.append((fresh, gain))
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


def _sizes(problems: Sequence[PoolProblem], grid: Sequence[int]) -> list[int]:
    """The batch sizes solved: the grid's and each pool's full batch (`PoolProblem.full_at`)."""
    return sorted(set(grid) | {pr.full_at for pr in problems if pr.full_at is not None and pr.routes})


class _Objectives:
    """The pools' routes as arrays under each objective, and which (pool, batch size) cells are full (at or past
    `PoolProblem.full_at`: mean TPOT there, goodput elsewhere)."""

    def __init__(self, problems: Sequence[PoolProblem], sizes: Sequence[int]) -> None:
        groups = [pr.routes for pr in problems]
        self.sizes = np.asarray(sizes, dtype=np.float64)
        self.goodput = PoolArrays(groups)
        self.width = self.goodput.width
        limits = np.array([np.inf if pr.full_at is None else pr.full_at for pr in problems], dtype=np.float64)
        # (pool, batch size): the mean-TPOT cells.
        self.is_full = self.sizes[None, :] >= limits[:, None]
        self.full = [i for i, pr in enumerate(problems) if pr.routes and self.is_full[i].any()]
        self.tpot = PoolArrays(groups, "tpot") if self.full else None

    def score(
        self, group: npt.NDArray[np.int64], cell: npt.NDArray[np.int64], ks: npt.NDArray[np.int64], step: GroupStepTime
    ) -> tuple[Floats, Floats]:
        """`joint_k.score` of each row (pool `group`, batch size number `cell` of the sizes solved), under its cell's
        objective."""
        batch = self.sizes[cell]
        violation, value = score(self.goodput, group, batch, ks, step)
        if self.tpot is not None:
            full = self.is_full[group, cell]
            if full.any():
                v, t = score(self.tpot, group[full], batch[full], ks[full], step)
                violation[full], value[full] = v, t
        return violation, value


def _with_full(
    best: _Best,
    pools: _Objectives,
    sizes: Sequence[int],
    starts: Sequence[Sequence[tuple[int, ...]] | None],
    step: GroupStepTime,
) -> _Best:
    """`best` with each pool's full cells (`_Objectives`) solved again for the mean TPOT, from the same kinds of
    starts (the Lagrangian's, the neighbours', the schedules in force at those cells) and goodput's answer there. The
    ascent stops at local optima past a knee: against exhaustive search over random problems, the least mean TPOT was
    missed in 7 of 1,500 without goodput's answer as a start (by 2.1% at worst) and in 6 of 4,000 with it (2.0%);
    without the Lagrangian's starts, in 250 of 4,000 (25%)."""
    assert pools.tpot is not None
    cells = [j for j in range(len(sizes)) if pools.is_full[:, j].any()]
    sub_starts = [None if st is None else [st[j] for j in cells] for st in starts]
    at = np.asarray(cells, dtype=np.int64)
    sub = _solve(pools.tpot, pools.full, [float(sizes[j]) for j in cells], sub_starts, step, best.ks[:, at])
    ks, violation, value = best.ks.copy(), best.violation.copy(), best.goodput.copy()
    full = pools.is_full[:, at]  # (pool, full cell)
    ks[:, at] = np.where(full[:, :, None], sub.ks, ks[:, at])
    violation[:, at] = np.where(full, sub.violation, violation[:, at])
    value[:, at] = np.where(full, sub.goodput, value[:, at])
    return _Best(ks, violation, value)


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
    sizes = _sizes(problems, grid)
    group: list[int] = []
    starts: list[tuple[int, ...]] = []
    for i in live:
        pr = problems[i]
        assert pr.previous is not None
        for schedules in (pr.previous, fresh[i]):
            at = _on_grid(pr.routes, schedules, sizes)
            group += [i] * len(at)
            starts += at
    step = step_many or _grouped([pr.step_time for pr in problems])
    pools = _Objectives(problems, sizes)
    g = len(sizes)
    cell = np.tile(np.arange(g, dtype=np.int64), 2 * len(live))
    violation, goodput = pools.score(np.array(group, dtype=np.int64), cell, _padded(starts, pools.width), step)
    for n, i in enumerate(live):
        old, new = slice(2 * n * g, (2 * n + 1) * g), slice((2 * n + 1) * g, (2 * n + 2) * g)
        out[i] = _gain(sizes, violation[old], goodput[old], violation[new], goodput[new])
    return out


def _gain(sizes: Sequence[int], old_v: Floats, old_g: Floats, new_v: Floats, new_g: Floats) -> Gain:
    """New against old figures at each batch size of `sizes`: the largest relative goodput gain (at a full batch, of
    B * H / T: the mean TPOT's), where it is, and whether the new break fewer SLOs somewhere."""
    ratio = new_g / np.maximum(old_g, 1e-12) - 1.0
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
