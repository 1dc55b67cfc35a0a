"""k by batch size: per-route schedules and the route-blind table for stock engines."""

from __future__ import annotations

import random
import warnings
from itertools import pairwise, product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers.controller import _bounded
from specgate.controllers.joint_k import PoolArrays
from specgate.controllers.policy import RouteState, evaluate
from specgate.controllers.schedule import (
    BATCH_GRID,
    PoolProblem,
    batch_table,
    plan_schedules,
    pool_schedules,
    route_schedules,
    schedule_gains,
)


def gpu_like(b: float, kbar: float, kmax: float) -> float:
    # Memory-bound until 64 verified tokens, then each token costs: speculation pays at small batch only.
    return 0.012 + 0.0003 * max(0.0, b * (1 + kbar) - 64) + 0.0002 * kmax


def lengths(alpha: float, k_max: int = 4) -> tuple[float, ...]:
    return tuple(sum(alpha**i for i in range(k + 1)) for k in range(k_max + 1))


def k_at(schedule: tuple[tuple[int, int], ...], batch: int) -> int:
    return [k for lo, k in schedule if lo <= batch][-1]


def test_schedule_falls_with_load_and_starts_at_batch_one() -> None:
    (code,) = route_schedules([RouteState("code", 1.0, 0, 4, lengths(0.8))], gpu_like).values()
    assert code[0][0] == 1 and code[0][1] == 4  # alone, all drafts pay
    assert k_at(code, 256) == 0  # far past the knee none do
    ks = [k_at(code, b) for b in BATCH_GRID]
    assert ks == sorted(ks, reverse=True)  # non-increasing in batch size under this cost model


def test_routes_of_different_acceptance_get_different_schedules() -> None:
    routes = [RouteState("code", 0.5, 0, 4, lengths(0.9)), RouteState("chat", 0.5, 0, 4, lengths(0.3))]
    s = route_schedules(routes, gpu_like)
    assert all(k_at(s["code"], b) >= k_at(s["chat"], b) for b in BATCH_GRID)
    assert any(k_at(s["code"], b) > k_at(s["chat"], b) for b in BATCH_GRID)


def test_bounds_and_pins_hold_at_every_batch_size() -> None:
    routes = [RouteState("pinned", 0.5, 2, 2, lengths(0.0)), RouteState("bounded", 0.5, 1, 3, lengths(0.95))]
    s = route_schedules(routes, gpu_like)
    assert s["pinned"] == ((1, 2),)
    assert all(1 <= k <= 3 for _, k in s["bounded"])


def test_each_point_is_the_best_joint_choice_at_its_batch_size() -> None:
    routes = [RouteState("a", 0.7, 0, 4, lengths(0.85)), RouteState("b", 0.3, 0, 4, lengths(0.5))]
    s = route_schedules(routes, gpu_like)
    for b in (1, 16, 48, 128):
        chosen = {name: k_at(s[name], b) for name in s}
        got = evaluate(routes, chosen, b, gpu_like).goodput
        for ka in range(5):
            for kb in range(5):
                assert got >= evaluate(routes, {"a": ka, "b": kb}, b, gpu_like).goodput * (1 - 1e-6)


def test_batch_table_is_one_k_per_size_and_covers_the_grid() -> None:
    routes = [RouteState("code", 0.5, 0, 4, lengths(0.9)), RouteState("chat", 0.5, 0, 4, lengths(0.3))]
    table = batch_table(routes, gpu_like, 4)
    assert table[0][0] == 1 and table[-1][1] == BATCH_GRID[-1]
    assert all(a[1] + 1 == b[0] for a, b in pairwise(table))  # contiguous
    assert all(a[2] != b[2] for a, b in pairwise(table))  # merged where k repeats
    assert table[0][2] > 0 and table[-1][2] == 0
    # Route-blind: never better than the per-route schedules at the same batch size.
    s = route_schedules(routes, gpu_like)
    for lo, _, k in table:
        blind = evaluate(routes, {"code": k, "chat": k}, lo, gpu_like).goodput
        aware = evaluate(routes, {n: k_at(s[n], lo) for n in s}, lo, gpu_like).goodput
        assert aware >= blind * (1 - 1e-6)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 0.99), st.floats(0.0, 0.99), st.floats(0.05, 0.95))
