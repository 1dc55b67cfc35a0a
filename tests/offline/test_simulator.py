from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml
from specgate.controllers.controller import ControllerSettings
from specgate.controllers.observations import Observation
from specgate.offline.simulator import (
    KNEE_COUNTERS,
    STEP_PROFILES,
    AdaptiveSchedule,
    RouteScenario,
    Scenario,
    StaticK,
    all_policies,
    make_policy,
    run,
    scenario_from_dict,
)

SCENARIOS = Path(__file__).resolve().parents[2] / "bench" / "scenarios"


def small(name: str, **over: object) -> object:
    data = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    data.update({"duration_s": 60, **over})
    return scenario_from_dict(data)


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_committed_scenarios_load(path: Path) -> None:
    s = scenario_from_dict(yaml.safe_load(path.read_text()))
    assert s.duration_s > 0 and s.routes
    assert {p for p in all_policies(s)} >= {"specgate", "oracle", "static-k0"}


def test_speculation_helps_at_low_load_and_hurts_at_high_load() -> None:
    low = small("low-load")
    k0 = run(low, make_policy("static-k0", low)).summary()
    k4 = run(low, make_policy("static-k4", low)).summary()
    assert k4["mean_tpot_ms"] < 0.7 * k0["mean_tpot_ms"]
    high = small("high-load")
    h0 = run(high, make_policy("static-k0", high)).summary()
    h4 = run(high, make_policy("static-k4", high)).summary()
    assert h4["goodput_tok_per_busy_s"] < h0["goodput_tok_per_busy_s"]


def test_runs_the_same_controller_and_is_deterministic() -> None:
    s = small("acceptance-drift")
    a = run(s, make_policy("specgate", s))
    b = run(s, make_policy("specgate", s))
    assert a.summary() == b.summary() and a.k_trace == b.k_trace
    assert a.finished > 100


def test_policies_on_one_seed_face_the_same_requests() -> None:
    """Common random numbers: on one seed every policy gets the same arrivals with the same output lengths, and each
    request its own acceptance draws, whatever the policy drafted or explored before it (those once came from one
    stream, so a policy's choices reshuffled the luck of every later request: p99s of 600 requests compared luck)."""
    s = small("low-load", arrivals=[[30, 2.0], [60, 0.0]])  # all finish within the 60 s
    runs = {p: run(s, make_policy(p, s)) for p in ("static-k0", "static-k4", "specgate")}
    assert len({r.finished for r in runs.values()}) == 1 and runs["static-k0"].finished > 40
    assert len({r.tokens for r in runs.values()}) == 1  # every request's output length, summed
    # The same draws accept the same tokens: a fixed k over the same requests accepts the same drafts whatever the
    # step-time noise (which moves when each request runs and beside whom).
    accepted = {}
    for noise in (0.0, 0.3):
        counting = _CountingAccepted(2)
        result = run(replace(s, noise=noise), counting)
        accepted[noise] = (counting.accepted, result.busy_s)
    assert accepted[0.0][0] == accepted[0.3][0] > 0 and accepted[0.0][1] != accepted[0.3][1]


@dataclass
class _CountingAccepted(StaticK):
    """A static k that adds up the drafts its finished requests had accepted."""

    accepted: int = 0

    def on_finish(self, obs: Observation, now: float) -> None:
        self.accepted += obs.spec.accepted_tokens if obs.spec is not None else 0


def test_unknown_policy() -> None:
    with pytest.raises(ValueError):
        make_policy("nope", small("low-load"))


def _inline(rate: float, alpha: float) -> object:
    # Fixed here (not read from bench/scenarios) so that editing a committed scenario cannot move this guard.
    return scenario_from_dict(
        {
            "name": f"guard-{rate}-{alpha}",
            "duration_s": 90,
            "seed": 7,
            "arrivals": [[90, rate]],
            "routes": [{"name": "r", "share": 1.0, "alpha": alpha, "mean_output": 150}],
        }
    )


def _tpot(scenario: object, policy: str) -> float:
    value = run(scenario, make_policy(policy, scenario)).summary()["mean_tpot_ms"]
    assert value is not None
    return float(value)


def test_headline_ranking_holds_with_margin() -> None:
    """The simulator's headline results: speculation pays at low load with high acceptance and hurts past the knee.
    The "oracle" (clairvoyant acceptance, greedy goodput per step) matches the best static k at low load; at high
    load it is 8.5% behind static k=0 on mean TPOT (41.9 vs 38.6 ms here): it maximises goodput, not TPOT, so it is
    no upper bound for TPOT yet (a per-step TPOT oracle is part of issue #15)."""
    low = _inline(0.5, 0.85)
    assert _tpot(low, "static-k4") < 0.6 * _tpot(low, "static-k0")
    high = _inline(60.0, 0.5)
    assert _tpot(high, "static-k0") < 0.9 * _tpot(high, "static-k4")
    assert _tpot(low, "oracle") <= 1.02 * min(_tpot(low, f"static-k{k}") for k in range(5))


