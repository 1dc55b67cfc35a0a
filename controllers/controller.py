"""The adaptive speculation controller: observations in, a decision table out, every tick. No I/O.

Each tick, per pool: estimate each route's acceptance (controllers/estimator.py) and the pool's step time
(controllers/cost_model.py), pick the goodput-maximising k per route jointly (controllers/policy.py),
then apply the safety rules, in this order:

1. kill switch: k = 0 everywhere;  2. pins (admin, then config) are applied as they are;
   While paused, only these two act; every other k holds.
3. stale inputs (no fresh load figure for the pool, or no observation of the route for `stale_after_s`):
   the configured safe k;  4. hysteresis: keep the current ks unless the new ones promise at least
   `hysteresis` more goodput;  5. minimum dwell time between two changes of a pool's schedules (a route's
   first move excepted);
6. bounded change: at most `max_step` per tick;  7. k always within the route's bounds and the pool's max.

A small `explore_share` of the requests of a route below its max k run at a higher k, so the acceptance at the
positions it does not use stays known (otherwise a route switched off could never come back): the largest k that
could pay at the pool's current load on the optimistic end of the route's acceptance, else one more than its k.
The same class runs in the gateway and in the simulator.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from specgate.controllers.cost_model import PRIORS, StepCostModel, StepSample, refit_pools, stacked_predictor
from specgate.controllers.decisions import DecisionTable, RouteDecision
from specgate.controllers.estimator import AcceptanceEstimator, pessimistic_lengths
from specgate.controllers.joint_k import OBJECTIVES, TPOT_POWER
from specgate.controllers.k_schedule import Schedule, compress, encode, k_at, on_grid
from specgate.controllers.kv_pressure import KvPressure, KvReading
from specgate.controllers.observations import Observation
from specgate.controllers.policy import (
    RouteState,
    break_even_acceptance,
    speedups,
)
from specgate.controllers.schedule import (
    BATCH_GRID,
    Gain,
    PoolProblem,
    batch_table,
    plan_schedules,
    route_schedules,
)
from specgate.controllers.step_evidence import interval_sample

__all__ = ["ControllerSettings", "DecisionRecord", "PoolSpec", "RouteSpec", "SpeculationController"]


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    tick_s: float = 2.0
    half_life_s: float = 60.0
    hysteresis: float = 0.03
    min_dwell_s: float = 10.0
    max_step: int = 4
    explore_share: float = 0.03
    # Where exploring cannot pay (no k above the route's could raise its pool's goodput even at the upper end of its
    # acceptance interval, at the pool's load), a route explores at most this many requests per `half_life_s` (1 per
    # 60 s): one request explores hundreds of steps, and the evidence is only there to see acceptance come back within
    # the time the estimator remembers (and as that evidence fades, the interval widens until exploring could pay
    # again). 0: `explore_share` alone. Measured in the simulator: 3 -> 1 took bursts 1.008 -> 1.002, high-load
    # 1.010 -> 1.007, kv-pressure p99 1.030 -> 0.996, the rest the same or better.
    explore_futile_requests: float = 1.0
    stale_after_s: float = 60.0
    safe_k: int = 0
    z: float = 1.28
    # A step change in a route's acceptance (controllers/estimator.py): when requests of the last
    # `recent_half_life_s` differ from the older ones by more than `change_z` standard errors, the older evidence is
    # dropped. 0: off (evidence is only forgotten with `half_life_s`).
    change_z: float = 4.0
    recent_half_life_s: float = 15.0
    decision_log_size: int = 500
    # Until a route has this much evidence (verify steps at position 1), it explores at a higher share:
    # `cold_start_paying_share` where exploring could pay at its pool's load (`_exploration_pays`: optimism where a
    # wrong guess costs little; measured in the simulator's low-load scenario: 25% left three quarters of a new route's
    # first requests at k = 0 and made the p99), `cold_start_share` where it cannot. An explorer runs its explore k
    # only up to a batch where exploring still pays (`RouteDecision.explore_until`): high-load went 1.018 -> 1.039
    # when every request of its first two seconds explored at the top k for life.
    cold_start_steps: float = 200.0
    cold_start_share: float = 0.25
    cold_start_paying_share: float = 1.0
    # Trials per draft position a route borrows from its pool's acceptance (the engines' own counters, all routes
    # together), so a new route starts where its pool is instead of at k = 0. 0 (the default): no loan; it measured
    # neutral in the simulator and is one suspect of the real-engine runs 12-14 (docs/controller.md).
    prior_weight: float = 0.0
    # Charge drafts per step at the route's proposal rate q (controllers/estimator.py); False: k on every step.
    proposal_rate: bool = True
    # False: k stays as configured (engine max within bounds); only pins and the kill switch act.
    adaptive: bool = True
    # KV pressure (controllers/kv_pressure.py), off by default: measured in the simulator, capping k under a full
    # cache cost more than it saved (speculation shortens requests, which frees their KV sooner). Cache use that caps
    # k, use below which the cap recovers and how long it must stay below first, drafts' largest share of the cache.
    kv_cap: bool = False
    kv_high: float = 0.90
    kv_low: float = 0.75
    kv_recover_s: float = 30.0
    kv_draft_share: float = 0.05
    # What the routes' ks of a pool are chosen for at each batch size (joint_k.OBJECTIVES): "tpot", the TPOT requests
    # see (its root mean square over requests, each route weighted by its finished requests per second), at every
    # batch size; "goodput", the pool's tokens per second, with the TPOT only from the engines' step limit up
    # (`PoolSpec.max_num_seqs`). Measured in the simulator (docs/controller.md, session 31): with the schedules'
    # switch points placed between the grid's sizes, "tpot" took mixed-routes from 0.88x to 0.86x the best baseline
    # and its p99 from 1.23x to 1.02x.
    objective: str = "tpot"

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective {self.objective!r}: one of {', '.join(OBJECTIVES)}")


@dataclass(frozen=True, slots=True)
class RouteSpec:
    name: str
    pool: str
    k_min: int = 0
    k_max: int = 16
    pin: int | None = None
    tpot_slo_s: float | None = None


@dataclass(frozen=True, slots=True)
class PoolSpec:
    name: str
    max_k: int
    prior: str = "gpu"
    # The engines' speculation method (cost_model.DRAFTERS): what drafting costs. None: the prior's own t3.
    method: str | None = None
    # What one draft position costs as a fraction of the prior's step floor, where the operator measured it for the
    # pool's drafter: replaces the method's round number (cost_model.DRAFTERS). None: the method's.
    draft_cost: float | None = None
    # The pool's measured step time, (floor s, s per token past the knee, knee tokens, draft token cost): the step-time
    # fit's prior in place of `prior`'s round numbers (its t3 per draft position stays `prior`'s, or the method's).
    step_time: tuple[float, float, float, float] | None = None
    # The most requests the pool's engines run in one step (vLLM's `--max-num-seqs`), where the operator gives it: a
    # batch that large is held there by a queue, and the routes' k there minimise their TPOT instead of the
    # pool's goodput (controllers/schedule.py, `PoolProblem.full_at`). None: goodput at every batch size. Read under
    # the goodput objective only (`ControllerSettings.objective`).
    max_num_seqs: int | None = None


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    at: float
    version: int
    route: str
    old_k: int
    new_k: int
    reason: str
    expected_speedup: float
    inputs: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The record as the admin API and the shared store show it."""
        return {
            "at": self.at,
            "version": self.version,
            "route": self.route,
            "old_k": self.old_k,
            "new_k": self.new_k,
            "reason": self.reason,
            "expected_speedup": round(self.expected_speedup, 4),
            "inputs": dict(self.inputs),
        }


