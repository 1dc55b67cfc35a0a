"""Runs the controller inside the gateway: every tick, feed it the observations and pool loads,
publish the new decision table, and export what it decided.

The request path reads `Dispatcher.table` (one attribute read); this loop replaces it wholesale, so there
is no lock between them. A failing tick is logged and counted; the last table stays in force.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

from specgate.backends.pool import PoolSet
from specgate.backends.vllm_metrics import StepDelta
from specgate.backends.webhooks import Alert
from specgate.controllers.controller import SpeculationController
from specgate.controllers.decisions import DecisionTable
from specgate.controllers.drift import DriftEvent, first_position
from specgate.controllers.kv_pressure import KvReading
from specgate.controllers.observations import Observation, ObservationSink
from specgate.controllers.picker import running_requests
from specgate.controllers.route_check import RouteAdvice, RouteSpread, advise
from specgate.controllers.schedule import BATCH_GRID
from specgate.controllers.speedup import SpeedupMeter
from specgate.runtime.alerts import AlertDispatcher
from specgate.runtime.coordination import Coordinator, LeaderState, Turn
from specgate.runtime.dispatch import Dispatcher
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.settings import build_controller, build_drift_monitor

from specgate.config import GatewayConfig

__all__ = ["ControlLoop"]


def _drafter(config: GatewayConfig, controller: SpeculationController, route: str) -> tuple[str, str, int] | None:
    """What drafts for the route: its pool, the pool's method and max k (None: the pool is not in `config`)."""
    pool = controller.route_pool(route)
    spec = next((p.speculation for p in config.pools if p.name == pool), None)
    return None if spec is None else (pool, spec.method, spec.max_k)


def _first_position(obs: Observation) -> tuple[int, int]:
    """Position-1 trials and passes of the request's drafted steps (its per-step record when it has one)."""
    spec = obs.spec
    if spec is None:
        return 0, 0
    if spec.by_k:
        groups = [first_position(hist) for k, hist in spec.by_k if k > 0]
        return sum(g[0] for g in groups), sum(g[1] for g in groups)
    return first_position(spec.histogram)


log = logging.getLogger("specgate.controller")