def test_per_step_policies_learn_unbiased_acceptance_when_k_varies_by_step() -> None:
    """Under per-step schedules a request drafts different k at different steps; judged against the drafts each
    step really had (SpecStats.by_k), the learned acceptance stays the true one."""
    scenario = scenario_from_dict(
        {
            "name": "varying",
            "duration_s": 120,
            "seed": 3,
            "arrivals": [[40, 4.0], [80, 40.0], [120, 4.0]],
            "routes": [{"name": "r", "share": 1.0, "alpha": 0.7, "mean_output": 120}],
        }
    )
    policy = make_policy("specgate", scenario)
    run(scenario, policy)
    rates = policy.ctl.estimator("r", "sim").position_rates()  # type: ignore[attr-defined]  # AdaptiveSchedule
    # a_i = P(first i drafts accepted) = 0.7^i for the simulated drafter
    assert all(a is not None and abs(a - 0.7 ** (i + 1)) < 0.03 for i, a in enumerate(rates))
    schedule = policy.ctl.table().routes["r"].schedule  # type: ignore[attr-defined]  # AdaptiveSchedule
    assert schedule is not None and schedule[0] == (1, 4)  # alone, speculate fully


def test_batch_table_applies_per_step() -> None:
    table = make_policy("vllm-batch-table", _inline(1.0, 0.8))
    assert table.mode == "per-step"
    assert [table.step_k("r", 0.0, b) for b in (1, 8, 9, 32, 33)] == [4, 4, 2, 2, 0]  # type: ignore[attr-defined]  # BatchTable


def test_published_acceptance_lengths_are_reproduced() -> None:
    """A route given published acceptance lengths (Maverick EAGLE-3, coding) accepts so that E[L(k)] matches them."""
    published = [1.83, 2.45, 2.94, 3.26, 3.47, 3.57, 3.62]
    scenario = scenario_from_dict(
        {
            "name": "published",
            "duration_s": 30,
            "arrivals": [[30, 1.0]],
            "max_k": 7,
            "routes": [{"name": "coding", "acceptance_lengths": published}],
        }
    )
    (route,) = scenario.routes
    assert route.lengths_at(0.0, 7)[1:] == pytest.approx(published, abs=1e-9)
    rng = random.Random(5)
    steps, tokens = 20_000, 0
    for _ in range(steps):
        accepted = 0
        while accepted < 4 and rng.random() < route.accept_prob(accepted + 1, 0.0):
            accepted += 1
        tokens += accepted + 1
    assert tokens / steps == pytest.approx(published[3], rel=0.02)


def test_knee_counters_profile_is_the_committed_calibration() -> None:
    """The `knee-counters` profile is what bench/knee_mix_steps.py fitted to the knee engine's step counters (prompts
    priced apart, as the simulator computes them); a new calibration must update the constants."""
    import json

    path = Path(__file__).resolve().parents[2] / "bench/results/knee-drafter-step-counters.json"
    fitted = json.loads(path.read_text())["two_hinges_prompts_apart"]
    assert fitted["prompt_cost"] == 1.0 and fitted["rel_rms_error"] < 0.1
    keys = ("t0_s", "t1_s", "t2_s", "draft_cost", "knee2_tokens")
    assert tuple(fitted[k] for k in keys) == pytest.approx(KNEE_COUNTERS, rel=1e-6)
    step = STEP_PROFILES["knee-counters"]
    # Every reading within 20% (19 ms alone at k = 0, ~62 ms at 8 clients and k = 4, ~300 ms at 32 and k = 4): the
    # batch, drafts per request-step and prompt tokens per step as the engine ran them, the prompts passed the way
    # the simulator passes those joining a step.
    rows = json.loads(path.read_text())["rows"]
    for row in rows:
        x_prompt = row["prompt_tokens_per_step"]
        predicted = step(
            row["batch"] + x_prompt, row["batch"] * row["drafts_per_request_step"] / (row["batch"] + x_prompt), row["k"]
        )
        assert predicted * 1000 == pytest.approx(row["step_ms"], rel=0.2)