def _read_at(old: Schedule, new: Schedule) -> tuple[int, ...]:
    """The batch sizes two schedules are compared at: the grid's and both schedules' switch points."""
    return tuple(sorted({*BATCH_GRID, *(lo for lo, _ in old), *(lo for lo, _ in new)}))


def _bounded(old: Schedule, new: Schedule, max_step: int) -> Schedule:
    """`new`, moved at most `max_step` from `old` at each batch size (`_read_at`)."""
    points = []
    for b in _read_at(old, new):
        before = k_at(old, b)
        points.append((b, before + max(-max_step, min(max_step, k_at(new, b) - before))))
    return compress(points)


def _drafts_less(pairs: Sequence[tuple[Schedule, Schedule]]) -> bool:
    """Each `(old, new)` pair's `new` never drafts more than its `old` at any batch size (the grid's and both
    schedules' switch points), and one drafts fewer at a batch size of the grid: a switch point that moves down a
    little is no reason to skip the margin (its place drifts with the estimates tick by tick)."""
    fewer = False
    grid = set(BATCH_GRID)
    for old, new in pairs:
        if old == new:
            continue
        sizes = _read_at(old, new)
        for b, o, n in zip(sizes, on_grid(old, sizes), on_grid(new, sizes), strict=True):
            if n > o:
                return False
            fewer = fewer or (n < o and b in grid)
    return fewer


def _step_cost_model(pool: PoolSpec) -> StepCostModel:
    """The pool's step-time model, starting from its measured step time where given, else from its prior's."""
    if pool.step_time is None:
        return StepCostModel(pool.prior, method=pool.method, drafter_per_k=pool.draft_cost)
    floor, per_token, knee, cost = pool.step_time
    return StepCostModel(
        (floor, per_token, PRIORS[pool.prior][2]),
        knee=knee,
        draft_cost=cost,
        method=pool.method,
        drafter_per_k=pool.draft_cost,
    )


# Load within this factor of the last tick's holds steady (`_load_holds`).
_STEADY_LOAD = 1.25
# An explorer one draft above its route's k (where no k was found to pay) keeps it up to this many times the load it
# was judged at, its route's schedule past it (`_exploration_pays`).
_FUTILE_REACH = 2.0


def _mix(weights: Sequence[float], rates: Sequence[float], ks: Sequence[int]) -> tuple[float, float]:
    """(mean drafts per step, largest k) of routes with these batch shares (weights), proposal rates and ks; routes
    without weight take no part. (0, 0) when none has weight."""
    total = sum(w for w in weights if w > 0)
    if not total:
        return 0.0, 0.0
    drafted = sum(w * k * q for w, q, k in zip(weights, rates, ks, strict=True) if w > 0)
    return drafted / total, float(max(k for w, k in zip(weights, ks, strict=True) if w > 0))


def _capped(schedule: Schedule, cap: int) -> Schedule:
    return compress([(lo, min(k, cap)) for lo, k in schedule])


@dataclass
class _RouteRuntime:
    spec: RouteSpec
    k: int
    reason: str = "initial"
    changed_at: float = float("-inf")
    last_obs_at: float | None = None
    # Engine steps of the route's recent requests, decayed with `half_life_s` since `weight_at`: its batch share.
    weight: float = 0.0
    weight_at: float = 0.0
    # The route's finished requests, decayed the same way: its request rate (`_request_rate`).
    requests: float = 0.0
    speedup: float = 1.0
    admin_pin: int | None = None
    # k by batch size (controllers/schedule.py); starts as the constant k.
    schedule: Schedule = ()
    schedule_changed_at: float = float("-inf")
    # Whether the schedule has made an adaptive move yet: a route's first move does not wait out the pool's dwell.
    moved: bool = False
    # The acceptance estimator's step changes already named in a decision of this route.
    step_changes_logged: int = 0


def with_undrafted_steps(obs: Observation) -> tuple[int, ...]:
    """The acceptance histogram plus the decode steps in which the drafter proposed nothing.

    vLLM's histogram counts only steps that carried drafts. An n-gram drafter proposes nothing when the text
    does not repeat itself, and such a step yields one token: for the expected tokens per step it is a step
    with 0 drafts accepted. Without this, unpredictable traffic would leave no evidence at all and the last
    (good) estimate would stand for ever.
    """
    spec = obs.spec
    assert spec is not None
    hist = list(spec.histogram) or [0] * (obs.k_applied + 1)
    decode_steps = obs.completion_tokens - 1 - spec.accepted_tokens
    hist[0] += max(0, decode_steps - spec.verify_steps)
    return tuple(hist)


def acceptance_evidence(obs: Observation) -> list[tuple[tuple[int, ...], int]]:
    """(histogram, k) groups to learn acceptance from: one per k the request's steps drafted at when k varied
    between steps, else its whole histogram (with the undrafted steps) at the k it was dispatched with. A request
    that followed a schedule without per-step detail gives none: its histogram mixes steps of different k, and its
    steps without drafts may have been capped to 0 (counting them as rejections sank the estimate and, with it,
    the schedule)."""
    spec = obs.spec
    if spec is None:
        return []
    if spec.by_k or obs.scheduled:
        # Steps whose drafter proposed nothing (k 0 in the per-step record) yield one token: position 1 failed.
        return [((hist[0], 0), 1) if k == 0 else (hist, k) for k, hist in spec.by_k]
    return [(with_undrafted_steps(obs), obs.k_applied)] if obs.k_applied > 0 else []


def proposal_evidence(obs: Observation) -> tuple[int, int]:
    """(steps with a proposal, steps that could draft but had none) of one request, for the proposal rate. From the
    per-step record when there is one; for a request at one fixed k > 0, its decode steps without drafts; nothing
    from a request on a schedule without per-step detail (its undrafted steps may have been capped to 0)."""
    spec = obs.spec
    if spec is None:
        return 0, 0
    if spec.by_k or obs.scheduled:
        unproposed = sum(sum(hist) for k, hist in spec.by_k if k == 0)
        return sum(sum(hist) for k, hist in spec.by_k if k > 0), unproposed
    if obs.k_applied <= 0:
        return 0, 0
    decode_steps = obs.completion_tokens - 1 - spec.accepted_tokens
    return spec.verify_steps, max(0, decode_steps - spec.verify_steps)