def test_schedules_stay_within_bounds_for_any_acceptance(a: float, b: float, share: float) -> None:
    routes = [RouteState("x", share, 0, 4, lengths(a)), RouteState("y", 1 - share, 1, 3, lengths(b, 3))]
    s = route_schedules(routes, gpu_like)
    assert all(0 <= k <= 4 for _, k in s["x"]) and all(1 <= k <= 3 for _, k in s["y"])
    assert s["x"][0][0] == 1 and s["y"][0][0] == 1
    assert all(p[0] < q[0] for sched in s.values() for p, q in pairwise(sched))


def proposing(alpha: float, q: float, k_max: int = 4) -> tuple[float, ...]:
    """Expected tokens per step of a drafter that proposes on a share q of steps: 1 + q (L(k) - 1)."""
    return tuple(1 + q * (length - 1) for length in lengths(alpha, k_max))


def test_a_drafter_that_rarely_proposes_is_charged_only_for_the_drafts_it_makes() -> None:
    """Chat on an n-gram drafter: few steps find a repeat, so few carry drafts. Charged k drafts on every step, the
    same tokens per step look too expensive past the knee; charged q k they pay further up the batch sizes."""
    tokens = proposing(0.7, 0.25)
    as_if_always = route_schedules([RouteState("chat", 1.0, 0, 4, tokens)], gpu_like)["chat"]
    as_measured = route_schedules([RouteState("chat", 1.0, 0, 4, tokens, proposal_rate=0.25)], gpu_like)["chat"]
    assert all(k_at(as_measured, b) >= k_at(as_if_always, b) for b in BATCH_GRID)
    assert any(k_at(as_measured, b) > k_at(as_if_always, b) for b in BATCH_GRID)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 0.99), st.floats(0.01, 1.0), st.sampled_from([1, 8, 32, 64, 96, 192]))
def test_one_route_schedule_is_the_exact_optimum_for_any_proposal_rate(alpha: float, q: float, batch: int) -> None:
    route = RouteState("r", 1.0, 0, 4, proposing(alpha, q), proposal_rate=q)
    chosen = k_at(route_schedules([route], gpu_like)["r"], batch)
    got = evaluate([route], {"r": chosen}, batch, gpu_like).goodput
    assert all(got >= evaluate([route], {"r": k}, batch, gpu_like).goodput * (1 - 1e-6) for k in range(5))


def _gain_by_evaluate(
    routes: list[RouteState], old: dict[str, tuple[tuple[int, int], ...]], new: dict[str, tuple[tuple[int, int], ...]]
) -> tuple[float, dict[int, float], bool]:
    """The hysteresis test the slow way, policy.evaluate at each batch size of the grid (the reference): the largest
    gain, the gain at each batch size, whether the new schedules break fewer SLOs somewhere."""
    gain, by_batch, fewer = 0.0, {}, False
    for b in BATCH_GRID:

        def ks(s: dict[str, tuple[tuple[int, int], ...]], b: int = b) -> dict[str, int]:
            return {r.name: max(r.k_min, min(r.k_max, k_at(s[r.name], b))) for r in routes}

        before, after = evaluate(routes, ks(old), b, gpu_like), evaluate(routes, ks(new), b, gpu_like)
        by_batch[b] = after.goodput / max(before.goodput, 1e-12) - 1
        gain = max(gain, by_batch[b])
        fewer = fewer or after.slo_violation < before.slo_violation - 1e-9
    return gain, by_batch, fewer


