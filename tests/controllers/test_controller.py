from __future__ import annotations

import itertools
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers.controller import (
    ControllerSettings,
    DecisionRecord,
    PoolSpec,
    RouteSpec,
    SpeculationController,
    _drafts_less,
)
from specgate.controllers.cost_model import StepCostModel, StepSample
from specgate.controllers.k_schedule import k_at as schedule_k
from specgate.controllers.k_schedule import parse
from specgate.controllers.observations import Observation, SpecStats
from specgate.controllers.schedule import BATCH_GRID


def hist(alpha: float, k: int, steps: int, rng: random.Random) -> tuple[int, ...]:
    h = [0] * (k + 1)
    for _ in range(steps):
        j = 0
        while j < k and rng.random() < alpha:
            j += 1
        h[j] += 1
    return tuple(h)


StepTime = Callable[[float, int], float]


# The decision log's reasons for an adaptive move (the objective named: `ControllerSettings.objective`).
ADAPTIVE_MOVES = ("schedule: rms TPOT", "schedule: goodput")


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
    schedules: list[tuple[tuple[int, int], ...] | None] | None = None,
) -> list[int]:
    """phases: (alpha, batch, ticks); returns k after each tick (and appends the schedule to `schedules`)."""
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
            if schedules is not None:
                schedules.append(c.table().routes["r"].schedule)
    return ks


def test_rises_with_acceptance_and_falls_when_it_collapses() -> None:
    rng = random.Random(5)
    c = controller()
    ks = drive(c, [(0.85, 4, 40), (0.02, 4, 80), (0.85, 4, 60)], rng)
    assert ks[39] >= 3  # good acceptance, low load: speculate
    assert ks[119] <= 1  # acceptance collapsed: (almost) off
    assert ks[-1] >= 3  # recovered (exploration kept the estimate alive)


def test_a_step_change_in_acceptance_is_followed_within_ticks_not_half_lives() -> None:
    """The drafter breaks (0.9 -> 0.05) after two minutes with a half-life of 60 s: with step-change detection the
    route is down to k <= 1 (below the gpu prior's knee a draft costs almost nothing) within a few ticks, where fading
    evidence alone keeps drafting 4 for the whole minute."""
    after: dict[float, list[int]] = {}
    for change_z in (4.0, 0.0):
        c = controller(change_z=change_z, half_life_s=60.0)
        ks = drive(c, [(0.9, 4, 60), (0.05, 4, 30)], random.Random(7))
        assert ks[59] >= 3
        after[change_z] = ks[60:]
        assert (c.route_status("r")["acceptance"]["step_changes"] > 0) is (change_z > 0)
        # The decision log says which move followed a step change (the one that took the route down).
        explained = [r for r in c.log if "after a step change in acceptance" in r.reason]
        assert bool(explained) is (change_z > 0)
        assert all(r.new_k < r.old_k and r.inputs["acceptance_step_changes"] > 0 for r in explained), explained
    assert max(after[4.0][3:]) <= 1 and min(after[0.0][:10]) >= 3, after


def test_after_a_step_change_the_positions_above_k_are_explored_like_a_new_routes() -> None:
    """Acceptance collapses (k falls to 1), then comes back: position 1, measured by every request, shows it at once
    and the step change drops the older evidence, so the positions above k are unknown, as for a new route. Until the
    one above k has `cold_start_steps` of evidence again (within `recent_half_life_s` of the change), the route
    explores at the cold start's paying share; then at the usual one. With the usual share alone, the first tick
    after the change measures the positions above a sixth as often."""
    measured: dict[float, list[float]] = {}
    for paying_share in (1.0, 0.03):
        c = controller(change_z=4.0, half_life_s=60.0, cold_start_paying_share=paying_share)
        rng = random.Random(7)
        t, seen = 0.0, []
        for alpha, ticks in [(0.9, 60), (0.05, 60), (0.9, 4)]:
            for _ in range(ticks):
                t += 2.0
                for _ in range(6):
                    d = c.table().routes["r"]
                    k = d.explore_k if d.explore_k is not None and rng.random() < d.explore_share else d.k
                    c.observe(obs("r", k, alpha, 4, rng), t)
                c.tick(t, {"p": 4})
                est = c.estimator("r", "p")
                seen.append(
                    (t, c.table().routes["r"], est.changes, est.evidence(2), c.route_status("r")["explore_rule"])
                )
        changed = [row for row in seen if row[0] > 240 and row[2] == 2]
        assert changed, "the comeback is a step change"
        first, after = changed[0], changed[1]
        assert first[1].k == 1 and first[1].explore_k == 4 and first[1].explore_share == paying_share
        assert c.estimator("r", "p").changed_at == first[0] and first[4] == "after a step change"
        assert after[4] == "share"  # measured again
        assert after[1].k == 4 and after[1].explore_share == 0.03  # measured: the usual share again
        measured[paying_share] = [row[3] for row in changed[1:2]]
    assert measured[1.0][0] > 200 > 5 * measured[0.03][0], measured
    # Long after the change, a position above k short of evidence is a plain route's: the usual share.
    c = controller(change_z=4.0, half_life_s=60.0)
    assert c.route_status("r")["explore_rule"] == "cold start"
    c.estimator("r", "p").changed_at = -100.0
    c.tick(2.0, {"p": 4})
    c.observe(obs("r", 0, 0.5, 4, random.Random(1)), 2.0)
    assert not c._relearning(c._routes["r"], c.estimator("r", "p"))


