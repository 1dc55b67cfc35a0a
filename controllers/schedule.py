"""k as a function of batch size: per-route schedules, and the route-blind table a stock vLLM takes. Pure.

At each batch size B of a grid, the routes of a pool get the goodput-optimal k jointly (controllers/policy.py)
from their measured acceptance and the pool's fitted step time. The result, per route, is a schedule
`((1, k1), (B2, k2), ...)`: k from each listed batch size up to the next. The scheduler plugin looks it up at
every engine step (backends/spec_cap.py has the wire format).

`batch_table` is what the same measurements imply for an engine without the plugin: one k for all requests at
each batch size, in the shape of vLLM's `num_speculative_tokens_per_batch_size` (`[[lo, hi, k], ...]`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from specgate.controllers.policy import Assignment, RouteState, StepTime, evaluate, optimise

__all__ = ["BATCH_GRID", "Schedule", "batch_table", "route_schedules"]

# Batch sizes at which k is decided; between two of them the smaller one's k holds.
BATCH_GRID: tuple[int, ...] = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)

Schedule = tuple[tuple[int, int], ...]


def _compress(points: Sequence[tuple[int, int]]) -> Schedule:
    out: list[tuple[int, int]] = []
    for lo, k in points:
        if not out or out[-1][1] != k:
            out.append((lo, k))
    return tuple(out)


def _ranked(a: Assignment) -> tuple[float, float]:
    return (-a.slo_violation, a.goodput)


def _best_joint(
    routes: Sequence[RouteState], batch: float, step_time: StepTime, previous: Mapping[str, int] | None
) -> Assignment:
    """Coordinate ascent finds a local optimum (the routes interact through the step time, and the largest k's
    drafting cost couples them): start it from the previous batch size's answer, from all-off and from all-max,
    and keep the best."""
    starts: list[Mapping[str, int] | None] = [
        previous,
        {r.name: r.k_min for r in routes},
        {r.name: r.k_max for r in routes},
    ]
    return max((optimise(routes, batch, step_time, start=s) for s in starts), key=_ranked)


def route_schedules(
    routes: Sequence[RouteState], step_time: StepTime, grid: Sequence[int] = BATCH_GRID
) -> Mapping[str, Schedule]:
    """Each route's goodput-optimal k at every batch size of `grid` (jointly for the routes sharing the pool,
    within each route's bounds; a route with k_min == k_max is pinned)."""
    points: dict[str, list[tuple[int, int]]] = {r.name: [] for r in routes}
    start: Mapping[str, int] | None = None
    for batch in sorted(set(grid)):
        best = _best_joint(routes, float(batch), step_time, start)
        start = best.ks
        for r in routes:
            points[r.name].append((batch, best.ks[r.name]))
    return {name: _compress(p) for name, p in points.items()}


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