schedules_st = st.lists(st.tuples(st.sampled_from(BATCH_GRID[1:]), st.integers(0, 5)), max_size=4).flatmap(
    lambda pts: st.integers(0, 5).map(lambda k1: ((1, k1), *sorted(dict(pts).items())))
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.05, 0.95),
            st.floats(0.01, 1.0),
            st.integers(0, 2),
            st.one_of(st.none(), st.floats(0.002, 0.05)),
            schedules_st,
            schedules_st,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_schedule_gains_match_evaluate_at_every_batch_size(spec: list[tuple]) -> None:
    routes = [RouteState(f"r{i}", s[1], s[2], 4, lengths(s[0]), s[3]) for i, s in enumerate(spec)]
    old = {f"r{i}": s[4] for i, s in enumerate(spec)}
    new = {f"r{i}": s[5] for i, s in enumerate(spec)}
    (gained,) = schedule_gains([PoolProblem(routes, gpu_like, old)], [new], step_many=None)
    assert gained is not None
    gain, by_batch, fewer = _gain_by_evaluate(routes, old, new)
    assert abs(gained.gain - gain) <= 1e-9 * max(1.0, gain)
    assert gained.fewer_violations == fewer
    if gain > 1e-9:  # where the gain is (several batch sizes may tie)
        assert abs(by_batch[gained.at] - gain) <= 1e-9 * max(1.0, gain)


def test_schedule_gains_skip_pools_without_routes_or_history() -> None:
    route = RouteState("r", 1.0, 0, 4, lengths(0.7))
    empty, fresh = PoolProblem([], gpu_like, {}), PoolProblem([route], gpu_like, None)
    assert schedule_gains([empty, fresh], [{}, {"r": ((1, 2),)}]) == [None, None]


def _rms_tpot(routes: list[RouteState], ks: tuple[int, ...], batch: float) -> float:
    """The root mean square of the routes' TPOT over requests (request shares from `request_rate`) at `batch` with
    these ks: what the "tpot" objective minimises."""
    total = sum(r.share for r in routes)
    kbar = sum(r.share / total * r.proposal_rate * k for r, k in zip(routes, ks, strict=True))
    step = gpu_like(batch, kbar, max(ks))
    rate = sum(r.request_rate or 0.0 for r in routes)
    return (
        step * sum((r.request_rate or 0.0) / rate / r.lengths[k] ** 2 for r, k in zip(routes, ks, strict=True)) ** 0.5
    )


def _goodput(routes: list[RouteState], ks: tuple[int, ...], batch: float) -> float:
    total = sum(r.share for r in routes)
    kbar = sum(r.share / total * r.proposal_rate * k for r, k in zip(routes, ks, strict=True))
    tokens = sum(r.share / total * r.lengths[k] for r, k in zip(routes, ks, strict=True))
    return batch * tokens / gpu_like(batch, kbar, max(ks))


def test_a_full_batch_takes_the_ks_of_the_least_tpot_not_the_most_goodput() -> None:
    """Where the engine's batch is full (`full_at`, its max_num_seqs) a queue holds it there: tokens per second no
    longer shrink the batch, and what requests see is their TPOT. Code's extra drafts add tokens but slow chat's many
    short requests more than they speed code's few."""
    routes = [
        RouteState("code", 0.5, 0, 4, lengths(0.9), request_rate=1.0),
        RouteState("chat", 0.5, 0, 4, lengths(0.2), request_rate=3.0),
    ]
    every = list(product(range(5), repeat=2))
    least_tpot = min(every, key=lambda ks: _rms_tpot(routes, ks, 24))
    most_goodput = max(every, key=lambda ks: _goodput(routes, ks, 24))
    assert least_tpot != most_goodput  # the two objectives disagree here
    full = route_schedules(routes, gpu_like, full_at=24)
    assert (k_at(full["code"], 24), k_at(full["chat"], 24)) == least_tpot
    plain = route_schedules(routes, gpu_like)
    assert (k_at(plain["code"], 24), k_at(plain["chat"], 24)) == most_goodput
    # Below the full batch nothing changes.
    assert all(k_at(full[r.name], b) == k_at(plain[r.name], b) for r in routes for b in BATCH_GRID if b < 24)