def test_heavy_load_turns_it_off() -> None:
    # The prior alone (no step times observed): past its knee, drafts cost more than they bring.
    rng = random.Random(6)
    c = controller()
    ks = drive(c, [(0.6, 4, 40), (0.6, 600, 40)], rng)
    assert ks[39] >= 2 and ks[-1] == 0


def _driven_at_load(batch: float, per_tick: int, alpha: float = 0.6, **kw: object) -> SpeculationController:
    """A controller of one route after 60 ticks of `per_tick` finished requests each (2 s apart) at a batch of
    `batch` and acceptance `alpha`, exploring as its table says."""
    rng = random.Random(8)
    c = controller(**{"half_life_s": 60.0, **kw})
    t = 0.0
    for _ in range(60):
        t += 2.0
        for _ in range(per_tick):
            d = c.table().routes["r"]
            explore = d.explore_k is not None and rng.random() < d.explore_share
            c.observe(obs("r", d.explore_k if explore and d.explore_k is not None else d.k, alpha, batch, rng), t)
        c.tick(t, {"p": batch})
    return c


def _explored_at_load(batch: float, per_tick: int, alpha: float = 0.6, **kw: object) -> tuple[int | None, float, int]:
    """(explore k, explore share, k) of the route of `_driven_at_load`."""
    d = _driven_at_load(batch, per_tick, alpha, **kw).table().routes["r"]
    return d.explore_k, d.explore_share, d.k


def test_where_exploring_cannot_pay_a_busy_route_explores_at_a_rate_not_a_share() -> None:
    """Past the knee no draft pays even at the top of the acceptance interval: the route is off and explores one draft
    more, and a busy one (30 requests a second) at `explore_futile_requests` per half-life (1 per 60 s: a share of
    ~0.07%), not 3% of its requests (exploration was all of the simulator's loss under steady overload). The same at
    low load once the route's acceptance is known: its k is where drafts pay, and one explorer's extra draft position
    would slow every step of its batch for a few more tokens of its own. A quiet route keeps the share, as does any
    route with the rate at 0."""
    explore_k, share, k = _explored_at_load(600, 60)
    assert k == 0 and explore_k == 1
    assert 0.0003 < share < 0.0013
    status = _driven_at_load(600, 60).route_status("r")
    assert status["explore_share"] == share and 15 < status["request_rate"] < 30  # 30 a second, still filling up
    assert status["explore_rule"] == "futile: requests per half-life"
    assert _explored_at_load(600, 60, explore_futile_requests=0.0)[1] == 0.03
    assert _explored_at_load(600, 60, explore_futile_requests=3.0)[1] == pytest.approx(3 * share, rel=0.05)
    # 1.5 requests a second at 3 per half-life: 0.05 / 1.5 is more than the share.
    assert _explored_at_load(600, 3, explore_futile_requests=3.0)[1] == 0.03
    # Tied to the half-life: forgetting in 6 s, the route explores ten times as often (1 per 6 s).
    assert 0.003 < _explored_at_load(600, 60, half_life_s=6.0)[1] < 0.009
    explore_k, share, k = _explored_at_load(4, 60, alpha=0.5)
    assert k == 3 and explore_k == 4 and 0.0003 < share < 0.0013


