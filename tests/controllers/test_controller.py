from __future__ import annotations

import itertools
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers.controller import ControllerSettings, PoolSpec, RouteSpec, SpeculationController
from specgate.controllers.cost_model import StepCostModel
from specgate.controllers.observations import Observation, SpecStats


def hist(alpha: float, k: int, steps: int, rng: random.Random) -> tuple[int, ...]:
    h = [0] * (k + 1)
    for _ in range(steps):
        j = 0
        while j < k and rng.random() < alpha:
            j += 1
        h[j] += 1
    return tuple(h)


StepTime = Callable[[float, int], float]


def obs(
    route: str, k: int, alpha: float, batch: float, rng: random.Random, step_time: StepTime | None = None
) -> Observation:
    h = hist(alpha, k, 40, rng) if k else ()
    accepted = sum(j * n for j, n in enumerate(h))
    steps = 40 if k else 0
    tokens = 40 + accepted
    spec = SpecStats(k * steps, accepted, steps, h)
    # 40 engine steps (prefill included) of the true step time at this batch and k, when one is given.
    e2e = step_time(batch, k) * 40 if step_time else None
    return Observation(route, "p", "e", k, "engine", spec, 20, tokens, 0.01, None, batch - 1, True, e2e)


def controller(**kw: object) -> SpeculationController:
    s = ControllerSettings(**{"min_dwell_s": 0.0, "half_life_s": 20.0, **kw})  # type: ignore[arg-type]  # settings overrides as a loose dict
    return SpeculationController(s, [RouteSpec("r", "p", 0, 4)], [PoolSpec("p", 4, "gpu")])


def drive(
    c: SpeculationController,
    phases: list[tuple[float, float, int]],
    rng: random.Random,
    step_time: StepTime | None = None,
) -> list[int]:
    """phases: (alpha, batch, ticks); returns k after each tick."""
    ks = []
    t = 0.0
    for alpha, batch, ticks in phases:
        for _ in range(ticks):
            t += 2.0
            for _ in range(6):
                d = c.table().routes["r"]
                k = d.k
                if d.explore_k is not None and rng.random() < d.explore_share:
                    k = d.explore_k
                c.observe(obs("r", k, alpha, batch, rng, step_time), t)
            c.tick(t, {"p": batch})
            ks.append(c.table().k_for("r"))
    return ks


def test_rises_with_acceptance_and_falls_when_it_collapses() -> None:
    rng = random.Random(5)
    c = controller()
    ks = drive(c, [(0.85, 4, 40), (0.02, 4, 80), (0.85, 4, 60)], rng)
    assert ks[39] >= 3  # good acceptance, low load: speculate
    assert ks[119] <= 1  # acceptance collapsed: (almost) off
    assert ks[-1] >= 3  # recovered (exploration kept the estimate alive)


def test_heavy_load_turns_it_off() -> None:
    # The prior alone (no step times observed): past its knee, drafts cost more than they bring.
    rng = random.Random(6)
    c = controller()
    ks = drive(c, [(0.6, 4, 40), (0.6, 600, 40)], rng)
    assert ks[39] >= 2 and ks[-1] == 0


def test_measured_step_times_move_the_decision() -> None:
    # At batch 24 the gpu prior puts the knee at 64 verified tokens and charges little past it: k = 2 pays.
    # This engine is compute-bound past the knee at 20x the prior's cost per token: only k = 1 (48 tokens,
    # under the knee) is free. The fit learns that from the step times and the controller follows.
    def steep(batch: float, k: int) -> float:
        return 0.012 + 0.0024 * max(0.0, batch * (1 + k) - 64)

    prior_only = drive(controller(), [(0.6, 24, 80)], random.Random(9))
    fitted_ctl = controller()
    fitted = drive(fitted_ctl, [(0.6, 24, 80)], random.Random(9), steep)
    assert prior_only[-1] >= 2
    assert fitted[-1] == 1
    model = fitted_ctl.cost_model("p")
    assert model.samples > 100
    # Where it runs (k <= 1, under the knee) the fit matches the truth; past the knee it has learned that drafts
    # cost far more than the prior said (it sees little of that region, so it does not learn all of it).
    assert model.predict(24, 0, 0) == pytest.approx(steep(24, 0), rel=0.1)
    assert model.predict(24, 1, 1) == pytest.approx(steep(24, 1), rel=0.1)
    assert model.predict(24, 4, 4) > 1.4 * StepCostModel("gpu").predict(24, 4, 4)
    # And the other way: at batch 40 the prior charges drafts enough to keep k at 1; on an engine where they cost
    # nothing (flat step time) the fit sees that and the controller goes to full k.
    assert drive(controller(), [(0.6, 40, 80)], random.Random(9))[-1] <= 1
    assert drive(controller(), [(0.6, 40, 80)], random.Random(9), lambda batch, k: 0.012)[-1] == 4