def test_a_full_batch_off_the_grid_is_solved_at_its_own_size() -> None:
    routes = [RouteState("code", 1.0, 0, 4, lengths(0.9), request_rate=1.0)]
    (code,) = route_schedules(routes, gpu_like, full_at=56).values()
    (plain,) = route_schedules(routes, gpu_like).values()
    assert k_at(code, 56) == min(range(5), key=lambda k: _rms_tpot(routes, (k,), 56))
    assert all(k_at(code, b) == k_at(plain, b) for b in range(1, 48))


def _objective(routes: list[RouteState], ks: tuple[int, ...], batch: int, tpot: bool) -> float:
    return -_rms_tpot(routes, ks, batch) if tpot else _goodput(routes, ks, batch)


@pytest.mark.parametrize("tpot", [False, True])
def test_between_two_sizes_the_switch_is_where_the_larger_sizes_answer_starts_to_do_better(tpot: bool) -> None:
    """The grid is coarse where knees are (48 to 64); each batch size between two of its sizes takes whichever of
    their answers does better there, not the lower size's throughout."""
    routes = [
        RouteState("code", 0.6, 0, 4, lengths(0.85), request_rate=1.0),
        RouteState("chat", 0.4, 0, 4, lengths(0.4), request_rate=2.0),
    ]
    s = route_schedules(routes, gpu_like, full_at=1 if tpot else None)
    sizes = sorted(BATCH_GRID)
    switched = 0
    for lo, hi in pairwise(sizes):
        a = (k_at(s["code"], lo), k_at(s["chat"], lo))
        b = (k_at(s["code"], hi), k_at(s["chat"], hi))
        for batch in range(lo + 1, hi):
            here = (k_at(s["code"], batch), k_at(s["chat"], batch))
            assert here in (a, b)
            best = max(_objective(routes, ks, batch, tpot) for ks in (a, b))
            assert _objective(routes, here, batch, tpot) >= best - 1e-9 * abs(best)
            switched += here == b != a
    assert switched  # some size between two of the grid's took the larger one's answer


def test_a_change_of_switch_points_alone_gains_nothing_by_the_hysteresis_test() -> None:
    """Schedules in force whose switches sit at the grid's sizes (as before switch points, or after a drift) against
    fresh ones whose switches sit between them: the same answers at every size of the grid, so no gain, and the
    schedules in force hold until a change at some size of the grid clears the margin (scoring the switch points
    too was measured worse: docs/controller.md, session 31)."""
    routes = [
        RouteState("code", 0.6, 0, 4, lengths(0.85), request_rate=1.0),
        RouteState("chat", 0.4, 0, 4, lengths(0.4), request_rate=2.0),
    ]
    fresh = route_schedules(routes, gpu_like, full_at=1)
    on_sizes = {
        name: tuple((min((b for b in BATCH_GRID if b >= lo), default=lo), k) for lo, k in schedule)
        for name, schedule in fresh.items()
    }
    assert on_sizes != dict(fresh)
    (gained,) = schedule_gains([PoolProblem(routes, gpu_like, on_sizes, full_at=1)], [fresh])
    assert gained is not None and gained.gain == 0.0
    (same,) = schedule_gains([PoolProblem(routes, gpu_like, dict(fresh), full_at=1)], [fresh])
    assert same is not None and same.gain == 0.0