def test_a_cold_route_explores_every_request_only_where_exploring_could_pay() -> None:
    """Until a route has `cold_start_steps` of evidence: where exploring could pay at its pool's load (batch 4, below
    the gpu prior's knee; before the first tick, batch 1: nothing in flight yet), every request explores (a new
    route's first requests at k = 0 were the simulator's low-load p99), but only up to a batch where it still could
    (an explorer lives through a load ramp: high-load's first explorers at the top k for life cost 2%); past the
    knee (batch 600), 25% at one draft more, up to twice that load."""
    c = controller(half_life_s=60.0)
    first = c.table().routes["r"]
    assert first.explore_share == 1.0 and first.explore_k == 4
    assert first.explore_until is not None and 1 <= first.explore_until <= 8
    c.tick(2.0, {"p": 4})
    d = c.table().routes["r"]
    assert d.explore_share == 1.0 and d.explore_k is not None and d.explore_k >= 4
    assert d.explore_until is not None and 4 <= d.explore_until <= 32
    assert d.explore_k_at(d.explore_until + 1) == d.k_at(d.explore_until + 1)
    assert c.route_status("r")["explore_until"] == d.explore_until
    c.tick(4.0, {"p": 600})
    busy = c.table().routes["r"]
    assert (busy.explore_share, busy.explore_k, busy.explore_until) == (0.25, 1, 1200)
    assert busy.explore_k_at(1200) == 1 and busy.explore_k_at(1201) == busy.k_at(1201) == 0
    assert controller(half_life_s=60.0, cold_start_paying_share=0.1).explore_share("r") == 0.25
    warm = _driven_at_load(4, 60)  # evidence past the cold start: the usual share
    assert warm.table().routes["r"].explore_share < 0.25


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
    # cost far more than the prior said (it sees little of that region, so it does not learn all of it: the prior
    # charges 0.020 s at k = 4, the truth is 0.204 s; how far the fit gets depends on how often it explores there).
    assert model.predict(24, 0, 0) == pytest.approx(steep(24, 0), rel=0.1)
    assert model.predict(24, 1, 1) == pytest.approx(steep(24, 1), rel=0.1)
    assert model.predict(24, 4, 4) > 1.25 * StepCostModel("gpu").predict(24, 4, 4)
    # And the other way: at batch 40 the prior charges drafts enough to keep k at 1; on an engine where they cost
    # nothing (flat step time) the fit sees that and the controller goes up (to 3 or the full 4: at acceptance 0.6
    # the fourth draft gains ~2%, within the hysteresis).
    assert drive(controller(), [(0.6, 40, 80)], random.Random(9))[-1] <= 1
    assert drive(controller(), [(0.6, 40, 80)], random.Random(9), lambda batch, k: 0.012)[-1] >= 3


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
    # Each acts on the whole schedule at once, and the log says why it changed.
    changes = [(r.inputs["schedule"], r.reason) for r in c.log if r.reason.startswith("schedule")][-3:]
    assert changes == [
        ("1:0", "schedule: kill switch"),
        ("1:2", "schedule: pinned by admin"),
        ("1:0", "schedule: stale: no fresh load figure for the pool; safe k"),
    ]


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
    """Whatever the observations: k and the schedule within bounds, the schedule moves at most max_step per tick at
    every batch size, stale -> safe k."""
    k_max = min(k_min + span, 4)
    rng = random.Random(9)
    s = ControllerSettings(min_dwell_s=0.0, max_step=max_step, safe_k=1, stale_after_s=5.0)
    c = SpeculationController(s, [RouteSpec("r", "p", k_min, k_max)], [PoolSpec("p", 4)])
    t = 0.0
    for alpha, batch, stale_scrape, quiet in steps:
        t += 2.0
        before = c.table().routes["r"].schedule
        if not quiet:
            c.observe(obs("r", rng.randint(0, 4), alpha, batch, rng), t)
        c.tick(t, {"p": None if stale_scrape else batch})
        k = c.table().k_for("r")
        assert min(k_min, k_max) <= k <= k_max
        schedule = c.table().routes["r"].schedule
        assert schedule is not None and before is not None and schedule[0][0] == 1
        assert all(min(k_min, k_max) <= sk <= k_max for _, sk in schedule)
        assert k == c.table().routes["r"].k_at(max(1, round(batch)))  # k is the schedule's at the pool's load
        if stale_scrape:
            assert schedule == ((1, max(min(k_min, k_max), min(k_max, 1))),)
        elif "stale" not in c.route_status("r")["reason"] and not c.route_status("r")["reason"].startswith("stale"):
            assert all(abs(schedule_k(schedule, b) - schedule_k(before, b)) <= max_step for b in BATCH_GRID)


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


def past_hysteresis(r: DecisionRecord, hysteresis: float) -> bool:
    """A schedule change promised `hysteresis` more goodput, or drafts fewer everywhere (and says so)."""
    if r.inputs["goodput_gain"] >= 1 + hysteresis:
        return True
    old, new = parse(r.inputs["old_schedule"]), parse(r.inputs["schedule"])
    assert old is not None and new is not None
    pairs = [(schedule_k(old, b), schedule_k(new, b)) for b in BATCH_GRID]
    fewer = all(n <= o for o, n in pairs) and any(n < o for o, n in pairs)
    return fewer and r.inputs["goodput_gain"] >= 1 and r.reason.endswith("fewer drafts")


def schedule_changes(c: SpeculationController) -> list[tuple[str, str]]:
    return [(r.inputs["schedule"], r.reason) for r in c.log if r.reason.startswith("schedule")]


def test_the_schedule_follows_acceptance_and_the_log_says_why() -> None:
    rng = random.Random(5)
    c = controller()
    seen: list[tuple[tuple[int, int], ...] | None] = []
    drive(c, [(0.85, 4, 40), (0.02, 4, 80)], rng, schedules=seen)
    good, bad = seen[39], seen[-1]
    assert good is not None and good[0] == (1, 4)  # alone on the pool, all drafts pay
    assert good[-1][1] < 4  # and fewer past the prior's knee
    assert bad is not None and max(k for _, k in bad) <= 1
    last = schedule_changes(c)[-1]
    assert last[0] == ",".join(f"{lo}:{k}" for lo, k in bad)
    assert last[1].startswith("schedule: rms TPOT -") and "at batch" in last[1]
    rec = [r for r in c.log if r.reason.startswith("schedule")][-1]
    assert {"pool", "batch", "schedule", "old_schedule", "goodput_gain", "gain_at_batch"} <= set(rec.inputs)
    assert past_hysteresis(rec, c.settings.hysteresis)
    # Under the goodput objective the log names goodput's gain.
    g = controller(objective="goodput")
    drive(g, [(0.85, 4, 40), (0.02, 4, 80)], random.Random(5))
    assert schedule_changes(g)[-1][1].startswith("schedule: goodput +")
    with pytest.raises(ValueError, match="objective"):
        ControllerSettings(objective="throughput")