def test_published_h100_profile_is_memory_bound_at_small_batch() -> None:
    step = STEP_PROFILES["h100-llama8b-eagle"]
    assert step(1, 0, 0) * 1000 == pytest.approx(1.207 + 5.886 + 0.021 + 0.040, abs=0.01)  # the published terms
    assert step(1, 4, 4) / step(1, 0, 0) < 1.35  # drafting and 4 extra tokens cost little alone
    assert step(64, 4, 4) / step(64, 0, 0) > step(1, 4, 4) / step(1, 0, 0)  # and more under load


def _kv_scenario(kv_tokens: int | None, prompt: int = 512, output: int = 200) -> Scenario:
    return scenario_from_dict(
        {
            "name": "kv-guard",
            "duration_s": 60,
            "seed": 3,
            "arrivals": [[60, 30.0]],
            "kv_tokens": kv_tokens,
            "prompt_tokens": prompt,
            "routes": [{"name": "r", "share": 1.0, "alpha": 0.7, "mean_output": output}],
        }
    )


def test_a_small_kv_cache_preempts_and_preemption_costs_time() -> None:
    """A small cache preempts, and the recompute costs engine time; with no cap (the default, every committed
    scenario before `kv-pressure`) nothing is preempted. Drafts take slots, yet k = 4 preempts less than k = 0:
    requests that finish sooner free the cache sooner (why the KV rule is off by default, docs/controller.md)."""
    free, tight = _kv_scenario(None), _kv_scenario(24_000)
    unlimited = run(free, make_policy("static-k4", free)).summary()
    capped = run(tight, make_policy("static-k4", tight))
    assert unlimited["preemptions"] == 0 and capped.summary()["preemptions"] > 10
    no_recompute = run(replace(tight, prefill_s_per_token=0.0), make_policy("static-k4", tight))
    assert capped.busy_s / capped.tokens > no_recompute.busy_s / no_recompute.tokens
    assert capped.preemptions < run(tight, make_policy("static-k0", tight)).preemptions