@dataclass
class SpeculationController:
    settings: ControllerSettings
    routes: Sequence[RouteSpec]
    pools: Sequence[PoolSpec]
    now: float = 0.0
    paused: bool = False
    kill_switch: bool = False
    version: int = 1
    ticks: int = 0
    log: deque[DecisionRecord] = field(init=False)
    _routes: dict[str, _RouteRuntime] = field(init=False)
    _pools: dict[str, PoolSpec] = field(init=False)
    _kv: dict[str, KvPressure] = field(init=False)
    _estimators: dict[tuple[str, str], AcceptanceEstimator] = field(init=False)
    _pool_acceptance: dict[str, AcceptanceEstimator] = field(init=False)
    _cost: dict[str, StepCostModel] = field(init=False)
    _explore: dict[str, int | None] = field(init=False)
    # The batch up to which a route's explorers run its explore k (`_exploration_pays`; None: any).
    _explore_until: dict[str, int | None] = field(init=False, default_factory=dict)
    # Routes whose exploration cannot pay at their pool's load (`_exploration_pays`): they explore at a rate.
    _futile: set[str] = field(init=False, default_factory=set)
    # Routes whose exploration could pay at their pool's load of the last tick (`_exploration_pays`).
    _pays: set[str] = field(init=False, default_factory=set)
    _static: dict[str, int] = field(init=False)
    _shares: dict[str, float] = field(init=False)
    # Each pool's routes, in route order (the routes and their pools are fixed for a controller's life).
    _members: dict[str, list[_RouteRuntime]] = field(init=False)
    # Each route's expected lengths, computed once per tick (None outside a tick: status views read them fresh).
    _lengths_cache: dict[str, tuple[float, ...]] | None = field(init=False, default=None)
    # Each route as the optimiser saw it this tick, for the lookup at the current load (which reads no bounds).
    _states_cache: dict[str, RouteState] | None = field(init=False, default=None)
    # Each route's largest k this tick, once the KV caps are read (asked several times per route each tick).
    _k_max_cache: dict[str, int] | None = field(init=False, default=None)
    # Each route's `_vitals` this tick (several parts of a tick read them; they change only with observations).
    _vitals_cache: dict[str, tuple[float, float, float]] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._pools = {p.name: p for p in self.pools}
        s = self.settings
        self._pool_acceptance = {
            p.name: AcceptanceEstimator(p.max_k, self.settings.half_life_s, self.settings.z) for p in self.pools
        }
        self._kv = {
            p.name: KvPressure(p.max_k, s.kv_high, s.kv_low, s.kv_recover_s, s.kv_draft_share) for p in self.pools
        }
        self._routes = {}
        for r in self.routes:
            if r.pin is not None:
                start, why = r.pin, "pinned in config"
            elif self.settings.adaptive:
                start, why = self.settings.safe_k, "initial: safe k until acceptance is measured"
            else:
                start, why = r.k_max, "static: engine max k within route bounds"
            k = self._clamp(r, start)
            self._routes[r.name] = _RouteRuntime(r, k, why, schedule=((1, k),))
        self._static = {name: rt.k for name, rt in self._routes.items()}
        self._members = {p.name: [rt for rt in self._routes.values() if rt.spec.pool == p.name] for p in self.pools}
        self._estimators = {}
        self._cost = {p.name: _step_cost_model(p) for p in self.pools}
        self._last_batch: dict[str, float] = {}
        self._engine_steps_at: dict[str, float] = {}
        # Per pool, its step-time model's `reshapes` when its schedules last moved.
        self._reshapes_seen: dict[str, int] = {}
        self._explore = {}
        self.log = deque(maxlen=self.settings.decision_log_size)
        self._refresh_explore()
        self._shares = {name: self.explore_share(name) for name in self._routes}

    # -- bounds -------------------------------------------------------------------------------------
    def _k_max(self, r: RouteSpec) -> int:
        """The route's bound, the pool's max k, and the pool's KV-pressure cap while one holds (pins included)."""
        cache = self._k_max_cache
        if cache is not None and (hit := cache.get(r.name)) is not None:
            return hit
        pool = self._pools.get(r.pool)
        if pool is None:
            return 0
        cap = self._kv[r.pool].cap
        out = min(r.k_max, pool.max_k, pool.max_k if cap is None else cap)
        if cache is not None:
            cache[r.name] = out
        return out

    def _k_min(self, r: RouteSpec) -> int:
        return min(r.k_min, self._k_max(r))

    def _clamp(self, r: RouteSpec, k: int) -> int:
        top = self._k_max(r)
        return max(min(r.k_min, top), min(top, k))

    def estimator(self, route: str, pool: str) -> AcceptanceEstimator:
        key = (route, pool)
        est = self._estimators.get(key)
        if est is None:
            max_k = self._pools[pool].max_k if pool in self._pools else 16
            s = self.settings
            est = AcceptanceEstimator(max_k, s.half_life_s, s.z, s.change_z, s.recent_half_life_s)
            self._estimators[key] = est
        return est

    def cost_model(self, pool: str) -> StepCostModel:
        return self._cost[pool]

    # -- inputs -------------------------------------------------------------------------------------
    def observe(self, obs: Observation, now: float) -> None:
        rt = self._routes.get(obs.route)
        if rt is None or obs.pool not in self._pools:
            return
        rt.last_obs_at = now
        spec = obs.spec
        # A route's share of the batch is the engine steps its requests spend in it: more requests, longer ones, and
        # fewer accepted drafts per step all mean more of the batch. (It decayed per observation before, so a route's
        # weight did not grow with its request rate; and it counted tokens, which overstated high-acceptance routes.)
        decay = self._decay(rt, now)
        rt.weight = rt.weight * decay + max(1, obs.completion_tokens - (spec.accepted_tokens if spec else 0))
        rt.requests = rt.requests * decay + 1
        rt.weight_at = now
        estimator = self.estimator(obs.route, obs.pool)
        estimator.observe_request(acceptance_evidence(obs), now)
        estimator.observe_proposals(*proposal_evidence(obs), now)
        steps = obs.completion_tokens - 1 - (spec.accepted_tokens if spec else 0)
        engine_says = now - self._engine_steps_at.get(obs.pool, float("-inf")) <= self.settings.stale_after_s
        if steps > 0 and (spec is not None or obs.k_applied == 0) and not engine_says:
            # End-to-end time over all steps (prefill as one) when known; it includes queueing, which errs on
            # the side of caution. The step time depends on the whole batch's drafts: use the pool's mix.
            step_s = obs.e2e_s / (steps + 1) if obs.e2e_s else (obs.decode_s / steps if obs.decode_s else None)
            if step_s:
                kbar, kmax = self._pool_mix(obs.pool, now)
                self._cost[obs.pool].update(StepSample(obs.batch_at_dispatch + 1, kbar, kmax, step_s))

    def _state(self, rt: _RouteRuntime, k_min: int, k_max: int) -> RouteState:
        """The route as the optimiser sees it: batch share, bounds, expected lengths (pessimistic), SLO."""
        weight, proposal_rate, request_rate = self._vitals(rt)
        state = RouteState(
            rt.spec.name,
            weight or 1e-6,
            k_min,
            k_max,
            self._lengths(rt),
            rt.spec.tpot_slo_s,
            proposal_rate,
            # Read only where the pool has a full batch (its TPOT weighs routes by requests).
            request_rate if self._full_at(rt.spec.pool) is not None else None,
        )
        if self._states_cache is not None:
            self._states_cache[rt.spec.name] = state
        return state

    def observe_steps(
        self,
        pool: str,
        iterations: float,
        request_steps: float,
        itl_sum_s: float,
        draft_tokens: float,
        now: float,
        drafts: float | None = None,
    ) -> bool:
        """Step time over a scrape interval from the engine's own counters (controllers/step_evidence.py). While
        these arrive, the per-request estimate (end-to-end time over steps) is not used to fit the pool's step time:
        its regressors are far noisier. When they start (or come back), the per-request estimates in the window are
        dropped: taken while load ramps up, they carry the batch at dispatch, queueing and the prefill step, and in the
        simulator's high-load scenario a quarter of the window was such samples, 7-75% above the true step time,
        which led the fit away from the true shape. `drafts`: the request-steps that drafted (vLLM's
        spec_decode_num_drafts), None where the engine does not count them. False when the interval ran too little to
        tell."""
        if pool not in self._cost:
            return False
        batch = request_steps / iterations if iterations > 0 else 1.0
        kmax = self._pool_kmax(pool, batch)
        sample = interval_sample(iterations, request_steps, itl_sum_s, draft_tokens, kmax, drafts)
        if sample is None:
            return False
        if now - self._engine_steps_at.get(pool, float("-inf")) > self.settings.stale_after_s:
            self._cost[pool].clear_window()
        self._cost[pool].update(sample)
        self._engine_steps_at[pool] = now
        return True

    def observe_engine_acceptance(
        self, pool: str, drafts: float, accepted_per_pos: Mapping[int, float], now: float
    ) -> None:
        """An endpoint's speculation counters since its last scrape: drafts verified, and accepted tokens by draft
        position (0-based, vLLM's `spec_decode_num_accepted_tokens_per_pos`). Position i + 1 was tried by every draft
        whose position i was accepted (drafts shorter than k make this an undercount: a cautious prior)."""
        est = self._pool_acceptance.get(pool)
        if est is None or drafts <= 0:
            return
        passed = [accepted_per_pos.get(i, 0.0) for i in range(est.max_k)]
        est.observe_positions([drafts, *passed[:-1]], passed, now)

    def observe_route_positions(
        self, route: str, pool: str, drafts: float, accepted_per_pos: Mapping[int, float], now: float
    ) -> None:
        """A route's share of an endpoint's speculation counters over a scrape interval (controllers/attribution.py):
        its acceptance evidence where answers carry no per-request metrics. Same reading as the pool's."""
        if route not in self._routes or pool not in self._pools or drafts <= 0:
            return
        est = self.estimator(route, pool)
        passed = [accepted_per_pos.get(i, 0.0) for i in range(est.max_k)]
        est.observe_positions([drafts, *passed[:-1]], passed, now)

    def _pool_kmax(self, pool: str, batch: float) -> float:
        ks = [k_at(rt.schedule, max(1, round(batch))) for rt in self._members.get(pool, ())]
        return float(max(ks, default=0))

    def _decay(self, rt: _RouteRuntime, now: float) -> float:
        half_life = self.settings.half_life_s
        return float(0.5 ** (max(0.0, now - rt.weight_at) / half_life)) if half_life else 1.0

    def _weight(self, rt: _RouteRuntime, now: float) -> float:
        return rt.weight * self._decay(rt, now)

    def _pool_mix(self, pool: str, now: float) -> tuple[float, float]:
        members = self._members.get(pool, ())
        weights = [self._weight(rt, now) for rt in members]
        return _mix(
            weights,
            [self._proposal_rate(rt) if w > 0 else 0.0 for w, rt in zip(weights, members, strict=True)],
            [rt.k for rt in members],
        )

    def _vitals(self, rt: _RouteRuntime) -> tuple[float, float, float]:
        """The route's batch share (`_weight`), proposal rate and finished requests per second now; within a tick,
        computed once. The request rate comes from the count of finished requests decayed with `half_life_s` (in a
        steady stream of r per second the count settles at r x half-life / ln 2); 0 without a half-life."""
        cache = self._vitals_cache
        if cache is not None and (hit := cache.get(rt.spec.name)) is not None:
            return hit
        decay, half_life = self._decay(rt, self.now), self.settings.half_life_s
        rate = rt.requests * decay * math.log(2) / half_life if half_life else 0.0
        out = (rt.weight * decay, self._proposal_rate(rt), rate)
        if cache is not None:
            cache[rt.spec.name] = out
        return out

    def _proposal_rate(self, rt: _RouteRuntime) -> float:
        if not self.settings.proposal_rate:
            return 1.0
        return self.estimator(rt.spec.name, rt.spec.pool).proposal_rate()

    # -- reload -------------------------------------------------------------------------------------
    def carry_from(self, old: SpeculationController) -> None:
        """Go on from `old` after a config reload: what it learnt about routes and pools that still exist
        (acceptance, step-time fits, KV pressure; each route's k and schedule within its new bounds), its decision
        log, admin pins and flags, and versions that keep growing. New routes and pools start fresh, as does a pool
        whose max k or speculation method changed (what it learnt describes another drafter), and a route that now
        runs on another pool. A pool whose cost prior, measured step time or declared drafting cost changed keeps its
        acceptance (the drafter is the same) and starts its step-time fit afresh (the fit starts from those)."""
        self.version, self.ticks = old.version + 1, old.ticks
        self.paused, self.kill_switch = old.paused, old.kill_switch
        self.log.extend(old.log)
        kept = {
            name
            for name, pool in self._pools.items()
            if (before := old._pools.get(name)) is not None
            and (before.max_k, before.method) == (pool.max_k, pool.method)
        }
        for name in kept:
            self._pool_acceptance[name] = self._retuned(old._pool_acceptance[name])
            spec_was, spec_now = old._pools[name], self._pools[name]
            if (spec_was.prior, spec_was.draft_cost, spec_was.step_time) == (
                spec_now.prior,
                spec_now.draft_cost,
                spec_now.step_time,
            ):
                self._cost[name] = old._cost[name]
            if self.settings.kv_cap:
                kv, was = self._kv[name], old._kv[name]
                kv.cap, kv.reason, kv._calm_since = was.cap, was.reason, was._calm_since
            for table in ("_last_batch", "_engine_steps_at", "_reshapes_seen"):
                if name in getattr(old, table):
                    getattr(self, table)[name] = getattr(old, table)[name]
        for (route, pool), est in old._estimators.items():
            if route in self._routes and pool in kept:
                self._estimators[(route, pool)] = self._retuned(est)
        for name, rt in self._routes.items():
            before_rt = old._routes.get(name)
            if before_rt is not None:
                self._carry_route(rt, before_rt, same_pool=before_rt.spec.pool == rt.spec.pool and rt.spec.pool in kept)
        self._refresh_explore()
        self._shares = {name: self.explore_share(name) for name in self._routes}

    def _retuned(self, est: AcceptanceEstimator) -> AcceptanceEstimator:
        est.half_life_s, est.z = self.settings.half_life_s, self.settings.z
        est.change_z, est.recent_half_life_s = self.settings.change_z, self.settings.recent_half_life_s
        return est

    def _carry_route(self, rt: _RouteRuntime, old: _RouteRuntime, same_pool: bool) -> None:
        spec = rt.spec
        if old.admin_pin is not None and spec.k_min <= old.admin_pin <= spec.k_max:
            rt.admin_pin = old.admin_pin
        if not same_pool:
            return
        rt.last_obs_at, rt.weight, rt.weight_at, rt.speedup = old.last_obs_at, old.weight, old.weight_at, old.speedup
        rt.requests = old.requests
        if spec.pin is not None or not self.settings.adaptive:
            return  # the config's pin, or static mode, decides k: as at a start
        rt.k = self._clamp(spec, old.k)
        rt.schedule = tuple((lo, self._clamp(spec, k)) for lo, k in old.schedule) or ((1, rt.k),)
        rt.reason = old.reason if rt.k == old.k else f"{old.reason} (clamped to the reloaded bounds)"
        rt.changed_at, rt.schedule_changed_at, rt.moved = old.changed_at, old.schedule_changed_at, old.moved

    # -- admin --------------------------------------------------------------------------------------
    def pin(self, route: str, k: int | None) -> None:
        rt = self._routes[route]
        if k is not None and not rt.spec.k_min <= k <= rt.spec.k_max:
            raise ValueError(f"k={k} is outside route '{route}' bounds [{rt.spec.k_min}, {rt.spec.k_max}]")
        rt.admin_pin = k

    def adopt(self, table: DecisionTable, now: float) -> None:
        """Continue from decisions another controller made (a new leader takes over from the shared table, or a
        replica cut off from it carries on alone): the same k per route, versions that keep growing. Adopted
        routes count as observed now, so the stale-input rule waits a full `stale_after_s` for evidence."""
        self.version = max(self.version, table.version)
        for name, decision in table.routes.items():
            rt = self._routes.get(name)
            if rt is None:
                continue
            rt.k = self._clamp(rt.spec, decision.k)
            rt.schedule = (
                tuple((lo, self._clamp(rt.spec, k)) for lo, k in decision.schedule)
                if decision.schedule
                else ((1, rt.k),)
            )
            rt.reason = f"adopted: {decision.reason}"
            rt.changed_at = now
            if rt.last_obs_at is None:
                rt.last_obs_at = now

    def _full_at(self, pool: str) -> int | None:
        """The batch size from which the pool's schedules are chosen for the TPOT: 1 under that objective
        (`ControllerSettings.objective`), else the engines' step limit where given (`PoolSpec.max_num_seqs`)."""
        spec = self._pools.get(pool)
        if spec is None:
            return None
        return 1 if self.settings.objective == "tpot" else spec.max_num_seqs

    def _gain_note(self, pool: str, gain: float, at: int) -> str:
        """The decision log's account of a schedule change's gain at batch size `at`: goodput up, or (from `_full_at`
        up, where the schedules were chosen for the TPOT) its root mean square over requests down (`gain` is the mean
        square's: schedule.py's `_gain`)."""
        digits = 1 if gain >= 0.001 else 2
        full_at = self._full_at(pool)
        if full_at is None or at < full_at:
            return f"goodput +{gain:.{digits}%} at batch {at}"
        where = "" if full_at == 1 else " (full batch)"
        return f"rms TPOT -{1 - (1 + gain) ** (-1 / TPOT_POWER):.{digits}%} at batch {at}{where}"

    def route_names(self) -> list[str]:
        return list(self._routes)

    def schedules(self, pool: str) -> tuple[Mapping[str, Schedule], list[tuple[int, int, int]]]:
        """What the measurements imply at every batch size for `pool`: each route's k schedule, and the one
        route-blind table a stock engine could take (`num_speculative_tokens_per_batch_size`). Pins and bounds
        hold; the kill switch makes both all-zero."""
        members = self._members.get(pool, [])
        states = self._states(members, {rt.spec.name: self._overridden(rt) for rt in members})
        if not states:
            return {}, []
        max_k = 0 if self.kill_switch else self._pools[pool].max_k
        cost = self._cost[pool]
        full_at = self._full_at(pool)
        return route_schedules(states, cost.predict, step_many=cost.predict_many, full_at=full_at), batch_table(
            states, cost.predict, max_k
        )

    # -- the tick -----------------------------------------------------------------------------------
    def tick(
        self, now: float, pool_batch: Mapping[str, float | None], pool_kv: Mapping[str, KvReading] | None = None
    ) -> DecisionTable | None:
        """One control step; returns a new table when anything changed, else None. `pool_kv`: each pool's KV state
        since the last tick, when its engines report one."""
        self.now = now
        self.ticks += 1
        self._lengths_cache, self._states_cache, self._vitals_cache = {}, {}, {}
        try:
            return self._tick(now, pool_batch, pool_kv or {})
        finally:
            self._lengths_cache = self._states_cache = self._k_max_cache = self._vitals_cache = None

    def _tick(
        self, now: float, pool_batch: Mapping[str, float | None], pool_kv: Mapping[str, KvReading]
    ) -> DecisionTable | None:
        for name, reading in pool_kv.items():
            if name in self._kv and self.settings.kv_cap:
                self._kv[name].observe(reading, now)
        self._k_max_cache = {}  # the caps hold for the rest of the tick
        self._prefill_lengths()
        changes = self._schedule_pools(pool_batch, now)
        moved = False
        for pool in self.pools:
            members = self._members[pool.name]
            if members:
                moved = self._lookup(pool, members, pool_batch.get(pool.name)) or moved
        explore_changed = self._refresh_explore()
        shares = {name: self.explore_share(name) for name in self._routes}
        explore_changed = explore_changed or shares != self._shares
        self._shares = shares
        if not changes and not explore_changed and not moved:
            return None
        self.version += 1
        for rec in changes:
            self.log.append(replace(rec, version=self.version))
        return self.table(shares)

    def _prefill_lengths(self) -> None:
        """Every pool member's expected lengths for this tick, in one numpy pass (`_lengths` reads them)."""
        if self._lengths_cache is None:
            return
        routes = [rt for pool in self.pools for rt in self._members[pool.name]]
        weight = self.settings.prior_weight
        found = pessimistic_lengths(
            [self.estimator(rt.spec.name, rt.spec.pool) for rt in routes],
            [self._k_max(rt.spec) for rt in routes],
            [self._pool_acceptance.get(rt.spec.pool) for rt in routes],
            weight,
        )
        self._lengths_cache.update((rt.spec.name, lengths) for rt, lengths in zip(routes, found, strict=True))

    def _lengths(self, rt: _RouteRuntime) -> tuple[float, ...]:
        # Asked twice per route each tick (solving, then the lookup at the current load): computed once per tick.
        cache = self._lengths_cache
        if cache is not None and (hit := cache.get(rt.spec.name)) is not None:
            return hit
        est = self.estimator(rt.spec.name, rt.spec.pool)
        prior, weight = self._pool_acceptance.get(rt.spec.pool), self.settings.prior_weight
        out = est.expected_lengths(self._k_max(rt.spec), True, prior, weight)
        if cache is not None:
            cache[rt.spec.name] = out
        return out

    def _load_holds(self, pool: str, batch: float | None) -> bool:
        """Whether the pool's load now is within `_STEADY_LOAD` of the last tick's."""
        before = self._last_batch.get(pool)
        if before is None or batch is None:
            return False
        now = max(1.0, float(round(batch)))
        return max(now, before) <= _STEADY_LOAD * min(now, before)

    def _overridden(self, rt: _RouteRuntime) -> tuple[int, str] | None:
        """The k the kill switch or a pin imposes, with why; None when neither acts."""
        if self.kill_switch:
            return 0, "kill switch"
        pin = rt.admin_pin if rt.admin_pin is not None else rt.spec.pin
        if pin is not None:
            return self._clamp(rt.spec, pin), "pinned by admin" if rt.admin_pin is not None else "pinned in config"
        return None

    def _forced(self, rt: _RouteRuntime, batch: float | None, now: float) -> tuple[int, str] | None:
        s = self.settings
        overridden = self._overridden(rt)
        if overridden is not None:
            return overridden
        if not s.adaptive:
            return self._static[rt.spec.name], "static: engine max k within route bounds"
        if batch is None:
            return self._clamp(rt.spec, s.safe_k), "stale: no fresh load figure for the pool; safe k"
        if rt.last_obs_at is None or now - rt.last_obs_at > s.stale_after_s:
            return self._clamp(rt.spec, s.safe_k), "stale: no recent observations; safe k"
        return None

    def _lookup(self, pool: PoolSpec, members: list[_RouteRuntime], batch: float | None) -> bool:
        """Each route's k at the pool's current load, read from its schedule (what a request dispatched now would
        start with; status, metrics and pools without the plugin use it). Held while paused. True if any moved."""
        b = max(1, round(batch or 1.0))
        self._last_batch[pool.name] = float(b)
        moved = False
        for rt in members:
            if self.paused and self._overridden(rt) is None:
                continue
            k = self._clamp(rt.spec, k_at(rt.schedule, b))
            moved = moved or k != rt.k
            rt.k = k
        cache = self._states_cache or {}
        states = [cache.get(rt.spec.name) or self._state(rt, rt.k, rt.k) for rt in members]
        gains = speedups(states, {rt.spec.name: rt.k for rt in members}, float(b), self._cost[pool.name].predict)
        for rt in members:
            rt.speedup = gains[rt.spec.name]
        return moved

    def _states(
        self, members: Sequence[_RouteRuntime], forced: Mapping[str, tuple[int, str] | None]
    ) -> list[RouteState]:
        states = []
        for rt in members:
            f = forced[rt.spec.name]
            k_lo, k_hi = (f[0], f[0]) if f else (self._k_min(rt.spec), self._k_max(rt.spec))
            states.append(self._state(rt, k_lo, k_hi))
        return states

    def _schedule_pools(self, pool_batch: Mapping[str, float | None], now: float) -> list[DecisionRecord]:
        """The routes' k by batch size, what the engine applies per step; every pool's solved at once
        (controllers/schedule.py). Hysteresis and dwell act on a pool's schedules as a whole (its routes are
        chosen jointly), never on load: the pool keeps its schedules unless the new ones promise `hysteresis`
        more of the objective (goodput, or the TPOT's mean square: schedule.py's `_gain`) at some batch size of the
        grid (or fewer SLO violations), and not within `min_dwell_s` of
        the last change. Kill switch, pins and stale inputs act at once, as constant schedules."""
        plans = []
        for pool in self.pools:
            members = self._members[pool.name]
            if not members:
                continue
            batch = pool_batch.get(pool.name)
            forced = {rt.spec.name: self._forced(rt, batch, now) for rt in members}
            adapt = not self.paused and any(f is None for f in forced.values())
            states = self._states(members, forced) if adapt else []
            previous = {rt.spec.name: rt.schedule for rt in members}
            problem = PoolProblem(states, self._cost[pool.name].predict, previous, self._full_at(pool.name))
            plans.append((pool, members, batch, forced, problem))
        problems = [plan[4] for plan in plans]
        models = [self._cost[plan[0].name] for plan in plans]
        # One pool a tick searches its step-time shape (the one longest due), the rest refit the shape they have:
        # a search costs ~30 solves, so ten pools searching at once would be most of a tick.
        due = [m.pending_search() for m in models]
        turn = max(range(len(models)), key=due.__getitem__) if any(due) else -1
        refit_pools(models, turn)
        step_many = stacked_predictor(models)
        records: list[DecisionRecord] = []
        for (pool, members, batch, forced, problem), (new, gain) in zip(
            plans, plan_schedules(problems, step_many=step_many), strict=True
        ):
            records += self._adopt_schedules(pool, members, batch, forced, problem, new, gain, now)
        return records

    def _adopt_schedules(
        self,
        pool: PoolSpec,
        members: list[_RouteRuntime],
        batch: float | None,
        forced: Mapping[str, tuple[int, str] | None],
        problem: PoolProblem,
        fresh: Mapping[str, Schedule],
        gained: Gain | None,
        now: float,
    ) -> list[DecisionRecord]:
        s = self.settings
        target: dict[str, Schedule] = {name: ((1, f[0]),) for name, f in forced.items() if f is not None}
        why: dict[str, str] = {name: f[1] for name, f in forced.items() if f is not None}
        gain, at = 0.0, 1
        free = [rt for rt in members if forced[rt.spec.name] is None]
        if gained is not None:
            gain, at, fewer = gained.gain, gained.at, gained.fewer_violations
            last = max(rt.schedule_changed_at for rt in free)
            # Hysteresis guards the schedules in force against noise, but drafts that promise nothing have no claim
            # to that guard: the step-time model leaves out what drafting costs beyond verify time (the drafter's
            # own compute, KV slots) and a drafter that proposes nothing now may propose again later, so schedules
            # that draft less everywhere are taken whenever they gain at all. Moving up still needs the margin:
            # no flapping.
            past = gain >= s.hysteresis or fewer
            if not (past or (gain > 0.0 and _drafts_less([(rt.schedule, fresh[rt.spec.name]) for rt in free]))):
                note = f"held: best alternative gains {gain:.1%} (hysteresis {s.hysteresis:.0%})"
            else:
                bounded = {rt.spec.name: _bounded(rt.schedule, fresh[rt.spec.name], s.max_step) for rt in free}
                dwelling = now - last < s.min_dwell_s
                # A route's first move leaves the schedule it started with (safe k) on its first evidence: nothing to
                # flap back from, so a plan that makes one goes ahead within the pool's dwell (measured: on the
                # simulator's low-load scenario the chat route's first requests came back after the code route had
                # moved, and it waited out that dwell at k = 0; those requests were the run's p99).
                first = sorted(rt.spec.name for rt in free if not rt.moved and bounded[rt.spec.name] != rt.schedule)
                # Nor does the dwell hold schedules drawn on a step-time shape the pool's model has since left, once
                # the load holds: a search moves the shape only on evidence past its own margins
                # (controllers/cost_model.py), not on noise, but while the load steps its intervals average the ramp
                # and a shape found then may not last (measured in the simulator: on gpu-published the schedules
                # waited out the dwell at k = 3 for 4 s after a load step, the fit having found drafts cheaper, where
                # k = 5 was due; on bursts a knee of 32 found 5 s into a burst drafted k = 1 at batch 150-250 until
                # the next search put it back).
                reshapes = self._cost[pool.name].reshapes
                reshaped = reshapes != self._reshapes_seen.get(pool.name, 0) and self._load_holds(pool.name, batch)
                if dwelling and not first and not reshaped:
                    note = f"held: changed {now - last:.0f}s ago (dwell {s.min_dwell_s:.0f}s)"
                else:
                    note = self._gain_note(pool.name, gain, at) + ("" if past else ", fewer drafts")
                    if dwelling:
                        note += (
                            f" (first move of {', '.join(first)}: within the dwell)"
                            if first
                            else " (step-time shape refitted: within the dwell)"
                        )
                    target.update(bounded)
                    self._reshapes_seen[pool.name] = reshapes
            why.update({rt.spec.name: note for rt in free})
        elif self.paused:
            why.update({rt.spec.name: "held: controller paused" for rt in free})
        b = max(1, round(batch or 1.0))
        kv = self._kv[pool.name]
        records = []
        for rt in members:
            new = target.get(rt.spec.name, rt.schedule)
            if kv.cap is not None and _capped(new, kv.cap) != new:
                # A safety rule, like the kill switch: at once, past hysteresis, dwell and max step.
                new = _capped(new, kv.cap)
                why[rt.spec.name] = f"KV pressure: k <= {kv.cap} ({kv.reason})"
            rt.reason = why.get(rt.spec.name, rt.reason)
            if new == rt.schedule:
                continue
            changes = self.estimator(rt.spec.name, rt.spec.pool).changes
            # A decision that follows a step change in the route's acceptance says so: the evidence before it was
            # dropped, which is why the schedule moved faster than the half-life allows.
            step_change = "; after a step change in acceptance" if changes != rt.step_changes_logged else ""
            rt.step_changes_logged = changes
            records.append(
                DecisionRecord(
                    now,
                    0,
                    rt.spec.name,
                    k_at(rt.schedule, b),
                    k_at(new, b),
                    f"schedule: {why.get(rt.spec.name, '')}{step_change}",
                    rt.speedup,
                    MappingProxyType(
                        {
                            "pool": pool.name,
                            "batch": b,
                            "schedule": encode(new),
                            "old_schedule": encode(rt.schedule),
                            # The objective's ratio, new over old (under "tpot" the TPOT's mean square's, old over
                            # new; the name predates `objective`: kept for readers).
                            "goodput_gain": round(1 + gain, 4),
                            "gain_at_batch": at,
                            "kv_cap": kv.cap,
                            "acceptance_step_changes": changes,
                        }
                    ),
                )
            )
            rt.schedule = new
            rt.schedule_changed_at = now
            rt.moved = rt.moved or forced[rt.spec.name] is None
        return records

    def _refresh_explore(self) -> bool:
        changed = False
        found = self._exploration_pays()
        self._pays = {name for name, (_, pays, _) in found.items() if pays}
        self._futile = set(found) - self._pays
        for name, rt in self._routes.items():
            pinned = rt.admin_pin is not None or rt.spec.pin is not None
            top = self._k_max(rt.spec)
            off = self.kill_switch or pinned or not self.settings.adaptive or self.settings.explore_share <= 0
            explore: int | None
            explore, _, until = found.get(name, (rt.k + 1, False, None))
            if off or rt.k >= top:
                explore, until = None, None
            if self._explore.get(name, -1) != explore or self._explore_until.get(name) != until:
                self._explore[name] = explore
                self._explore_until[name] = until
                changed = True
        return changed

    def _exploration_pays(self) -> dict[str, tuple[int, bool, int | None]]:
        """Per route below its top k, at its pool's load of the last tick (1 before the first: nothing in flight
        yet): the largest k at which one of its requests could raise the pool's goodput if the route's acceptance
        were at the upper end of its interval (every draft accepted where nothing is known), True, and the largest
        batch of 1, 2, 4 and 8 times that load at which it still could (the next tick looks again); one more than the
        route's k, False and twice that load (`_FUTILE_REACH`) when none could. Past a knee an explorer's drafts slow
        every request of the batch: where even that reading says they cannot pay, exploring at the top k buys evidence
        no schedule could use now, while one more draft keeps the next position measured (a route must still see its
        acceptance come back); what it measures does not depend on the batch, so past twice the load it was judged at
        (a ramp within its life) it runs its route's schedule. Measured in the simulator: exploration was all of
        specgate's loss to k = 0 under high load, explorers that kept the top k through a load ramp cost high-load 2%
        (1.018 -> 1.039), and those one draft up, kept at any batch, ~0.1% more on high-load and load-ramp
        (docs/controller.md, session 29)."""
        out: dict[str, tuple[int, bool, int | None]] = {}
        for pool in self.pools:
            batch = self._last_batch.get(pool.name, 1.0)
            members = self._members[pool.name]
            if not members:
                continue
            cost = self._cost[pool.name]
            # Until drafts past the knee have shown the draft cost, exploring is judged at the cheapest one a shape
            # search could find (`StepCostModel.optimistic_predict`): a prior that prices drafts too dear keeps the
            # schedules at k = 0 past its knee, and only an explorer's drafts there could show it wrong (measured in
            # the simulator, gpu-published: the prior's c = 1 against the truth's 0.33 held k = 0 for 30 s after its
            # load step in one seed of eight, 1.186x the best baseline; judged so, 1.079x).
            predict = cost.optimistic_predict() if cost.draft_cost_unseen() else cost.predict
            vitals = [self._vitals(rt) for rt in members]
            weights, rates = [v[0] for v in vitals], [v[1] for v in vitals]
            kbar, kmax = _mix(weights, rates, [rt.k for rt in members])
            if not sum(weights):  # nothing observed yet: every route counts alike (not a pool that makes no tokens)
                weights = [1.0] * len(members)
            total = sum(weights)
            lengths = [self._lengths(rt) for rt in members]
            tokens = sum(w * ls[min(rt.k, len(ls) - 1)] for w, ls, rt in zip(weights, lengths, members, strict=True))
            tokens /= total

            mix = (tokens, kbar, kmax)
            to_beat = _mix_rates(predict, mix)
            for rt, q, ls in zip(members, rates, lengths, strict=True):
                top = self._k_max(rt.spec)
                if rt.k >= top:
                    continue
                best = self.estimator(rt.spec.name, pool.name).optimistic_lengths(top)
                here = ls[min(rt.k, len(ls) - 1)]
                out[rt.spec.name] = (rt.k + 1, False, self._futile_reach(rt, batch))
                for k in range(top, rt.k + 1, -1):
                    explorer = (k, rt.k, best[k] - here, q)
                    if _explorer_pays(predict, mix, batch, explorer, to_beat):
                        until = next(
                            (
                                int(batch * 2**i)
                                for i in range(3)
                                if not _explorer_pays(predict, mix, batch * 2 ** (i + 1), explorer, to_beat)
                            ),
                            int(batch * 8),
                        )
                        out[rt.spec.name] = (k, True, until)
                        break
        return out

    def _futile_reach(self, rt: _RouteRuntime, batch: float) -> int:
        """Where a route's explorers one draft above its k stop: twice the pool's load (`_FUTILE_REACH`), the one
        set before while it stays within `_STEADY_LOAD` of that (each change is a new decision table; a busy pool's
        load moves by a few requests every tick)."""
        reach = batch * _FUTILE_REACH
        before = self._explore_until.get(rt.spec.name)
        if (
            rt.spec.name in self._futile
            and before is not None
            and reach / _STEADY_LOAD <= before <= reach * _STEADY_LOAD
        ):
            return before
        return int(reach)

    def explore_share(self, name: str) -> float:
        return self._exploring(name)[0]

    def _exploring(self, name: str) -> tuple[float, str]:
        """The share of the route's requests that explore, and which rule set it (route status shows it): "cold
        start", "after a step change", "futile: requests per half-life" or "share"."""
        rt = self._routes[name]
        est = self.estimator(name, rt.spec.pool)
        if est.evidence(1) < self.settings.cold_start_steps:
            paying = self.settings.cold_start_paying_share if name in self._pays else 0.0
            return max(self.settings.explore_share, self.settings.cold_start_share, paying), "cold start"
        if name in self._pays and self._relearning(rt, est):
            return max(self.settings.explore_share, self.settings.cold_start_paying_share), "after a step change"
        share, half_life = self.settings.explore_share, self.settings.half_life_s
        if self.settings.explore_futile_requests > 0 and half_life and name in self._futile:
            futile = self.settings.explore_futile_requests / half_life  # requests a second
            rate = self._request_rate(rt)
            # Two significant digits: the rate drifts a little every tick, and each change is a new table.
            if rate > 0 and (by_rate := float(f"{futile / rate:.2g}")) < share:
                return by_rate, "futile: requests per half-life"
        return share, "share"

    def _relearning(self, rt: _RouteRuntime, est: AcceptanceEstimator) -> bool:
        """Whether a step change in the route's acceptance (`change_z`) dropped its evidence within the last
        `recent_half_life_s` and the position above its k has not been measured `cold_start_steps` times since: the
        positions above k are as unknown as a new route's. Measured in the simulator's acceptance-drift scenario: when
        acceptance came back, position 1 (measured by every request at k = 1) showed it at once, but the positions
        above waited ~12 s for the usual share's few explorers, at k = 1 where k = 4 was due."""
        changed = est.changed_at
        if changed is None or self.now - changed > self.settings.recent_half_life_s:
            return False
        return est.evidence(min(rt.k + 1, est.max_k)) < self.settings.cold_start_steps

    def _request_rate(self, rt: _RouteRuntime) -> float:
        """The route's finished requests per second (`_vitals`)."""
        return self._vitals(rt)[2]

    def table(self, shares: Mapping[str, float] | None = None) -> DecisionTable:
        """The decisions in force. `shares`: each route's explore share, where the caller has just computed them."""
        routes = {
            name: RouteDecision(
                rt.k,
                rt.reason,
                self._explore.get(name),
                self.explore_share(name) if shares is None else shares[name],
                rt.schedule if self.settings.adaptive else None,
                self._explore_until.get(name),
            )
            for name, rt in self._routes.items()
        }
        return DecisionTable(self.version, MappingProxyType(routes), fallback_k=self.settings.safe_k)

    def break_even(self, name: str) -> float | None:
        """Per-position acceptance below which the route's speculation (at its current k, or its largest when
        off) stops paying at the pool's last batch size, if the whole batch ran like it. None without k."""
        rt = self._routes.get(name)
        if rt is None:
            return None
        k = rt.k or self._k_max(rt.spec)
        if k <= 0:
            return None
        cost = self._cost[rt.spec.pool]
        b = self._last_batch.get(rt.spec.pool, 1.0)
        return break_even_acceptance(k, cost.predict(b, float(k), float(k)) / cost.predict(b, 0.0, 0.0))

    def kv_cap(self, pool: str) -> int:
        """The pool's largest k under its KV-pressure cap (its max k when no cap holds)."""
        kv = self._kv[pool]
        return kv.max_k if kv.cap is None else kv.cap

    def route_pool(self, name: str) -> str:
        """The pool whose acceptance and step time the route is judged on."""
        return self._routes[name].spec.pool

    def route_status(self, name: str) -> dict[str, Any]:
        rt = self._routes[name]
        est = self.estimator(name, rt.spec.pool)
        last = next((r for r in reversed(self.log) if r.route == name), None)
        pool_total = sum(self._weight(o, self.now) for o in self._routes.values() if o.spec.pool == rt.spec.pool)
        explore_share, explore_rule = self._exploring(name)
        return {
            "k": rt.k,
            "pool": rt.spec.pool,
            "schedule": None if not self.settings.adaptive else [list(p) for p in rt.schedule],
            # The route's share of its pool's batch (engine steps of its recent requests).
            "batch_share": round(self._weight(rt, self.now) / pool_total, 4) if pool_total else None,
            "bounds": {"min": rt.spec.k_min, "max": rt.spec.k_max, "pool_max": self._k_max(rt.spec)},
            # The pool's KV-pressure cap on k while one holds (controllers/kv_pressure.py), and why.
            "kv_cap": self._kv[rt.spec.pool].cap,
            "kv_reason": self._kv[rt.spec.pool].reason or None,
            "pin": rt.admin_pin if rt.admin_pin is not None else rt.spec.pin,
            "pinned_by": "admin" if rt.admin_pin is not None else ("config" if rt.spec.pin is not None else None),
            "reason": rt.reason,
            "expected_speedup": round(rt.speedup, 4),
            "acceptance": {
                "expected_length_at_k": round(est.expected_length(rt.k, pessimistic=False), 4),
                "expected_length_at_k_lower": round(est.expected_length(rt.k, pessimistic=True), 4),
                "position_rates": [None if a is None else round(a, 4) for a in est.position_rates()],
                "evidence_steps": round(est.evidence(1), 1),
                # Share of the steps that could draft in which the drafter proposed anything (n-gram: text repeats).
                "proposal_rate": round(est.proposal_rate(), 4),
                # Step changes seen in the acceptance (controller.change_z): each dropped the evidence before it.
                "step_changes": est.changes,
                # The pool's own (engine counters, all routes): the route borrows `prior_weight` trials from it.
                "pool_evidence_steps": round(self._pool_acceptance[rt.spec.pool].evidence(1), 1)
                if rt.spec.pool in self._pool_acceptance
                else None,
            },
            "explore_k": self._explore.get(name),
            # Explorers run explore_k up to this batch size and the route's schedule past it (null: at any size).
            "explore_until": self._explore_until.get(name),
            # The share of its requests that explore, and its request rate (finished requests per second, decayed):
            # where exploring cannot pay, a busy route explores `explore_futile_requests` per half-life instead.
            "explore_share": explore_share,
            # Which rule set it: "cold start", "after a step change", "futile: requests per half-life", "share".
            "explore_rule": explore_rule,
            "request_rate": round(self._request_rate(rt), 3),
            "last_observation_age_s": None if rt.last_obs_at is None else round(self.now - rt.last_obs_at, 2),
            "last_decision": None
            if last is None
            else {
                "at": last.at,
                "version": last.version,
                "old_k": last.old_k,
                "new_k": last.new_k,
                "reason": last.reason,
                "expected_speedup": round(last.expected_speedup, 4),
                "inputs": dict(last.inputs),
            },
        }