def test_schedule_changes_wait_for_hysteresis_and_dwell_not_for_load() -> None:
    rng = random.Random(7)
    c = controller(min_dwell_s=10.0)
    # Load swings every tick: that moves the k looked up in the schedule, never the schedule itself.
    phases = [(0.7, b, 1) for b in (2, 200, 8, 90, 1, 300) * 25]
    drive(c, phases, rng)
    changes = [r for r in c.log if r.reason.startswith("schedule")]
    assert 1 <= len(changes) <= 6
    assert all(b.at - a.at >= 10.0 for a, b in itertools.pairwise(changes))
    assert all(past_hysteresis(r, c.settings.hysteresis) for r in changes)
    # Moves up always needed the margin.
    assert any(r.inputs["goodput_gain"] >= 1 + c.settings.hysteresis for r in changes)


def test_drafts_that_promise_nothing_fall_without_the_hysteresis_margin() -> None:
    """One request at a time, verify tokens about free: the fit finds drafts cost ~nothing, so once acceptance
    collapses k = 4 and k = 0 differ by far less than the hysteresis. The k = 4 held in force has no claim to it:
    speculation is turned off (a real-engine run held k = 4 on a route whose acceptance had fallen to 0)."""

    def flat(batch: float, k: int) -> float:
        return 0.010 + 0.00001 * batch * (1 + k)

    c = controller()
    ks = drive(c, [(0.85, 1, 30), (0.0, 1, 150)], random.Random(3), flat)
    assert ks[29] == 4 and ks[-1] == 0
    changes = [r for r in c.log if r.reason.startswith("schedule")]
    assert all(past_hysteresis(r, c.settings.hysteresis) for r in changes)
    small = [r for r in changes if r.inputs["goodput_gain"] < 1 + c.settings.hysteresis]
    assert small and all(r.new_k <= r.old_k for r in small)


def test_static_mode_sends_no_schedule() -> None:
    c = SpeculationController(ControllerSettings(adaptive=False), [RouteSpec("r", "p", 0, 3)], [PoolSpec("p", 4)])
    c.tick(1.0, {"p": 4})
    assert c.table().routes["r"].schedule is None and c.table().routes["r"].k_at(100) == 3


def test_batch_share_follows_request_rate_and_steps_per_request() -> None:
    """Ten times the requests -> ten times the share of the batch; and the share counts engine steps, not tokens: a
    route whose drafts are accepted emits far more tokens in the same steps, and takes no more of the batch."""
    rng = random.Random(3)
    s = ControllerSettings(half_life_s=20.0)
    c = SpeculationController(s, [RouteSpec("busy", "p", 0, 4), RouteSpec("rare", "p", 0, 4)], [PoolSpec("p", 4)])
    t = 0.0
    for _ in range(60):
        t += 2.0
        for _ in range(10):
            c.observe(obs("busy", 0, 0.5, 8, rng), t)
        c.observe(obs("rare", 0, 0.5, 8, rng), t)
        c.tick(t, {"p": 8})
    assert c.route_status("busy")["batch_share"] == pytest.approx(10 / 11, abs=0.02)
    c2 = SpeculationController(s, [RouteSpec("copy", "p", 0, 4), RouteSpec("chat", "p", 0, 4)], [PoolSpec("p", 4)])
    for i in range(60):
        c2.observe(obs("copy", 4, 0.95, 8, rng), 2.0 * i)
        c2.observe(obs("chat", 4, 0.0, 8, rng), 2.0 * i)
    c2.tick(120.0, {"p": 8})
    assert c2.route_status("copy")["batch_share"] == pytest.approx(0.5, abs=0.01)


def test_engine_step_counters_fit_the_step_time_and_replace_per_request_timing() -> None:
    """Intervals of the engine's own counters (steps, request-steps, step time x batch, drafts) fit the true step
    time across batch sizes; while they arrive, per-request timings (here deliberately wrong) are not used."""

    def truth(batch: float, kbar: float) -> float:
        return 0.012 + 0.00015 * max(0.0, batch * (1 + kbar) - 64)  # n-gram drafting: no cost of its own

    c = controller()
    rng = random.Random(4)
    t = 0.0
    for i in range(300):
        t += 2.0
        batch, kbar = 4 + (i * 7) % 90, (i % 5) * 0.8
        steps = 200.0
        assert c.observe_steps("p", steps, steps * batch, steps * batch * truth(batch, kbar), steps * batch * kbar, t)
        # A request whose end-to-end time says each step took 2 ms: ignored while the engine reports.
        c.observe(obs("r", 4, 0.6, batch, rng, lambda b, k: 0.002), t)
    model = c.cost_model("p")
    for batch, kbar in ((8, 0.0), (40, 2.0), (90, 3.2)):
        assert model.predict(batch, kbar, 0) == pytest.approx(truth(batch, kbar), rel=0.05)
    assert not c.observe_steps("p", 1, 10, 0.1, 0, t)  # too few request-steps to tell
    assert not c.observe_steps("unknown", 100, 1000, 10.0, 0, t)


