from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.policy import RouteState, break_even_acceptance, evaluate, optimise, speedups


def gpu_like(b: float, kbar: float, kmax: float) -> float:
    # memory-bound at small batch: extra verify tokens nearly free; expensive at large batch
    return 0.012 + 0.0001 * b + 0.00012 * b * kbar + 0.0002 * kmax


def lengths(alpha: float, k_max: int = 4) -> tuple[float, ...]:
    out, total, chain = [], 1.0, 1.0
    for k in range(k_max + 1):
        if k:
            chain *= alpha
            total += chain
        out.append(total)
    return tuple(out)


def test_high_acceptance_low_load_speculates_fully() -> None:
    best = optimise([RouteState("code", 1.0, 0, 4, lengths(0.85))], 4, gpu_like)
    assert best.ks["code"] == 4 and best.speedup["code"] > 2


def test_heavy_load_turns_speculation_off() -> None:
    best = optimise([RouteState("chat", 1.0, 0, 4, lengths(0.5))], 512, gpu_like)
    assert best.ks["chat"] == 0


def test_low_acceptance_stays_low() -> None:
    best = optimise([RouteState("chat", 1.0, 0, 4, lengths(0.05))], 64, gpu_like)
    assert best.ks["chat"] <= 1


def test_routes_sharing_a_pool_get_different_k() -> None:
    routes = [RouteState("code", 0.5, 0, 4, lengths(0.9)), RouteState("chat", 0.5, 0, 4, lengths(0.1))]
    best = optimise(routes, 48, gpu_like)
    assert best.ks["code"] > best.ks["chat"]


def test_bounds_are_respected() -> None:
    best = optimise([RouteState("code", 1.0, 1, 2, lengths(0.95, 2))], 1, gpu_like)
    assert best.ks["code"] == 2
    best = optimise([RouteState("code", 1.0, 1, 2, lengths(0.0, 2))], 1000, gpu_like)
    assert best.ks["code"] == 1


def test_slo_wins_over_goodput() -> None:
    # "bulk" accepts well: speculating it raises goodput, but its drafts make every step longer, and "fast"
    # (nothing to gain from drafts, k pinned to 0) has a TPOT SLO that a step above 26.5 ms breaks.
    def step(b: float, kbar: float, kmax: float) -> float:
        return 0.02 + 0.003 * b * kbar

    bulk = RouteState("bulk", 0.5, 0, 4, lengths(0.9))
    free = optimise([RouteState("fast", 0.5, 0, 0, lengths(0.0, 0)), bulk], 2, step)
    bound = optimise([RouteState("fast", 0.5, 0, 0, lengths(0.0, 0), tpot_slo_s=0.0265), bulk], 2, step)
    assert free.ks["bulk"] == 4 and free.tpot_s["fast"] > 0.0265  # without the SLO: all drafts, fast too slow
    assert bound.ks["bulk"] == 2  # the most drafts that keep fast within its SLO
    assert bound.slo_violation == 0 and bound.tpot_s["fast"] <= 0.0265
    assert bound.goodput < free.goodput  # the SLO costs goodput: it changed the answer


@given(st.integers(1, 8), st.floats(1.0, 12.0))
def test_break_even_acceptance_solves_the_length_equation(k: int, ratio: float) -> None:
    a = break_even_acceptance(k, ratio)
    assert 0.0 <= a <= 1.0
    if 1.0 < ratio < k + 1:
        assert sum(a**i for i in range(k + 1)) == pytest.approx(ratio, rel=1e-6)


def test_break_even_edges() -> None:
    assert break_even_acceptance(0, 3.0) == 0.0
    assert break_even_acceptance(4, 0.9) == 0.0  # free drafts always pay
    assert break_even_acceptance(2, 5.0) == 1.0  # three tokens per step at most: can never pay 5x
    # drafts doubling the step cost need about 0.62 acceptance at k = 2 (1 + a + a^2 = 2)
    assert break_even_acceptance(2, 2.0) == pytest.approx(0.618, abs=1e-3)


# The tests below were written against survivors of a mutation run (docs/mutation.md).


def test_evaluate_computes_the_documented_quantities() -> None:
    # Shares that do not sum to 1 (3:1), routes at different k: T = T(B, kbar, kmax), G = B * sum_r w_r L_r / T,
    # TPOT_r = T / L_r, speedup_r = L_r * T(B, 0, 0) / T.
    a = RouteState("a", 3.0, 0, 4, lengths(0.8))
    b = RouteState("b", 1.0, 0, 4, lengths(0.5))
    got = evaluate([a, b], {"a": 3, "b": 1}, 8, gpu_like)
    step, base = gpu_like(8, (3 * 3 + 1 * 1) / 4, 3), gpu_like(8, 0, 0)
    la, lb = a.lengths[3], b.lengths[1]
    assert got.ks == {"a": 3, "b": 1} and got.step_s == pytest.approx(step, rel=1e-12)
    assert got.goodput == pytest.approx(8 * (0.75 * la + 0.25 * lb) / step, rel=1e-12)
    assert got.tpot_s == pytest.approx({"a": step / la, "b": step / lb}, rel=1e-12)
    assert got.speedup == pytest.approx({"a": la * base / step, "b": lb * base / step}, rel=1e-12)
    off = evaluate([a, b], {"a": 0, "b": 0}, 8, gpu_like)
    assert off.speedup == pytest.approx({"a": 1.0, "b": 1.0}, rel=1e-12)  # speed-up is relative to k = 0


