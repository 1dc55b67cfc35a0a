"""The joint k solver: Lagrangian starts (exact for a step time linear in the mean drafts) and single-move ascent."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers import joint_k
from specgate.controllers.joint_k import PoolArrays, hull_starts, polish
from specgate.controllers.policy import RouteState, evaluate

Floats = np.ndarray


def lengths(alpha: float, q: float, k_max: int) -> tuple[float, ...]:
    """E[L(k)] of a drafter proposing on a share q of steps, per-position acceptance alpha: concave in k."""
    return tuple(1 + q * sum(alpha**i for i in range(1, k + 1)) for k in range(k_max + 1))


def route(i: int, spec: tuple[float, float, float, int, int, float | None]) -> RouteState:
    alpha, q, share, k_min, k_max, slo = spec
    k_max = max(k_min, k_max)
    return RouteState(f"r{i}", share, k_min, k_max, lengths(alpha, q, k_max), slo, q)


route_st = st.tuples(
    st.floats(0.0, 0.98), st.floats(0.05, 1.0), st.floats(0.0, 1.0), st.integers(0, 2), st.integers(0, 4), st.none()
)
linear_st = st.tuples(
    st.floats(0.001, 0.02), st.floats(1e-5, 1e-3), st.floats(0.1, 1.0), st.floats(0.0, 0.002), st.floats(0.0, 0.003)
)


def linear_step(coef: tuple[float, float, float, float, float]):  # type: ignore[no-untyped-def]
    """Linear in the mean drafts, rising in the largest k (a per-k drafting cost and a fixed cost of drafting)."""
    t0, t1, c, t3, t4 = coef

    def scalar(b: float, kbar: float, kmax: float) -> float:
        return t0 + t1 * b * (1 + c * kbar) + t3 * kmax + t4 * (kmax > 0)

    def many(group: np.ndarray, b: Floats, kbar: Floats, kmax: Floats) -> Floats:
        return np.asarray(t0 + t1 * b * (1 + c * kbar) + t3 * kmax + t4 * (kmax > 0), dtype=np.float64)

    return scalar, many


def brute_force(routes: list[RouteState], batch: float, step) -> float:  # type: ignore[no-untyped-def]
    return max(
        evaluate(routes, dict(zip([r.name for r in routes], ks, strict=True)), batch, step).goodput
        for ks in itertools.product(*[range(r.k_min, r.k_max + 1) for r in routes])
    )


@settings(max_examples=80, deadline=None)
@given(st.lists(route_st, min_size=1, max_size=4), linear_st)
def test_the_lagrangian_start_is_the_optimum_when_the_step_is_linear_in_mean_drafts(specs, coef) -> None:  # type: ignore[no-untyped-def]
    """No ascent: the best candidate alone matches exhaustive search at every batch size (docstring of joint_k)."""
    routes = [route(i, s) for i, s in enumerate(specs)]
    scalar, many = linear_step(coef)
    batches = np.array([1.0, 4.0, 16.0, 64.0, 256.0])
    starts = hull_starts(PoolArrays([routes]), batches, many)
    for j, b in enumerate(batches):
        chosen = dict(zip([r.name for r in routes], starts[0, 0, j].tolist(), strict=False))
        assert all(r.k_min <= chosen[r.name] <= r.k_max for r in routes)
        got = evaluate(routes, chosen, float(b), scalar).goodput
        assert got >= brute_force(routes, float(b), scalar) * (1 - 1e-9)


def knee_step(group: np.ndarray, b: Floats, kbar: Floats, kmax: Floats) -> Floats:
    # Flat up to 64 verified tokens, then each costs: not linear, so the starts are only starts.
    return np.asarray(0.012 + 0.0003 * np.maximum(0.0, b * (1 + kbar) - 64) + 0.0002 * kmax, dtype=np.float64)


def knee_scalar(b: float, kbar: float, kmax: float) -> float:
    return float(knee_step(np.zeros(1, dtype=np.int64), np.array(b), np.array(kbar), np.array(kmax)))


def better(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """(violation, goodput): fewer SLO violations first, then more goodput (controllers/policy.py's order)."""
    if abs(a[0] - b[0]) > 1e-9:
        return a[0] < b[0]
    return a[1] > b[1] * (1 + 1e-9)


slo_route_st = st.tuples(
    st.floats(0.0, 0.98),
    st.floats(0.05, 1.0),
    st.floats(0.01, 1.0),
    st.integers(0, 1),
    st.integers(1, 4),
    st.one_of(st.none(), st.floats(0.002, 0.02)),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(slo_route_st, min_size=1, max_size=4), min_size=1, max_size=3),
    st.lists(st.sampled_from([1.0, 8.0, 24.0, 64.0, 192.0]), min_size=1, max_size=6),
    st.randoms(use_true_random=False),
)
def test_the_ascent_ends_where_no_single_move_helps_and_never_loses(pools_spec, batches, rnd) -> None:  # type: ignore[no-untyped-def]
    groups = [[route(i, s) for i, s in enumerate(spec)] for spec in pools_spec]
    arrays = PoolArrays(groups)
    group = np.array([rnd.randrange(len(groups)) for _ in batches], dtype=np.int64)
    starts = np.zeros((len(batches), arrays.width), dtype=np.int64)
    for n, g in enumerate(group):
        starts[n, : len(groups[g])] = [rnd.randint(r.k_min, r.k_max) for r in groups[g]]
    ks, violation, goodput = polish(arrays, group, np.array(batches), starts, knee_step)
    for n, (g, b) in enumerate(zip(group.tolist(), batches, strict=True)):
        routes = groups[g]
        names = [r.name for r in routes]

        def judged(row: list[int], routes: list[RouteState] = routes, names: list[str] = names, b: float = b):  # type: ignore[no-untyped-def]
            a = evaluate(routes, dict(zip(names, row, strict=False)), b, knee_scalar)
            return a.slo_violation, a.goodput

        end = ks[n, : len(routes)].tolist()
        here = judged(end)
        assert abs(here[1] - goodput[n]) <= 1e-9 * here[1] and abs(here[0] - violation[n]) <= 1e-9
        assert not better(judged(starts[n, : len(routes)].tolist()), here)
        for slot, r in enumerate(routes):
            for k in range(r.k_min, r.k_max + 1):
                moved = [*end]
                moved[slot] = k
                assert not better(judged(moved), here), (end, slot, k)


