"""The adaptive speculation controller: observations in, a decision table out, every tick. No I/O.

Each tick, per pool: estimate each route's acceptance (controllers/estimator.py) and the pool's step time
(controllers/cost_model.py), pick the goodput-maximising k per route jointly (controllers/policy.py),
then apply the safety rules, in this order:

1. kill switch: k = 0 everywhere;  2. pins (admin, then config) are applied as they are;
   While paused, only these two act; every other k holds.
3. stale inputs (no fresh load figure for the pool, or no observation of the route for `stale_after_s`):
   the configured safe k;  4. hysteresis: keep the current ks unless the new ones promise at least
   `hysteresis` more goodput;  5. minimum dwell time between two changes of a route;
6. bounded change: at most `max_step` per tick;  7. k always within the route's bounds and the pool's max.

A small `explore_share` of the requests of a route below its max k run at its max k, so the acceptance
at the positions it does not use stays known (otherwise a route switched off could never come back).
The same class runs in the gateway and in the simulator.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from specgate.controllers.cost_model import StepCostModel, StepSample
from specgate.controllers.decisions import DecisionTable, RouteDecision
from specgate.controllers.estimator import AcceptanceEstimator
from specgate.controllers.observations import Observation
from specgate.controllers.policy import Assignment, RouteState, break_even_acceptance, evaluate, optimise
from specgate.controllers.schedule import Schedule, batch_table, route_schedules

__all__ = ["ControllerSettings", "DecisionRecord", "PoolSpec", "RouteSpec", "SpeculationController"]


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    tick_s: float = 2.0
    half_life_s: float = 60.0
    hysteresis: float = 0.03
    min_dwell_s: float = 10.0
    max_step: int = 2
    explore_share: float = 0.03
    stale_after_s: float = 60.0
    safe_k: int = 0
    z: float = 1.28
    decision_log_size: int = 500
    # Until a route has this much evidence (verify steps at position 1), it explores at a higher share.
    cold_start_steps: float = 200.0
    cold_start_share: float = 0.25
    # False: k stays as configured (engine max within bounds); only pins and the kill switch act.
    adaptive: bool = True


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


@dataclass
class _RouteRuntime:
    spec: RouteSpec
    k: int
    reason: str = "initial"
    changed_at: float = float("-inf")
    last_obs_at: float | None = None
    weight: float = 0.0
    speedup: float = 1.0
    admin_pin: int | None = None


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
    between steps, else its whole histogram (with the undrafted steps) at the k it was dispatched with."""
    spec = obs.spec
    if spec is None:
        return []
    if spec.by_k:
        return [(hist, k) for k, hist in spec.by_k if k > 0]
    return [(with_undrafted_steps(obs), obs.k_applied)] if obs.k_applied > 0 else []


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
    _estimators: dict[tuple[str, str], AcceptanceEstimator] = field(init=False)
    _cost: dict[str, StepCostModel] = field(init=False)
    _explore: dict[str, int | None] = field(init=False)
    _static: dict[str, int] = field(init=False)
    _shares: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self._pools = {p.name: p for p in self.pools}
        self._routes = {}
        for r in self.routes:
            if r.pin is not None:
                start, why = r.pin, "pinned in config"
            elif self.settings.adaptive:
                start, why = self.settings.safe_k, "initial: safe k until acceptance is measured"
            else:
                start, why = r.k_max, "static: engine max k within route bounds"
            self._routes[r.name] = _RouteRuntime(r, self._clamp(r, start), why)
        self._static = {name: rt.k for name, rt in self._routes.items()}
        self._estimators = {}
        self._cost = {p.name: StepCostModel(p.prior) for p in self.pools}
        self._last_batch: dict[str, float] = {}
        self._explore = {}
        self.log = deque(maxlen=self.settings.decision_log_size)
        self._refresh_explore()
        self._shares = {name: self.explore_share(name) for name in self._routes}

    # -- bounds -------------------------------------------------------------------------------------
    def _k_max(self, r: RouteSpec) -> int:
        pool = self._pools.get(r.pool)
        return min(r.k_max, pool.max_k if pool else 0)

    def _k_min(self, r: RouteSpec) -> int:
        return min(r.k_min, self._k_max(r))

    def _clamp(self, r: RouteSpec, k: int) -> int:
        return max(self._k_min(r), min(self._k_max(r), k))

    def estimator(self, route: str, pool: str) -> AcceptanceEstimator:
        key = (route, pool)
        est = self._estimators.get(key)
        if est is None:
            max_k = self._pools[pool].max_k if pool in self._pools else 16
            est = self._estimators[key] = AcceptanceEstimator(max_k, self.settings.half_life_s, self.settings.z)
        return est

    def cost_model(self, pool: str) -> StepCostModel:
        return self._cost[pool]

    # -- inputs -------------------------------------------------------------------------------------
    def observe(self, obs: Observation, now: float) -> None:
        rt = self._routes.get(obs.route)
        if rt is None or obs.pool not in self._pools:
            return
        rt.last_obs_at = now
        half = 0.5 ** (self.settings.tick_s / self.settings.half_life_s) if self.settings.half_life_s else 0
        rt.weight = rt.weight * half + max(1, obs.completion_tokens)
        spec = obs.spec
        for hist, k in acceptance_evidence(obs):
            self.estimator(obs.route, obs.pool).observe(hist, k, now)
        steps = obs.completion_tokens - 1 - (spec.accepted_tokens if spec else 0)
        if steps > 0 and (spec is not None or obs.k_applied == 0):
            # End-to-end time over all steps (prefill as one) when known; it includes queueing, which errs on
            # the side of caution. The step time depends on the whole batch's drafts: use the pool's mix.
            step_s = obs.e2e_s / (steps + 1) if obs.e2e_s else (obs.decode_s / steps if obs.decode_s else None)
            if step_s:
                kbar, kmax = self._pool_mix(obs.pool)
                self._cost[obs.pool].update(StepSample(obs.batch_at_dispatch + 1, kbar, kmax, step_s))

    def _pool_mix(self, pool: str) -> tuple[float, float]:
        members = [rt for rt in self._routes.values() if rt.spec.pool == pool and rt.weight > 0]
        total = sum(rt.weight for rt in members)
        if not total:
            return 0.0, 0.0
        return sum(rt.weight * rt.k for rt in members) / total, float(max(rt.k for rt in members))

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
            rt.reason = f"adopted: {decision.reason}"
            rt.changed_at = now
            if rt.last_obs_at is None:
                rt.last_obs_at = now

    def route_names(self) -> list[str]:
        return list(self._routes)

    def schedules(self, pool: str) -> tuple[Mapping[str, Schedule], list[tuple[int, int, int]]]:
        """What the measurements imply at every batch size for `pool`: each route's k schedule, and the one
        route-blind table a stock engine could take (`num_speculative_tokens_per_batch_size`). Pins and bounds
        hold; the kill switch makes both all-zero."""
        members = [rt for rt in self._routes.values() if rt.spec.pool == pool]
        states = []
        for rt in members:
            pin = rt.admin_pin if rt.admin_pin is not None else rt.spec.pin
            lo, hi = (
                (0, 0)
                if self.kill_switch
                else (
                    (self._clamp(rt.spec, pin),) * 2
                    if pin is not None
                    else (self._k_min(rt.spec), self._k_max(rt.spec))
                )
            )
            states.append(RouteState(rt.spec.name, rt.weight or 1e-6, lo, hi, self._lengths(rt), rt.spec.tpot_slo_s))
        if not states:
            return {}, []
        max_k = 0 if self.kill_switch else self._pools[pool].max_k
        return route_schedules(states, self._cost[pool].predict), batch_table(states, self._cost[pool].predict, max_k)

    # -- the tick -----------------------------------------------------------------------------------
    def tick(self, now: float, pool_batch: Mapping[str, float | None]) -> DecisionTable | None:
        """One control step; returns a new table when anything changed, else None."""
        self.now = now
        self.ticks += 1
        changes: list[DecisionRecord] = []
        for pool in self.pools:
            members = [rt for rt in self._routes.values() if rt.spec.pool == pool.name]
            if members:
                changes += self._tick_pool(pool, members, pool_batch.get(pool.name), now)
        explore_changed = self._refresh_explore()
        shares = {name: self.explore_share(name) for name in self._routes}
        explore_changed = explore_changed or shares != self._shares
        self._shares = shares
        if not changes and not explore_changed:
            return None
        self.version += 1
        for rec in changes:
            self.log.append(replace(rec, version=self.version))
        return self.table()

    def _lengths(self, rt: _RouteRuntime) -> tuple[float, ...]:
        est = self.estimator(rt.spec.name, rt.spec.pool)
        return tuple(est.expected_length(k, pessimistic=True) for k in range(self._k_max(rt.spec) + 1))

    def _forced(self, rt: _RouteRuntime, batch: float | None, now: float) -> tuple[int, str] | None:
        s = self.settings
        if self.kill_switch:
            return 0, "kill switch"
        pin = rt.admin_pin if rt.admin_pin is not None else rt.spec.pin
        if pin is not None:
            return self._clamp(rt.spec, pin), "pinned by admin" if rt.admin_pin is not None else "pinned in config"
        if not s.adaptive:
            return self._static[rt.spec.name], "static: engine max k within route bounds"
        if batch is None:
            return self._clamp(rt.spec, s.safe_k), "stale: no fresh load figure for the pool; safe k"
        if rt.last_obs_at is None or now - rt.last_obs_at > s.stale_after_s:
            return self._clamp(rt.spec, s.safe_k), "stale: no recent observations; safe k"
        return None

    def _tick_pool(
        self, pool: PoolSpec, members: list[_RouteRuntime], batch: float | None, now: float
    ) -> list[DecisionRecord]:
        s = self.settings
        forced = {rt.spec.name: self._forced(rt, batch, now) for rt in members}
        cost = self._cost[pool.name]
        states = []
        for rt in members:
            f = forced[rt.spec.name]
            lengths = self._lengths(rt)
            k_lo, k_hi = (f[0], f[0]) if f else (self._k_min(rt.spec), self._k_max(rt.spec))
            states.append(RouteState(rt.spec.name, rt.weight or 1e-6, k_lo, k_hi, lengths, rt.spec.tpot_slo_s))
        b = max(1.0, batch or 1.0)
        self._last_batch[pool.name] = b
        current = {rt.spec.name: min(max(rt.k, st.k_min), st.k_max) for rt, st in zip(members, states, strict=True)}
        now_eval = evaluate(states, current, b, cost.predict)
        best = optimise(states, b, cost.predict, start=current)
        keep_current = not best.goodput > now_eval.goodput * (1 + s.hysteresis) and not (
            best.slo_violation < now_eval.slo_violation - 1e-9
        )
        records = []
        for rt in members:
            name = rt.spec.name
            f = forced[name]
            if f is not None:
                target, reason = f
            elif self.paused:
                target, reason = rt.k, "held: controller paused"
            elif keep_current:
                gain = best.goodput / max(now_eval.goodput, 1e-12) - 1
                target, reason = rt.k, f"held: best alternative gains {gain:.1%} (hysteresis {s.hysteresis:.0%})"
            elif now - rt.changed_at < s.min_dwell_s:
                target, reason = rt.k, f"held: changed {now - rt.changed_at:.0f}s ago (dwell {s.min_dwell_s:.0f}s)"
            else:
                target = best.ks[name]
                step = max(-s.max_step, min(s.max_step, target - rt.k))
                target = self._clamp(rt.spec, rt.k + step)
                reason = self._reason(best, now_eval, name, b)
            final = evaluate(states, {**current, name: target}, b, cost.predict)
            rt.speedup = final.speedup[name]
            if target != rt.k:
                records.append(
                    DecisionRecord(
                        now,
                        0,
                        name,
                        rt.k,
                        target,
                        reason,
                        rt.speedup,
                        MappingProxyType(
                            {
                                "batch": round(b, 2),
                                "pool": pool.name,
                                "expected_length": round(
                                    states[members.index(rt)].lengths[
                                        min(target, len(states[members.index(rt)].lengths) - 1)
                                    ],
                                    3,
                                ),
                                "step_s": round(final.step_s, 6),
                                "goodput_gain": round(best.goodput / max(now_eval.goodput, 1e-12), 4),
                            }
                        ),
                    )
                )
                rt.k = target
                rt.changed_at = now
            rt.reason = reason
        return records

    @staticmethod
    def _reason(best: Assignment, current: Assignment, name: str, batch: float) -> str:
        gain = best.goodput / max(current.goodput, 1e-12) - 1
        return (
            f"goodput +{gain:.1%} at batch {batch:.1f}: expected speed-up {best.speedup[name]:.2f}x, "
            f"TPOT {best.tpot_s[name] * 1000:.1f} ms"
        )

    def _refresh_explore(self) -> bool:
        changed = False
        for name, rt in self._routes.items():
            pinned = rt.admin_pin is not None or rt.spec.pin is not None
            top = self._k_max(rt.spec)
            off = self.kill_switch or pinned or not self.settings.adaptive or self.settings.explore_share <= 0
            explore = None if off or rt.k >= top else top
            if self._explore.get(name, -1) != explore:
                self._explore[name] = explore
                changed = True
        return changed

    def explore_share(self, name: str) -> float:
        rt = self._routes[name]
        cold = self.estimator(name, rt.spec.pool).evidence(1) < self.settings.cold_start_steps
        return max(self.settings.explore_share, self.settings.cold_start_share) if cold else self.settings.explore_share

    def table(self) -> DecisionTable:
        routes = {
            name: RouteDecision(rt.k, rt.reason, self._explore.get(name), self.explore_share(name))
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

    def route_status(self, name: str) -> dict[str, Any]:
        rt = self._routes[name]
        est = self.estimator(name, rt.spec.pool)
        last = next((r for r in reversed(self.log) if r.route == name), None)
        return {
            "k": rt.k,
            "pool": rt.spec.pool,
            "bounds": {"min": rt.spec.k_min, "max": rt.spec.k_max, "pool_max": self._k_max(rt.spec)},
            "pin": rt.admin_pin if rt.admin_pin is not None else rt.spec.pin,
            "pinned_by": "admin" if rt.admin_pin is not None else ("config" if rt.spec.pin is not None else None),
            "reason": rt.reason,
            "expected_speedup": round(rt.speedup, 4),
            "acceptance": {
                "expected_length_at_k": round(est.expected_length(rt.k, pessimistic=False), 4),
                "expected_length_at_k_lower": round(est.expected_length(rt.k, pessimistic=True), 4),
                "position_rates": [None if a is None else round(a, 4) for a in est.position_rates()],
                "evidence_steps": round(est.evidence(1), 1),
            },
            "explore_k": self._explore.get(name),
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