def test_slo_violation_sums_the_relative_excess_of_each_route() -> None:
    def step(b: float, kbar: float, kmax: float) -> float:
        return 0.04

    routes = [
        RouteState("twice", 1.0, 0, 0, lengths(0.0, 0), tpot_slo_s=0.02),  # 40 ms against 20: +100%
        RouteState("quarter", 1.0, 0, 0, lengths(0.0, 0), tpot_slo_s=0.032),  # +25%
        RouteState("within", 1.0, 0, 0, lengths(0.0, 0), tpot_slo_s=0.05),
    ]
    got = evaluate(routes, dict.fromkeys(("twice", "quarter", "within"), 0), 1, step)
    assert got.slo_violation == pytest.approx(1.25)


def test_routes_without_traffic_add_no_drafting_cost() -> None:
    # kmax (what a draft model costs) comes from the routes with traffic: an idle route's k costs nothing.
    live = RouteState("live", 1.0, 0, 4, lengths(0.8))
    idle = RouteState("idle", 0.0, 0, 4, lengths(0.8))
    assert evaluate([live, idle], {"live": 1, "idle": 4}, 8, gpu_like).step_s == pytest.approx(gpu_like(8, 1, 1))
    # no traffic at all: no drafts paid for, nothing produced, nothing breaks
    quiet = evaluate([dataclasses.replace(live, share=0.0), idle], {"live": 3, "idle": 4}, 8, gpu_like)
    assert quiet.step_s == pytest.approx(gpu_like(8, 0, 0)) and quiet.goodput == 0.0


def test_k_beyond_the_known_lengths_counts_the_last_known_length() -> None:
    r = RouteState("r", 1.0, 0, 4, lengths(0.8, 2))  # E[L(k)] known up to k = 2 only
    got = evaluate([r], {"r": 4}, 1, gpu_like)
    assert got.tpot_s["r"] == pytest.approx(gpu_like(1, 4, 4) / r.lengths[2])


def test_k_max_binds_even_where_longer_drafts_would_pay() -> None:
    # Lengths known up to the engine's k = 4, the route allows 2: 3 and 4 would pay here, and are not tried.
    best = optimise([RouteState("code", 1.0, 0, 2, lengths(0.95, 4))], 1, gpu_like)
    assert best.ks["code"] == 2


def test_an_slo_no_choice_can_meet_leaves_goodput_to_decide() -> None:
    def step(b: float, kbar: float, kmax: float) -> float:
        return 0.05  # drafts are free, and every step breaks "strict"'s 10 ms SLO whatever the ks

    strict = RouteState("strict", 0.5, 0, 0, lengths(0.0, 0), tpot_slo_s=0.01)
    bulk = RouteState("bulk", 0.5, 0, 4, lengths(0.8))
    best = optimise([strict, bulk], 4, step)
    assert best.slo_violation == pytest.approx(4.0) and best.ks["bulk"] == 4


def test_nothing_to_gain_keeps_the_starting_k() -> None:
    # Drafts neither cost (flat step time) nor gain (nothing accepted): every k ties, and the optimiser must not
    # wander off the k it starts from (the controller would change k for nothing).
    def flat(b: float, kbar: float, kmax: float) -> float:
        return 0.02

    r = RouteState("chat", 1.0, 0, 4, lengths(0.0))
    for start in (0, 2, 4):
        assert optimise([r], 8, flat, start={"chat": start}).ks["chat"] == start


def test_coordinate_ascent_sweeps_until_nothing_changes() -> None:
    # A draft model whose cost grows with kmax: "a" (small share) alone cannot pay for it, so the first sweep leaves
    # it at 0; once "b" has paid for kmax, drafting "a" too pays, which only a second sweep finds.
    def step(b: float, kbar: float, kmax: float) -> float:
        return 0.01 + 0.0005 * b * kbar + 0.004 * kmax

    routes = [RouteState("a", 0.2, 0, 4, lengths(0.7)), RouteState("b", 0.8, 0, 4, lengths(0.9))]
    assert optimise(routes, 2, step, sweeps=1).ks["a"] == 0
    best = optimise(routes, 2, step)
    brute = max(
        (evaluate(routes, {"a": i, "b": j}, 2, step) for i in range(5) for j in range(5)), key=lambda x: x.goodput
    )
    assert best.ks == brute.ks and best.ks["a"] > 0


def test_mean_drafts_per_step_count_only_steps_with_a_proposal() -> None:
    """kbar = sum of share x proposal rate x k: a route proposing on 40% of its steps at k 4 drafts 1.6 per step."""
    seen: list[float] = []

    def step(b: float, kbar: float, kmax: float) -> float:
        seen.append(kbar)
        return 0.01

    routes = [
        RouteState("chat", 0.5, 0, 4, lengths(0.5), proposal_rate=0.4),
        RouteState("code", 0.5, 0, 4, lengths(0.9)),
    ]
    evaluate(routes, {"chat": 4, "code": 2}, 8, step)
    assert seen[0] == pytest.approx(0.5 * 0.4 * 4 + 0.5 * 2)


@given(
    st.lists(st.tuples(st.floats(0.0, 0.95), st.floats(0.0, 5.0), st.integers(0, 6)), min_size=1, max_size=6),
    st.floats(1.0, 256.0),
)
def test_speedups_are_evaluates_own(specs: list[tuple[float, float, int]], batch: float) -> None:
    """The control loop reads each route's speed-up alone (`speedups`): the same numbers `evaluate` gives."""
    routes = [RouteState(f"r{i}", share, 0, 4, lengths(alpha)) for i, (alpha, share, _) in enumerate(specs)]
    ks = {r.name: k for r, (_, _, k) in zip(routes, specs, strict=True)}
    assert speedups(routes, ks, batch, gpu_like) == evaluate(routes, ks, batch, gpu_like).speedup