def test_a_limited_ascent_resumed_ends_where_an_unlimited_one_does() -> None:
    """`limit` bounds the rounds; the rows it stopped, started again from where they stood, finish the same walk."""
    routes = [RouteState(f"r{i}", 1.0 / (i + 1), 0, 4, lengths(0.95 - 0.12 * i, 1.0, 4)) for i in range(6)]
    arrays = PoolArrays([routes])
    batches = np.array([1.0, 8.0, 24.0, 64.0])
    group = np.zeros(4, dtype=np.int64)
    start = np.zeros((4, 6), dtype=np.int64)
    full, _, good_full = polish(arrays, group, batches, start, knee_step)
    part, _, _ = polish(arrays, group, batches, start, knee_step, limit=1)
    assert (part != full).any()  # from all-off, one move per row is not enough here
    again, _, good_again = polish(arrays, group, batches, part, knee_step)
    assert (again == full).all() and np.allclose(good_again, good_full)


def test_pools_of_different_sizes_share_the_arrays_with_padding_that_stays_off() -> None:
    small = [RouteState("a", 1.0, 1, 3, lengths(0.9, 1.0, 3))]
    large = [RouteState(f"b{i}", 0.25, 0, 4, lengths(0.5, 1.0, 4)) for i in range(4)]
    arrays = PoolArrays([small, large, []])
    assert arrays.width == 4 and arrays.k1 == 5
    assert not arrays.live[0, 1:].any() and not arrays.live[2].any()
    assert arrays.allowed[0, 0].tolist() == [False, True, True, True, False]  # k_min 1, k_max 3
    assert arrays.allowed[0, 1].tolist() == [True, False, False, False, False]  # padding: k = 0 only
    assert arrays.tab[0, 0, 4] == arrays.tab[0, 0, 3]  # a short table holds its last value
    starts = hull_starts(arrays, np.array([1.0, 256.0]), knee_step)
    assert starts.shape == (1, 3, 2, 4)  # one start per cell without SLOs
    assert (starts[0, 0, :, 1:] == 0).all() and (starts[0, 0, :, 0] >= 1).all() and (starts[0, 0, :, 0] <= 3).all()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(slo_route_st, min_size=1, max_size=5), min_size=1, max_size=4),
    st.sampled_from(["goodput", "tpot"]),
)
def test_leaving_out_repeated_candidates_changes_no_start(pools_spec, objective) -> None:  # type: ignore[no-untyped-def]
    """`_distinct` drops the Lagrangian candidates that repeat an earlier one: every pool's start at every batch size
    is the one the full list gives (the first of equal candidates wins either way)."""
    groups = [[route(i, s) for i, s in enumerate(spec)] for spec in pools_spec]
    arrays = PoolArrays(groups, objective)
    batches = np.array([1.0, 8.0, 24.0, 64.0, 192.0])
    kept = hull_starts(arrays, batches, knee_step)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(joint_k, "_distinct", lambda ks, ok, kmax, cap: (ks, ok, kmax))
        every = hull_starts(arrays, batches, knee_step)
    assert np.array_equal(kept, every)