def test_no_flapping_under_noise() -> None:
    rng = random.Random(7)
    c = controller(min_dwell_s=10.0)
    ks = drive(c, [(0.7, 16, 150)], rng)
    switches = sum(1 for a, b in itertools.pairwise(ks[30:]) if a != b)
    assert switches <= 4


def test_kill_switch_pin_pause_and_stale() -> None:
    rng = random.Random(8)
    c = controller()
    drive(c, [(0.9, 4, 30)], rng)
    assert c.table().k_for("r") >= 3
    c.kill_switch = True
    c.tick(100.0, {"p": 4})
    assert c.table().k_for("r") == 0 and c.table().routes["r"].explore_k is None
    c.kill_switch = False
    c.pin("r", 2)
    c.tick(101.0, {"p": 4})
    assert c.table().k_for("r") == 2
    c.pin("r", None)
    c.paused = True
    c.tick(102.0, {"p": 600})
    assert c.table().k_for("r") == 2  # paused: held
    c.paused = False
    c.tick(103.0, {"p": None})  # no fresh load figure: safe k
    assert c.table().k_for("r") == 0
    assert "stale" in c.route_status("r")["reason"]
    assert [r.new_k for r in c.log][-3:] == [0, 2, 0]


def test_static_mode_keeps_configured_k() -> None:
    s = ControllerSettings(adaptive=False)
    c = SpeculationController(s, [RouteSpec("r", "p", 0, 3)], [PoolSpec("p", 4)])
    assert c.table().k_for("r") == 3
    c.tick(1.0, {"p": None})
    assert c.table().k_for("r") == 3 and c.table().routes["r"].explore_k is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(1, 800), st.booleans(), st.booleans()), min_size=1, max_size=40),
    st.integers(0, 3),
    st.integers(1, 4),
    st.integers(1, 3),
)
def test_safety_properties(steps: list[tuple[float, float, bool, bool]], k_min: int, span: int, max_step: int) -> None:
    """Whatever the observations: k within bounds, changes at most max_step per tick, stale -> safe k."""
    k_max = min(k_min + span, 4)
    rng = random.Random(9)
    s = ControllerSettings(min_dwell_s=0.0, max_step=max_step, safe_k=1, stale_after_s=5.0)
    c = SpeculationController(s, [RouteSpec("r", "p", k_min, k_max)], [PoolSpec("p", 4)])
    t = 0.0
    for alpha, batch, stale_scrape, quiet in steps:
        t += 2.0
        before = c.table().k_for("r")
        if not quiet:
            c.observe(obs("r", rng.randint(0, 4), alpha, batch, rng), t)
        c.tick(t, {"p": None if stale_scrape else batch})
        k = c.table().k_for("r")
        assert min(k_min, k_max) <= k <= k_max
        if stale_scrape:
            assert k == max(min(k_min, k_max), min(k_max, 1))
        elif "stale" not in c.route_status("r")["reason"]:
            assert abs(k - before) <= max_step


def test_break_even_rises_with_load() -> None:
    """Drafts are nearly free while the GPU is memory-bound and costly once it is compute-bound: the
    acceptance a route needs to pay for speculation rises with the batch."""
    rng = random.Random(8)
    c = controller()
    drive(c, [(0.8, 4, 5)], rng)
    low = c.break_even("r")
    drive(c, [(0.8, 400, 5)], rng)
    high = c.break_even("r")
    assert low is not None and high is not None
    assert 0.0 <= low < 0.2 and 0.5 < high <= 1.0
    assert c.break_even("unknown") is None