def _explorer_pays(
    predict: Callable[[float, float, float], float],
    mix: tuple[float, float, float],
    batch: float,
    explorer: tuple[int, int, float, float],
    rates: Callable[[float], float],
) -> bool:
    """Whether one request at k instead of the route's k raises a pool's goodput at `batch`: `mix` = (tokens per
    request per step, mean drafts, largest k) of the pool now, `explorer` = (k, the route's k, tokens a step it
    gains, the route's proposal rate), `rates` the mix's own by batch size (`_mix_rates`)."""
    tokens, kbar, kmax = mix
    k, at, gained, q = explorer
    more = gained / batch  # one request of the batch, per request
    return (tokens + more) / predict(batch, kbar + q * (k - at) / batch, max(kmax, k)) > rates(batch)


def _mix_rates(
    predict: Callable[[float, float, float], float], mix: tuple[float, float, float]
) -> Callable[[float], float]:
    """Tokens per request per second of a pool's mix by batch size, what an explorer must beat (`_explorer_pays`),
    each batch size's computed once: every route of the pool asks at the same few."""
    tokens, kbar, kmax = mix
    seen: dict[float, float] = {}

    def rate(batch: float) -> float:
        hit = seen.get(batch)
        if hit is None:
            hit = seen[batch] = tokens / predict(batch, kbar, kmax)
        return hit

    return rate