class ControlLoop:
    def __init__(
        self,
        config: GatewayConfig,
        pools: PoolSet,
        sink: ObservationSink,
        dispatcher: Dispatcher,
        metrics: GatewayMetrics,
        coordinator: Coordinator,
        alerts: AlertDispatcher | None = None,
    ) -> None:
        self.config = config
        self.pools = pools
        self.sink = sink
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.controller = build_controller(config)
        self.alerts = alerts
        self.drift = build_drift_monitor(config, self.controller.route_names())
        self._firing: dict[str, Alert] = {}
        self._break_even: dict[str, float | None] = {}
        self.speedup = SpeedupMeter()
        # Per route: how alike its requests accept drafts (controllers/route_check.py), for split / merge advice.
        self.spreads: dict[str, RouteSpread] = {}
        # Per pool since the last tick: the highest KV cache use an endpoint reported, and preemptions.
        self._kv: dict[str, KvReading] = {}
        self._task: asyncio.Task[None] | None = None
        # Shares observations and decisions with other replicas (runtime/coordination.py).
        self.coordinator = coordinator
        self.last_tick_at: float | None = None
        self.publish(self.controller.table())

    def reconfigure(self, config: GatewayConfig, dispatcher: Dispatcher, alerts: AlertDispatcher | None) -> None:
        """Serve a reloaded config: a controller for its routes and pools that goes on from the old one's state
        (SpeculationController.carry_from), the drift detectors of the routes that remain, and its first table on
        the new dispatcher. Synchronous, so no tick or request sees half of it. A drift alert firing for a route that
        is gone (or with drift detection now off) is resolved: nothing would ever resolve it otherwise."""
        controller = build_controller(config)
        drift = build_drift_monitor(config, controller.route_names())
        # Built before anything is taken over: a failure above leaves this loop as it was.
        controller.carry_from(self.controller)
        redrafted = {
            name
            for name in controller.route_names()
            if name in self.controller.route_names()
            and _drafter(config, controller, name) != _drafter(self.config, self.controller, name)
        }
        if drift is not None and self.drift is not None:
            drift.carry_from(self.drift, fresh=redrafted)
        # A follower goes on serving the leader's table (its own controller never ticks: its table is stale) until
        # the leader publishes the next one.
        table = self.dispatcher.table if self.follower else controller.table()
        self.config, self.controller, self.drift, self.dispatcher, self.alerts = (
            config,
            controller,
            drift,
            dispatcher,
            alerts,
        )
        kept = set(controller.route_names()) - redrafted
        self._break_even = {name: be for name, be in self._break_even.items() if name in kept}
        self.spreads = {name: s for name, s in self.spreads.items() if name in kept}
        for route in [r for r in self._firing if drift is None or r not in drift.detectors]:
            self._retire_alert(route, "The route or its drift detection was removed by a config reload.")
        for route in [r for r in self._firing if r in redrafted]:
            self._retire_alert(
                route, "A config reload gave the route another drafter (pool, method or k): its baseline starts over."
            )
        self.publish(table)

    def _retire_alert(self, route: str, why: str) -> None:
        fired = self._firing.pop(route)
        alert = fired.resolved(time.time(), {**fired.annotations, "resolution": why})
        self.metrics.alerts_fired.labels(alert.name, alert.status).inc()
        log.warning("drift alert", extra={"route": route, "status": alert.status, "reason": "config reloaded"})
        if self.alerts is not None:
            self.alerts.publish(alert)

    def start(self) -> None:
        # Runs in static mode too: pins, the kill switch and the metrics still go through the tick.
        self._task = asyncio.create_task(self._run(), name="controller")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.config.controller.tick_s)
            try:
                await self.step()
            except Exception:
                self.metrics.controller_errors.inc()
                log.exception("controller tick failed; the last decision table stays in force")

    @property
    def follower(self) -> bool:
        """Another replica decides; this one serves the leader's table."""
        return self.coordinator.info.role == "follower"

    async def step(self) -> None:
        """One tick as the coordinator says: lead (tick, then publish to the others), follow, or carry on alone."""
        turn = await self.coordinator.begin(self.sink.drain())
        if turn.role == "follower":
            self._follow(turn)
            return
        now = time.monotonic()
        if turn.adopt_current:
            self.controller.adopt(self.dispatcher.table, now)
        elif turn.adopt is not None:
            self.controller.adopt(turn.adopt, now)
        if turn.admin is not None:
            self.apply_admin(turn.admin)
        self.tick(list(turn.observations))
        if turn.role == "leader":
            await self.coordinator.commit(self.leader_state())

    def _follow(self, turn: Turn) -> None:
        # By content, not version: a table of this replica's own (before it first followed) can share the leader's.
        if turn.table is not None and turn.table != self.dispatcher.table:
            self.publish(turn.table)
        self.last_tick_at = time.time()
        self.metrics.last_tick.set(self.last_tick_at)

    def leader_state(self) -> LeaderState:
        c = self.controller
        status = {
            "routes": {name: c.route_status(name) for name in c.route_names()},
            "paused": c.paused,
            "kill_switch": c.kill_switch,
            "ticks": c.ticks,
            # Only the leader sees every replica's requests: followers answer the route check from this.
            "route_check": self.route_check(),
        }
        return LeaderState(self.dispatcher.table, status, list(c.log))

    def apply_admin(self, admin: Mapping[str, str]) -> None:
        """Pins and flags from the shared admin state (any replica's admin API writes there)."""
        c = self.controller
        for name in c.route_names():
            value = admin.get(f"pin:{name}")
            try:
                c.pin(name, int(value) if value is not None else None)
            except ValueError:
                log.warning("ignored a shared pin outside the route's bounds", extra={"route": name, "k": value})
        c.paused = admin.get("paused") == "1"
        c.kill_switch = admin.get("kill_switch") == "1"

    def engine_steps(self, pool: str, delta: StepDelta) -> None:
        """An endpoint's step counters since its last scrape: step-time evidence for the pool's cost model."""
        used = self.controller.observe_steps(
            pool,
            delta.iterations,
            delta.request_steps,
            delta.itl_sum_s,
            delta.draft_tokens,
            time.monotonic(),
            delta.drafts,
        )
        if used:
            self.metrics.engine_step_samples.labels(pool).inc()

    def engine_acceptance(self, pool: str, drafts: float, accepted_per_pos: Mapping[int, float]) -> None:
        """An endpoint's speculation counters since its last scrape: the pool's acceptance, which new routes start
        from (controller.prior_weight)."""
        self.controller.observe_engine_acceptance(pool, drafts, accepted_per_pos, time.monotonic())

    def route_acceptance(self, route: str, pool: str, drafts: float, accepted_per_pos: Mapping[int, float]) -> None:
        """A route's share of an endpoint's speculation counters (controllers/attribution.py)."""
        self.controller.observe_route_positions(route, pool, drafts, accepted_per_pos, time.monotonic())

    def engine_kv(self, pool: str, reading: KvReading) -> None:
        """An endpoint's KV state at a scrape (its preemptions since the last one): the pool's KV pressure, merged
        over its endpoints until the next tick (KvReading.merged). Dropped when the KV cap is off: nothing reads it."""
        if not self.controller.settings.kv_cap:
            return
        seen = self._kv.get(pool)
        self._kv[pool] = reading if seen is None else seen.merged(reading)

    def pool_batches(self, now: float) -> dict[str, float | None]:
        """Mean running requests per healthy endpoint of each pool; None when no fresh scrape exists."""
        out: dict[str, float | None] = {}
        for pool in self.pools.pools:
            loads = [ep.load(now, pool.stale_after_s) for ep in pool.endpoints if ep.healthy is not False]
            fresh = [running_requests(load.outstanding, load.running) for load in loads if load.running is not None]
            out[pool.name] = (sum(fresh) / len(fresh) + 1.0) if fresh else None
        return out

    def tick(self, observations: list[Observation] | None = None) -> DecisionTable | None:
        """One controller step on `observations` (default: this replica's own, drained from the sink)."""
        now = time.monotonic()
        for obs in self.sink.drain() if observations is None else observations:
            self.controller.observe(obs, now)
            self.speedup.add(obs.route, obs.k_applied, obs.completion_tokens, obs.e2e_s)
            self._watch_drift(obs)
            self._watch_spread(obs, now)
        for spread in self.spreads.values():
            spread.decay_to(now)
        kv, self._kv = self._kv, {}
        table = self.controller.tick(now, self.pool_batches(now), kv)
        self.metrics.controller_ticks.inc()
        self.last_tick_at = time.time()
        self.metrics.last_tick.set(self.last_tick_at)
        if table is not None:
            for rec in list(self.controller.log)[-len(self.controller.route_names()) * 2 :]:
                if rec.version == table.version:
                    self.metrics.decision_changes.labels(rec.route).inc()
                    log.info(
                        "k changed",
                        extra={
                            "route": rec.route,
                            "old_k": rec.old_k,
                            "new_k": rec.new_k,
                            "reason": rec.reason,
                            "version": rec.version,
                        },
                    )
            self.publish(table)
        self._export()
        return table

    def _watch_drift(self, obs: Observation) -> None:
        """Drift is judged on draft position 1 of the steps that drafted (controllers/drift.py first_position): not
        on the pooled positions, which move with k, nor on steps where the drafter proposed nothing."""
        if self.drift is None or obs.spec is None:
            return
        trials, passes = _first_position(obs)
        event = self.drift.add(obs.route, trials, passes, self._break_even.get(obs.route), time.monotonic())
        if event is not None:
            self._raise(event)

    def _watch_spread(self, obs: Observation, now: float) -> None:
        if obs.spec is None or obs.route not in self.controller.route_names():
            return
        trials, passes = _first_position(obs)
        spread = self.spreads.get(obs.route)
        if spread is None:
            spread = self.spreads[obs.route] = RouteSpread()
        spread.add(trials, passes, now)

    def route_check(self) -> dict[str, Any]:
        """Per route the mean and spread of per-request first-draft acceptance, and the split / merge advice."""
        routes = {
            name: {
                "requests": round(s.requests, 1),
                "mean_acceptance": None if s.mean is None else round(s.mean, 4),
                "spread": None if s.spread is None else round(s.spread, 4),
            }
            for name, s in self.spreads.items()
        }
        advice = [{"kind": a.kind, "routes": list(a.routes), "reason": a.reason} for a in self.route_advice()]
        return {"routes": routes, "advice": advice}

    def route_advice(self) -> list[RouteAdvice]:
        """Split / merge advice over the routes' recent requests (controllers/route_check.py)."""
        pools = {name: self.controller.route_status(name)["pool"] for name in self.controller.route_names()}
        check = self.config.routing.check
        return advise(
            {name: (pools[name], s) for name, s in self.spreads.items() if name in pools},
            split_above=check.split_above,
            merge_within=check.merge_within,
            min_requests=check.min_requests,
        )

    def _drift_annotations(self, event: DriftEvent) -> dict[str, str]:
        """What the on-call engineer needs in the page itself: the evidence, what it costs, where to look."""
        status = self.controller.route_status(event.route) if event.route in self.controller.route_names() else {}
        baseline = "unknown" if event.baseline is None else f"{event.baseline:.3f}"
        be = self._break_even.get(event.route)
        speedup = status.get("expected_speedup")
        url = self.config.alerts.external_url
        return {
            "summary": f"Draft acceptance on route {event.route} drifted: {event.reason}",
            "description": (
                f"First-draft acceptance {event.rate:.3f} over the last {event.trials:.0f} drafted steps, against a "
                f"baseline of {baseline}; break-even at the current k and load: "
                f"{'n/a' if be is None else f'{be:.3f}'}. Expected speed-up now {speedup}. The controller lowers k "
                "where speculation stops paying; check the drafter against the route's traffic."
            ),
            "pool": str(status.get("pool", "")),
            "acceptance_now": f"{event.rate:.4f}",
            "acceptance_baseline": baseline,
            "window_trials": f"{event.trials:.0f}",
            "break_even": "" if be is None else f"{be:.4f}",
            "expected_speedup": "" if speedup is None else str(speedup),
            "runbook": "docs/observability.md#drift-alerts-runbook",
            "dashboard": f"{url} Grafana 'specgate / Speculation control', panel 'Drift: window acceptance vs "
            "baseline and break-even'",
        }

    def _raise(self, event: DriftEvent) -> None:
        """Turn a detector's firing / recovered event into an alert for the receivers (and the log)."""
        now = time.time()
        baseline = "unknown" if event.baseline is None else f"{event.baseline:.3f}"
        if event.state == "firing":
            kind = "break_even" if "break-even" in event.reason else "shift"
            annotations = self._drift_annotations(event)
            labels = {"route": event.route, "kind": kind, "severity": "warning", "source": "specgate"}
            if annotations["pool"]:
                labels["pool"] = annotations["pool"]  # Alertmanager inhibits it while the pool is down
            alert = Alert(
                "SpecgateRouteAcceptanceDrift",
                labels,
                annotations,
                "firing",
                now,
                generator_url=f"{self.config.alerts.external_url}/admin/routes/{event.route}",
            )
            self._firing[event.route] = alert
        else:
            fired = self._firing.pop(event.route, None)
            if fired is None:
                return
            alert = fired.resolved(
                now,
                {**fired.annotations, "resolution": f"Recovered: acceptance {event.rate:.3f}, baseline {baseline}."},
            )
        self.metrics.alerts_fired.labels(alert.name, alert.status).inc()
        log.warning(
            "drift alert",
            extra={"route": event.route, "status": alert.status, "reason": event.reason, "rate": round(event.rate, 4)},
        )
        if self.alerts is not None:
            self.alerts.publish(alert)

    def publish(self, table: DecisionTable) -> None:
        self.dispatcher.table = table
        self.metrics.decision_version.set(table.version)
        for name, decision in table.routes.items():
            self.metrics.route_k.labels(name).set(decision.k)
            for batch in BATCH_GRID:
                self.metrics.route_schedule_k.labels(name, str(batch)).set(decision.k_at(batch))

    def _export(self) -> None:
        m = self.metrics
        c = self.controller
        m.controller_paused.set(1 if c.paused else 0)
        m.kill_switch.set(1 if c.kill_switch else 0)
        for name in c.route_names():
            status = c.route_status(name)
            m.route_expected_speedup.labels(name).set(status["expected_speedup"])
            measured = self.speedup.speedup(name)
            if measured is not None:
                m.route_measured_speedup.labels(name).set(measured)
            m.route_acceptance_length.labels(name).set(status["acceptance"]["expected_length_at_k"])
            for i, rate in enumerate(status["acceptance"]["position_rates"], 1):
                if rate is not None:
                    m.route_position_acceptance.labels(name, str(i)).set(rate)
        for pool in self.config.pools:
            m.cost_fit_quality.labels(pool.name).set(c.cost_model(pool.name).fit_quality)
            m.pool_k_cap.labels(pool.name).set(c.kv_cap(pool.name))
        for name in c.route_names():
            be = self._break_even[name] = c.break_even(name)
            if be is not None:
                m.break_even.labels(name).set(be)
        for name, spread in self.spreads.items():
            value = spread.spread
            if value is not None:
                m.route_acceptance_spread.labels(name).set(value)
        m.route_advice.clear()
        for advice in self.route_advice():
            for route in advice.routes:
                m.route_advice.labels(route, advice.kind).set(1)
        if self.drift is not None:
            for name, det in self.drift.detectors.items():
                m.drift_state.labels(name).set({"learning": 0, "ok": 1, "firing": 2}[det.state])
                if det.p0 is not None:
                    m.drift_baseline.labels(name).set(det.p0)
                if name in self.drift.last_rate:
                    m.drift_acceptance.labels(name).set(self.drift.last_rate[name])