def test_the_kv_rule_acts_in_the_simulator_only_when_turned_on() -> None:
    """Short contexts in a small cache: the running requests' drafts are a real share of it, so the opt-in rule
    caps k (the route's status says so, and k never passes the cap: the cap holds it down, or the decision log says
    it took it down); the controller as shipped ignores the cache and drafts past that cap."""
    tight = _kv_scenario(640, prompt=24, output=48)
    on = AdaptiveSchedule(tight, ControllerSettings(kv_cap=True))
    capped = run(tight, on)
    cap = on.ctl.route_status("r")["kv_cap"]
    assert cap is not None and str(on.ctl.route_status("r")["kv_reason"]).count("preemption")
    lowered = [rec for rec in on.ctl.log if rec.reason.startswith("schedule: KV pressure")]
    assert all(rec.new_k <= cap for rec in lowered)
    assert max(ks["r"] for _, ks in capped.k_trace[len(capped.k_trace) // 2 :]) <= cap
    shipped = make_policy("specgate", tight)
    free = run(tight, shipped)
    assert not any("KV pressure" in rec.reason for rec in shipped.ctl.log)  # type: ignore[attr-defined]  # AdaptiveSchedule
    assert shipped.ctl.route_status("r")["kv_cap"] is None  # type: ignore[attr-defined]  # AdaptiveSchedule
    assert max(ks["r"] for _, ks in free.k_trace) > cap


def test_closed_loop_users_keep_their_number_in_flight() -> None:
    """`users`: each user sends again as soon as answered. One user keeps the engine busy the whole phase, one at a
    time; eight make each step a batch of eight (slower per token on the cpu profile); a phase of none lets it idle."""
    base = replace(small("cpu-engine"), duration_s=30.0)
    one = run(replace(base, users=((30.0, 1),)), make_policy("static-k0", base))
    eight = run(replace(base, users=((30.0, 8),)), make_policy("static-k0", base))
    assert one.busy_s > 0.97 * 30.0 and eight.busy_s > 0.97 * 30.0
    assert eight.finished > 2 * one.finished
    assert eight.summary()["mean_tpot_ms"] > one.summary()["mean_tpot_ms"]
    pause = run(replace(base, users=((10.0, 1), (20.0, 0), (30.0, 1))), make_policy("static-k0", base))
    assert 0.6 * 30.0 < pause.busy_s < 0.75 * 30.0


def test_bench_shaped_runs_fixed_answers_prompts_in_their_step_and_a_moving_mix() -> None:
    """What `specgate bench` sends, for bench/sim_vs_knee.py: every answer exactly `mean_output` tokens; end-to-end
    time includes the first step; a prompt costs its tokens in the step it joins (past the knee profile's knee, more
    time per token); the mix follows `share_phases`."""
    code = RouteScenario("code", 0.5, ((0.0, 1.0),), 64.0)
    chat = RouteScenario("chat", 0.5, ((0.0, 0.0),), 64.0)
    base = Scenario("bench", 40.0, ((40.0, 0.0),), (code, chat), profile="knee", users=((40.0, 8),), fixed_output=True)
    plain = run(base, make_policy("static-k0", base))
    assert plain.finished > 10 and len(plain.e2e_finished) == plain.finished
    assert plain.tokens >= 64 * plain.finished and all(t > 0 for _, t in plain.e2e_finished)
    prefilled = run(replace(base, prefill_in_step=True, prompt_tokens=30), make_policy("static-k0", base))
    assert prefilled.summary()["mean_e2e_tpot_ms"] > 1.1 * plain.summary()["mean_e2e_tpot_ms"]
    # End to end includes the first step, which decode time per token (over the 63 tokens after the first) does not.
    assert 64 * plain.summary()["mean_e2e_tpot_ms"] > 63 * plain.summary()["mean_tpot_ms"] + 15
    # All code for 20 s, then all chat: at k = 4 code writes 5 tokens a step, chat 1.
    moved = replace(base, share_phases=((20.0, (1.0, 0.0)), (40.0, (0.0, 1.0))))
    result = run(moved, make_policy("static-k4", moved))
    early = [t for at, t in result.e2e_finished if at < 18.0]
    late = [t for at, t in result.e2e_finished if at > 25.0]
    assert early and late and max(early) < min(late)
    assert (
        moved.shares_at(5.0) == (1.0, 0.0) and moved.shares_at(39.0) == (0.0, 1.0) and base.shares_at(1) == (0.5, 0.5)
    )


def test_the_cli_offers_every_step_profile_and_no_other() -> None:
    from specgate.gateway.cli import ENGINE_PROFILES

    assert sorted(ENGINE_PROFILES) == sorted(STEP_PROFILES)


def test_an_explorer_carries_the_schedule_it_was_dispatched_with() -> None:
    """As the gateway sends it: an exploring request runs its route's explore k up to the batch where exploring was
    found to pay and the route's schedule past it, as the table stood at its dispatch (a later table does not reach
    a request in flight). The first requests of a fresh controller explore at the top k up to a small batch."""
    from specgate.controllers.k_schedule import k_at
    from specgate.offline.simulator import _Req, _step_ks

    scenario = small("high-load")
    policy = AdaptiveSchedule(scenario)
    d = policy.ctl.table().routes["code"]
    always = random.Random(0)
    always.random = lambda: 0.0  # type: ignore[method-assign]  # every request explores
    k = policy.k_for("code", 0.0, 0, always)
    own = policy.own_schedule
    assert own == d.explorer_schedule() and own is not None and d.explore_until is not None
    assert k == d.explore_k == scenario.max_k
    req = _Req("code", 0.0, 0.0, 100, k, 1, hist=[0] * (k + 1), schedule=own)
    policy.on_tick(2.0, 200.0)  # a new table, busy: exploring no longer pays
    assert policy.ctl.table().routes["code"].explore_until != d.explore_until
    for batch in (1, d.explore_until, d.explore_until + 1, 200):
        assert _step_ks(policy, [req], 2.0, batch, scenario.max_k) == [k_at(own, batch)]
    assert _step_ks(policy, [req], 2.0, 200, scenario.max_k) == [d.k_at(200)]
    plain = random.Random(0)
    plain.random = lambda: 0.99  # type: ignore[method-assign]  # no request explores
    policy.k_for("code", 2.0, 0, plain)
    assert policy.own_schedule is None


def test_a_scenarios_measured_step_time_is_the_controllers_prior() -> None:
    """`step_time_prior` in a scenario is the pool's declared measured step time: the controller's step-time fit
    starts from it (gpu-published-measured: the published H100 + EAGLE predictor), not from the GPU prior."""
    measured = small("gpu-published-measured")
    plain = small("gpu-published")
    assert isinstance(measured, Scenario) and isinstance(plain, Scenario)
    assert measured.step_time_prior == (0.009228, 0.0000612, 0.0, 0.343) and plain.step_time_prior is None
    fit = make_policy("specgate", measured).ctl.cost_model("sim")  # type: ignore[attr-defined]
    assert fit.shape == (0.343, 0.0) and fit.prior[0] == 0.009228
    assert make_policy("specgate", plain).ctl.cost_model("sim").shape == (1.0, 64.0)  # type: ignore[attr-defined]