def lin_step(group: np.ndarray, b: Floats, kbar: Floats, kmax: Floats) -> Floats:
    return np.asarray(0.01 + 1e-4 * b * (1 + 0.5 * kbar) + 0.0003 * kmax + 0.001 * (kmax > 0), dtype=np.float64)


def full_list_starts(arrays: PoolArrays, batches: Floats, step) -> np.ndarray:  # type: ignore[no-untyped-def]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(joint_k, "_distinct", lambda ks, ok, kmax, cap: (ks, ok, kmax))
        return hull_starts(arrays, batches, step)


def test_a_table_that_is_not_concave_keeps_every_candidate() -> None:
    """`_distinct`'s argument needs each route's term concave in k (an estimator's E[L(k)] is; a caller's table may
    not be): here increments 0.9, 0.5, 0.4 beside 0.3, 0.5, where leaving out repeats had given [1, 0] at batch 256
    (1.5% less goodput) instead of the full list's [2, 0] (found by a review)."""
    routes = [
        RouteState("a", 0.5, 0, 3, (1.0, 1.9, 2.4, 2.8), None, 1.0),
        RouteState("b", 0.5, 0, 2, (1.0, 1.3, 1.8), None, 1.0),
    ]
    arrays, batches = PoolArrays([routes]), np.array([1.0, 16.0, 64.0, 256.0])
    got = hull_starts(arrays, batches, lin_step)
    assert got[0, 0, 3].tolist() == [2, 0]
    assert np.array_equal(got, full_list_starts(arrays, batches, lin_step))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from([0.0, 0.1, 0.3, 0.4, 0.5, 0.9, 1.0]), min_size=1, max_size=4),
            st.floats(0.05, 1.0),
            st.floats(0.0, 1.0),
        ),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from(["goodput", "tpot"]),
)
def test_starts_are_the_full_lists_whatever_the_tables(specs, objective) -> None:  # type: ignore[no-untyped-def]
    """Tables with rising increments too: every start is the one the full list of candidates gives."""
    routes = [
        RouteState(f"r{i}", share, 0, len(steps), tuple(1.0 + sum(steps[:k]) for k in range(len(steps) + 1)), None, q)
        for i, (steps, q, share) in enumerate(specs)
    ]
    arrays = PoolArrays([routes], objective)
    batches = np.array([1.0, 16.0, 64.0, 256.0])
    for step in (knee_step, lin_step):
        assert np.array_equal(hull_starts(arrays, batches, step), full_list_starts(arrays, batches, step))