def test_per_request_step_times_leave_the_window_when_the_engine_counters_start() -> None:
    """Before a pool's first scrape its step time is fitted from per-request estimates (end-to-end time over steps),
    which carry queueing and the batch at dispatch. Once the counters arrive those estimates leave the window, so a
    few intervals fit the truth; kept, 200 of them (here 3x the true step) would outweigh 12 intervals."""

    def truth(batch: float, kbar: float) -> float:
        return 0.012 + 0.00015 * max(0.0, batch * (1 + kbar) - 64)

    c = controller()
    rng = random.Random(5)
    for i in range(200):
        c.observe(obs("r", 0, 0.6, 4 + i % 90, rng, lambda b, k: 3 * truth(b, k)), 0.01 * i)
    c.tick(2.0, {"p": 8})
    model = c.cost_model("p")
    assert model.predict(40, 0.0, 0) > 2 * truth(40, 0.0)  # fitted on the estimates so far
    t = 2.0
    for i in range(12):
        t += 2.0
        batch, kbar, steps = 4 + (i * 23) % 90, (i % 4) * 0.8, 200.0
        c.observe_steps("p", steps, steps * batch, steps * batch * truth(batch, kbar), steps * batch * kbar, t)
        c.tick(t, {"p": batch})
    for batch, kbar in ((8, 0.0), (40, 2.0), (90, 1.6)):
        assert model.predict(batch, kbar, 0) == pytest.approx(truth(batch, kbar), rel=0.05)


def test_acceptance_evidence_under_a_schedule_is_the_per_step_drafts_alone() -> None:
    """A request dispatched at k=4 whose steps drafted 4, then 2, then nothing (capped to 0 as the batch grew):
    its evidence is the steps with drafts, each at its own k. Without per-step detail a scheduled request gives
    none; an unscheduled one counts steps without drafts as rejections (an n-gram drafter that found nothing)."""
    from dataclasses import replace

    from specgate.controllers.controller import acceptance_evidence

    spec = SpecStats(10, 5, 3, (), ((2, (0, 0, 1)), (4, (0, 1, 0, 0, 1))))
    scheduled = Observation("r", "p", "e", 4, "engine", spec, 10, 30, None, None, 3, True, 1.0, scheduled=True)
    assert acceptance_evidence(scheduled) == [((0, 0, 1), 2), ((0, 1, 0, 0, 1), 4)]
    nothing = replace(scheduled, spec=SpecStats(0, 0, 0, (0, 0, 0, 0, 0)))
    assert acceptance_evidence(nothing) == []
    summary_only = replace(scheduled, spec=SpecStats(12, 3, 3, (1, 1, 0, 1, 0)))
    assert acceptance_evidence(summary_only) == []
    fixed = replace(summary_only, scheduled=False)
    # 30 tokens, 3 of them accepted drafts: 26 decode steps; 3 carried drafts, 23 without count as rejections.
    assert acceptance_evidence(fixed) == [((24, 1, 0, 1, 0), 4)]


def test_steps_without_a_proposal_are_rejections_for_tokens_and_free_for_cost() -> None:
    """The plugin's record of steps whose drafter proposed nothing (k 0 in the per-step detail): one token each, so
    position 1 failed, and no drafts verified, so they lower the route's proposal rate. A request at one fixed k
    tells the same from its decode steps without drafts; a scheduled one without detail tells nothing."""
    from dataclasses import replace

    from specgate.controllers.controller import acceptance_evidence, proposal_evidence

    spec = SpecStats(10, 5, 3, (), ((0, (6,)), (2, (0, 0, 1)), (4, (0, 1, 0, 0, 1))))
    scheduled = Observation("r", "p", "e", 4, "engine", spec, 10, 30, None, None, 3, True, 1.0, scheduled=True)
    assert acceptance_evidence(scheduled) == [((6, 0), 1), ((0, 0, 1), 2), ((0, 1, 0, 0, 1), 4)]
    assert proposal_evidence(scheduled) == (3, 6)
    fixed = replace(scheduled, spec=SpecStats(12, 3, 3, (1, 1, 0, 1, 0)), scheduled=False)
    assert proposal_evidence(fixed) == (3, 23)  # 26 decode steps, 3 with drafts
    assert proposal_evidence(replace(fixed, scheduled=True)) == (0, 0)
    assert proposal_evidence(replace(fixed, k_applied=0)) == (0, 0)
    assert proposal_evidence(replace(fixed, spec=None)) == (0, 0)


def test_a_route_whose_drafter_rarely_proposes_keeps_drafting_where_the_drafts_it_makes_pay() -> None:
    """The same tokens per step, told apart only by how the steps without drafts are recorded: as the plugin's
    no-proposal steps (k 0) or as k = 1 rejections. Charged only for the drafts made, the route that proposes on a
    quarter of its steps keeps k > 0 at batch sizes where one charged k drafts on every step does not."""

    def schedule(no_proposal: bool) -> tuple[tuple[int, int], ...]:
        c, rng = controller(), random.Random(3)
        for t in range(1, 121):
            for _ in range(6):
                h = hist(0.7, 4, 10, rng)
                empty = (0, (30,)) if no_proposal else (1, (30, 0))
                spec = SpecStats(40, sum(j * n for j, n in enumerate(h)), 10, (), tuple(sorted((empty, (4, h)))))
                c.observe(Observation("r", "p", "e", 4, "engine", spec, 20, 60, 0.01, None, 7, True, None, True), t)
            c.tick(float(t), {"p": 8})
        return c.table().routes["r"].schedule

    measured, as_if_always = schedule(True), schedule(False)
    assert all(schedule_k(measured, b) >= schedule_k(as_if_always, b) for b in BATCH_GRID)
    assert any(schedule_k(measured, b) > schedule_k(as_if_always, b) for b in BATCH_GRID)