def test_a_pool_solved_for_the_tpot_from_batch_one_keeps_its_bounds_beside_a_pool_with_goodput_cells() -> None:
    """Goodput's answers start the TPOT's solve only for the pools that have them (a review found a bounded route
    of the other pool taken to k = 0 from their zero rows)."""
    a = [RouteState("a", 1.0, 3, 4, lengths(0.1), request_rate=1.0)]
    b = [RouteState("b", 1.0, 0, 4, lengths(0.8), request_rate=1.0)]
    both = pool_schedules([PoolProblem(a, gpu_like, None, full_at=1), PoolProblem(b, gpu_like, None, full_at=64)])
    alone = pool_schedules([PoolProblem(a, gpu_like, None, full_at=1)])
    assert all(k >= 3 for _, k in both[0]["a"])
    assert both[0] == alone[0]


def test_switch_points_survive_the_max_step_bound() -> None:
    """`_bounded` reads both schedules at their own switch points as well as the grid's sizes."""
    old = ((1, 4), (24, 2), (48, 1), (96, 0))
    new = ((1, 4), (20, 3), (27, 1), (56, 0))
    assert _bounded(old, new, 4) == new
    limited = _bounded(old, new, 1)
    assert all(abs(k_at(limited, b) - k_at(old, b)) <= 1 for b in range(1, 300))
    assert all(k_at(limited, b) == k_at(old, b) + max(-1, min(1, k_at(new, b) - k_at(old, b))) for b in range(1, 300))


def test_one_pools_full_batch_leaves_the_other_pools_as_solved_without_it() -> None:
    """Pools are solved together each tick: one pool's full batch is not another's batch size, nor its objective;
    a pool without routes beside a full one costs no warning."""
    a = [RouteState("a1", 0.5, 0, 4, lengths(0.8), request_rate=1.0), RouteState("a2", 0.5, 0, 4, lengths(0.3))]
    b = [RouteState("b1", 0.7, 0, 4, lengths(0.9), request_rate=2.0), RouteState("b2", 0.3, 0, 4, lengths(0.2))]
    held = {"a1": ((1, 4), (64, 1)), "a2": ((1, 2),)}
    alone = plan_schedules([PoolProblem(a, gpu_like, held)])[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        together = plan_schedules(
            [PoolProblem(a, gpu_like, held), PoolProblem(b, gpu_like, None, full_at=90), PoolProblem([], gpu_like)]
        )
    assert together[0] == alone
    assert together[2] == ({}, None)
    assert together[1] == plan_schedules([PoolProblem(b, gpu_like, None, full_at=90)])[0]


def test_the_tick_and_the_hysteresis_test_read_a_full_batch_alike() -> None:
    routes = [
        RouteState("code", 0.5, 0, 4, lengths(0.9), request_rate=1.0),
        RouteState("chat", 0.5, 0, 4, lengths(0.2), request_rate=3.0),
    ]
    old = {"code": ((1, 4), (32, 3)), "chat": ((1, 0),)}
    problems = [PoolProblem(routes, gpu_like, old, full_at=24), PoolProblem(routes, gpu_like, old, full_at=100)]
    planned = plan_schedules(problems)
    gains = schedule_gains(problems, [fresh for fresh, _ in planned])
    for (_, gain), again in zip(planned, gains, strict=True):
        assert gain is not None and again is not None
        assert gain.at == again.at and abs(gain.gain - again.gain) <= 1e-12
        assert gain.fewer_violations == again.fewer_violations


def test_a_route_with_no_finished_request_counts_at_its_pools_requests_per_batch_share() -> None:
    """Its requests are in the batch (long, or new): it weighs in the mean TPOT as its pool's other routes do per unit
    of batch share, not as nothing."""
    routes = [RouteState("long", 0.4, 0, 4, lengths(0.5)), RouteState("short", 0.6, 0, 4, lengths(0.5), None, 1.0, 3.0)]
    arrays = PoolArrays([routes], "tpot")
    assert arrays.u[0].tolist() == pytest.approx([0.4, 0.6])
    measured = [
        RouteState("a", 0.5, 0, 4, lengths(0.5), None, 1.0, 1.0),
        RouteState("b", 0.5, 0, 4, lengths(0.5), None, 1.0, 3.0),
    ]
    assert PoolArrays([measured], "tpot").u[0].tolist() == pytest.approx([0.25, 0.75])
    unknown = [RouteState("a", 0.3, 0, 4, lengths(0.5)), RouteState("b", 0.7, 0, 4, lengths(0.5))]
    assert PoolArrays([unknown], "tpot").u[0].tolist() == pytest.approx([0.3, 0.7])
    with pytest.raises(ValueError, match="objective"):
        PoolArrays([routes], "latency")


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.05, 0.95), st.floats(0.05, 1.0), st.floats(0.1, 5.0)), min_size=1, max_size=3),
    st.sampled_from([8, 16, 24, 32, 48, 64, 96]),
)
def test_a_full_batch_never_has_a_worse_tpot_than_goodputs_choice(spec: list[tuple], batch: int) -> None:
    routes = [RouteState(f"r{i}", s[1], 0, 4, lengths(s[0]), request_rate=s[2]) for i, s in enumerate(spec)]
    full = route_schedules(routes, gpu_like, full_at=batch)
    plain = route_schedules(routes, gpu_like)
    got = _rms_tpot(routes, tuple(k_at(full[r.name], batch) for r in routes), batch)
    assert got <= _rms_tpot(routes, tuple(k_at(plain[r.name], batch) for r in routes), batch) * (1 + 1e-9)


