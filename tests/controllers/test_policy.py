from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.policy import RouteState, break_even_acceptance, optimise


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