def test_kv_pressure_caps_every_schedule_at_once_and_the_log_says_why() -> None:
    """Preemptions on the pool: the schedules drop to the cap in the same tick (past hysteresis and dwell, as a
    safety rule), the decision log and route status say why, and exploration stays under the cap."""
    from specgate.controllers.kv_pressure import KvReading

    rng = random.Random(4)
    c = controller(min_dwell_s=30.0, kv_cap=True)
    drive(c, [(0.85, 4, 40)], rng)
    assert max(k for _, k in c.table().routes["r"].schedule) >= 3
    c.tick(81.0, {"p": 4}, {"p": KvReading(0.97, 2, 4096.0, 100.0)})  # 5% of the cache: 2 drafts each
    schedule = c.table().routes["r"].schedule
    assert max(k for _, k in schedule) <= 2
    assert c.log[-1].reason.startswith("schedule: KV pressure: k <= 2") and c.log[-1].inputs["kv_cap"] == 2
    status = c.route_status("r")
    assert status["kv_cap"] == 2 and "preemption" in status["kv_reason"]
    explore = c.table().routes["r"].explore_k
    assert explore is None or explore <= 2
    c.tick(82.0, {"p": 4}, {"p": KvReading(0.95, 0, 4096.0, 200.0)})
    assert max(k for _, k in c.table().routes["r"].schedule) <= 1
    off = controller()  # the default: the rule is off, readings change nothing
    drive(off, [(0.85, 4, 40)], random.Random(4))
    off.tick(81.0, {"p": 4}, {"p": KvReading(0.97, 2, 4096.0, 100.0)})
    assert off.route_status("r")["kv_cap"] is None and off.kv_cap("p") == 4


def test_a_new_route_starts_from_its_pools_measured_acceptance() -> None:
    """The engines' per-position counters say drafts on this pool are accepted 80% of the time: a route seen for the
    first time (its requests at k = 0 so far, so no evidence of its own) gets a schedule that drafts at low load;
    without the loan (prior_weight 0) it stays at k = 0 until exploration measures it."""

    def first_schedule(prior_weight: float) -> tuple[tuple[int, int], ...]:
        c = controller(prior_weight=prior_weight)
        c.observe_engine_acceptance("p", 1000, {0: 800, 1: 640, 2: 512, 3: 410}, 1.0)
        c.observe(obs("r", 0, 0.0, 2, random.Random(1)), 1.0)
        c.tick(2.0, {"p": 2})
        return c.table().routes["r"].schedule

    assert schedule_k(first_schedule(20.0), 1) >= 2
    assert first_schedule(0.0) == ((1, 0),)


def test_the_proposal_rate_can_be_turned_off() -> None:
    """`proposal_rate: false` charges k drafts on every step again (the A/B in `specgate bench`)."""
    c = controller(proposal_rate=False)
    spec = SpecStats(40, 20, 10, (), ((0, (30,)), (4, (2, 2, 2, 2, 2))))
    c.observe(Observation("r", "p", "e", 4, "engine", spec, 20, 60, 0.01, None, 7, True, None, True), 1.0)
    assert c.estimator("r", "p").proposal_rate() < 0.5  # measured all the same
    assert c._state(c._routes["r"], 0, 4).proposal_rate == 1.0
    assert controller()._proposal_rate(controller()._routes["r"]) == 1.0  # no evidence yet: 1 either way


def test_one_pool_a_tick_searches_its_step_time_shape() -> None:
    """Three pools whose step-time windows all call for a shape search: each tick one searches (the most overdue),
    the others refit the shape they have, so no tick pays for every pool's ~30 solves at once."""
    pools = [PoolSpec(name, 4, "gpu") for name in ("a", "b", "c")]
    ctl = SpeculationController(
        ControllerSettings(min_dwell_s=0.0), [RouteSpec(f"r{p.name}", p.name, 0, 4) for p in pools], pools
    )
    rng = random.Random(3)
    for n, pool in enumerate(pools):
        model = ctl.cost_model(pool.name)
        for _ in range(100 + 10 * n):  # c has the most new samples, then b
            b = rng.uniform(1, 128)
            model.update(StepSample(b, 1.0, 4.0, 0.01 + 0.0002 * b))
    due = []
    for t in (2.0, 4.0, 6.0):
        ctl.tick(t, {p.name: 8.0 for p in pools})
        due.append([ctl.cost_model(p.name).pending_search() > 0 for p in pools])
    assert due == [[True, True, False], [True, False, False], [False, False, False]]