def test_a_full_batch_is_near_the_least_tpot_of_exhaustive_search() -> None:
    """The ascent is not exact past a knee, as for goodput: over 300 fixed random problems it finds the least mean
    TPOT in nearly all and is never far off (measured over 4,000: 7 missed, by 0.9% at worst)."""
    rng = random.Random(11)
    misses, worst = 0, 1.0
    for _ in range(300):
        batch = rng.choice([8, 16, 24, 32, 48, 64, 96])
        routes = [
            RouteState(
                f"r{i}", rng.uniform(0.05, 1.0), 0, 4, lengths(rng.uniform(0.05, 0.95)), None, 1.0, rng.uniform(0.1, 5)
            )
            for i in range(rng.randint(1, 3))
        ]
        least = min(_rms_tpot(routes, ks, batch) for ks in product(range(5), repeat=len(routes)))
        chosen = route_schedules(routes, gpu_like, full_at=batch)
        ratio = _rms_tpot(routes, tuple(k_at(chosen[r.name], batch) for r in routes), batch) / least
        misses += ratio > 1 + 1e-9
        worst = max(worst, ratio)
    assert misses <= 3
    assert worst <= 1.03


def test_schedule_gains_at_a_full_batch_compare_rms_tpot() -> None:
    """The hysteresis test reads a full batch's cell under the same objective the solver used there, its gain in the
    TPOT's mean square (the objective's power, not its root)."""
    routes = [
        RouteState("code", 0.5, 0, 4, lengths(0.9), request_rate=1.0),
        RouteState("chat", 0.5, 0, 4, lengths(0.2), request_rate=3.0),
    ]
    old = {"code": ((1, 3),), "chat": ((1, 0),)}  # goodput's answer at 24
    new = {"code": ((1, 2),), "chat": ((1, 1),)}  # the TPOT's
    (gained,) = schedule_gains([PoolProblem(routes, gpu_like, old, full_at=24)], [new], grid=(24,))
    assert gained is not None and gained.at == 24
    expected = (_rms_tpot(routes, (3, 0), 24) / _rms_tpot(routes, (2, 1), 24)) ** 2 - 1
    assert abs(gained.gain - expected) <= 1e-9
    (as_goodput,) = schedule_gains([PoolProblem(routes, gpu_like, old)], [new], grid=(24,))
    assert as_goodput is not None and as_goodput.gain == 0.0  # by goodput the new ones are worse