def test_explorers_that_cannot_pay_keep_their_reach_while_the_load_holds() -> None:
    """Explorers one draft above the route's k run it up to twice the pool's load; a busy pool's load moves by a few
    requests every tick, and each new reach would be a new decision table: the reach holds while twice the load stays
    within `_STEADY_LOAD` of it, and follows a load that leaves that band."""
    rng = random.Random(3)
    c = _driven_at_load(600, 60)
    assert c.table().routes["r"].explore_until == 1200
    t = 122.0
    seen = set()
    for load in [598, 600, 603, 606, 590, 611, 597] * 3:
        t += 2.0
        for _ in range(60):
            c.observe(obs("r", 0, 0.6, load, rng), t)
        c.tick(t, {"p": load})
        seen.add(c.table().routes["r"].explore_until)
    assert seen == {1200}
    for load in (900, 1000):  # the load moved on: twice it is past the band
        t += 2.0
        for _ in range(60):
            c.observe(obs("r", 0, 0.6, load, rng), t)
        c.tick(t, {"p": load})
    assert c.table().routes["r"].explore_until == 1800


def test_fewer_drafts_without_the_margin_means_fewer_at_a_size_of_the_grid_and_more_nowhere() -> None:
    """A switch point that moves down a little drafts fewer only between the grid's sizes: no reason to skip the
    margin (it drifts with the estimates). A schedule that drafts fewer on the grid but more between its sizes is
    not one that drafts fewer."""
    old = ((1, 4), (20, 2), (40, 0))
    assert not _drafts_less([(old, ((1, 4), (19, 2), (40, 0)))])
    assert _drafts_less([(old, ((1, 4), (16, 2), (40, 0)))])
    assert not _drafts_less([(old, ((1, 3), (24, 2), (36, 3), (40, 0)))])  # more at 36-39


def test_until_drafts_show_the_draft_cost_exploring_is_judged_at_the_cheapest_one() -> None:
    """A prior that prices drafts too dear holds the schedules at k = 0 past its knee, and only drafts there could
    show it wrong: until the pool's step samples show c (drafts past the knee), an explorer is judged at the cheapest
    c a shape search could find, and explores at the top k. Once the engine's counters show c (here the prior's own,
    1), exploring at that load is futile again: one draft above the route's k."""

    def truth(batch: float, kbar: float, kmax: float) -> float:
        return 0.012 + 0.00015 * max(0.0, batch * (1.0 + kbar) - 64.0) + 0.000012 * kmax

    rng = random.Random(4)
    s = ControllerSettings(min_dwell_s=0.0, half_life_s=20.0)
    c = SpeculationController(s, [RouteSpec("r", "p", 0, 4)], [PoolSpec("p", 4, "gpu", draft_cost=0.001)])
    drive(c, [(0.9, 4, 30), (0.9, 250, 30)], rng)
    assert c.cost_model("p").draft_cost_unseen()
    assert c._exploration_pays()["r"][:2] == (4, True)
    t = 200.0
    for batch in [100, 140, 180, 220, 260, 120, 160, 200] * 2:
        t += 2.0
        steps = 200.0
        request_steps = steps * batch
        itl = request_steps * truth(batch, 1.0, 1.0)
        c.observe_steps("p", steps, request_steps, itl, request_steps, t, request_steps)
        for _ in range(6):
            c.observe(obs("r", c.table().routes["r"].k, 0.9, 250, rng), t)
        c.tick(t, {"p": 250})
    assert not c.cost_model("p").draft_cost_unseen() and c.cost_model("p").shape[0] == 1.0
    k = c.table().routes["r"].k
    assert c._exploration_pays()["r"][:2] == (k + 1, False)


def test_a_route_explores_at_the_largest_k_its_best_case_could_pay() -> None:
    """An explorer's drafts cost its whole batch (verify work past the knee, and the drafter runs to the largest k).
    A route explores at the largest k at which the upper end of its acceptance interval could pay for that at its
    pool's load, and at one more than its k when none could, so that the next position stays measured and a
    recovery is seen (test_rises_with_acceptance_and_falls_when_it_collapses), up to twice its pool's load: what it
    measures does not depend on the batch, and its drafts cost more the larger the batch a load ramp takes it to."""
    rng = random.Random(11)
    fresh = controller()
    fresh.tick(2.0, {"p": 16.0})
    fresh.observe(obs("r", 0, 0.5, 16, rng), 3.0)
    fresh.tick(4.0, {"p": 16.0})
    # Nothing measured: the best case is every draft accepted, which pays for 4 drafts at this load (one request of
    # 16 gains 4 tokens; the gpu prior's drafter adds 13% to every step at k = 4).
    assert fresh.table().routes["r"].explore_k == 4
    fresh.tick(6.0, {"p": 600.0})
    assert fresh.table().routes["r"].explore_k == 1  # not at 600: +4 tokens in 600 against +3% on every step
    c = controller()
    drive(c, [(0.05, 600, 60)], rng)  # acceptance measured low, at a load past the knee
    k = c.table().k_for("r")
    assert k == 0 and c.table().routes["r"].explore_k == k + 1
    assert c._exploration_pays() == {"r": (1, False, 1200)}  # none pays: one draft more, up to twice the load
    explorer = c.table().routes["r"]
    assert explorer.explore_k_at(600) == 1 and explorer.explore_k_at(1300) == explorer.k_at(1300) == 0
    drive(c, [(0.85, 4, 60)], rng)  # it comes back, at low load: full k, nothing above to explore
    assert c.table().k_for("r") == 4 and c.table().routes["r"].explore_k is None


def test_a_routes_first_move_does_not_wait_out_its_pools_dwell() -> None:
    """Two routes on one pool; the second's first requests come back after the first route has moved. Its first
    move goes ahead within that dwell (it had been at the safe k only for want of evidence: the simulator's
    low-load p99 was such a wait), and the decision log says why; moves after it keep the dwell."""
    rng = random.Random(5)
    s = ControllerSettings(min_dwell_s=10.0, half_life_s=20.0)
    routes = [RouteSpec("code", "p", 0, 4), RouteSpec("chat", "p", 0, 4)]
    c = SpeculationController(s, routes, [PoolSpec("p", 4, "gpu")])
    t = 0.0
    for tick in range(20):
        t += 2.0
        for _ in range(6):
            c.observe(obs("code", 4, 0.85, 4, rng), t)
            if tick >= 2:  # chat's first requests finish after code's first move
                c.observe(obs("chat", 4, 0.6, 4, rng), t)
        c.tick(t, {"p": 4})
    moves = [r for r in c.log if r.reason.startswith(ADAPTIVE_MOVES)]
    code = [r.at for r in moves if r.route == "code"]
    chat = [r.at for r in moves if r.route == "chat"]
    assert code[0] == 2.0 and chat and chat[0] - code[0] < s.min_dwell_s
    assert schedule_k(c.table().routes["chat"].schedule, 1) >= 1
    assert "first move of chat" in next(r.reason for r in moves if r.route == "chat" and r.at == chat[0])
    times = sorted({r.at for r in moves if r.at > chat[0]})
    assert all(b - a >= s.min_dwell_s for a, b in itertools.pairwise([chat[0], *times]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(1, 300), st.booleans()), min_size=2, max_size=30))
def test_a_pools_schedules_move_a_dwell_apart_but_for_a_routes_first_move(
    steps: list[tuple[float, float, float, bool]],
) -> None:
    rng = random.Random(3)
    s = ControllerSettings(min_dwell_s=6.0, half_life_s=10.0)
    c = SpeculationController(s, [RouteSpec("a", "p", 0, 4), RouteSpec("b", "p", 0, 4)], [PoolSpec("p", 4)])
    t = 0.0
    for alpha_a, alpha_b, batch, b_quiet in steps:
        t += 2.0
        c.observe(obs("a", rng.randint(0, 4), alpha_a, batch, rng), t)
        if not b_quiet or t > 20:
            c.observe(obs("b", rng.randint(0, 4), alpha_b, batch, rng), t)
        c.tick(t, {"p": batch})
    # Adaptive moves only: stale inputs, pins and the kill switch act at once by design.
    moves = [r for r in c.log if r.reason.startswith(ADAPTIVE_MOVES)]
    seen: set[str] = set()
    last = float("-inf")
    for at in sorted({r.at for r in moves}):
        routes = {r.route for r in moves if r.at == at}
        assert at - last >= s.min_dwell_s or routes - seen
        seen |= routes
        last = at


@pytest.mark.parametrize("swinging", [False, True])
def test_schedules_follow_a_new_step_time_shape_within_the_dwell_once_the_load_holds(swinging: bool) -> None:
    """Drafts far cheaper than the GPU prior says (c = 0.2, knee 16 against c = 1, knee 64): one request at a time
    shows nothing of it, so the schedules drawn at batch 2 switch drafting off past the prior's knee. When the load
    steps to batch 48 the engine's counters show the truth and the model's shape moves; once the load holds, the
    schedules follow in that tick, within the dwell of the pool's last change, and the decision log says why. While
    the load keeps swinging (48, 96, 48, ...: intervals that average a ramp), the dwell holds."""

    def truth(batch: float, kbar: float) -> float:
        return 0.012 + 0.00015 * max(0.0, batch * (1 + 0.2 * kbar) - 16)

    c = controller(min_dwell_s=30.0)
    rng = random.Random(6)
    t, reshaped_at = 0.0, []
    for i in range(45):
        t += 2.0
        batch = 2 + i % 2 if i < 30 else 48 * (1 + (swinging and i % 2))
        k = c.table().routes["r"].k_at(batch)
        steps = 200.0
        c.observe_steps("p", steps, steps * batch, steps * batch * truth(batch, k), steps * batch * k, t, steps * batch)
        d = c.table().routes["r"]
        for _ in range(6):
            explore = d.explore_k is not None and rng.random() < d.explore_share
            c.observe(obs("r", d.explore_k if explore and d.explore_k else k, 0.7, batch, rng), t)
        before = c.cost_model("p").reshapes
        c.tick(t, {"p": batch})
        if c.cost_model("p").reshapes != before:
            reshaped_at.append(t)
    moves = [r for r in c.log if r.reason.startswith(ADAPTIVE_MOVES)]
    within = [b for a, b in itertools.pairwise(moves) if b.at - a.at < c.settings.min_dwell_s]
    assert c.cost_model("p").shape != (1.0, 64.0) and reshaped_at
    if swinging:
        assert not within
    else:
        assert within and all(r.at in reshaped_at and "step-time shape refitted" in r.reason for r in within)
        assert c.table().routes["r"].k_at(48) >= 2
