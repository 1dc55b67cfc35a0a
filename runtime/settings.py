"""The pure layer's settings, built once from the validated config: `controllers/` never sees the config itself."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import MappingProxyType

from specgate.controllers.controller import ControllerSettings, PoolSpec, RouteSpec, SpeculationController
from specgate.controllers.decisions import KBounds
from specgate.controllers.drift import DriftMonitor, DriftSettings
from specgate.controllers.routing import RouteRules, Rule

from specgate.config import DriftConfig, GatewayConfig, RouteMatch, RoutingConfig, StepTimeConfig

__all__ = ["build_controller", "build_drift_monitor", "drift_settings", "route_bounds", "route_rules"]


def _frozen(values: list[str] | None) -> frozenset[str] | None:
    return None if values is None else frozenset(values)


def _rule(m: RouteMatch) -> Rule:
    return Rule(
        models=_frozen(m.models),
        api=m.api,
        tenants=_frozen(m.tenants),
        system_regex=m.system_regex,
        has_tools=m.has_tools,
        json_response=m.json_response,
        min_prompt_chars=m.min_prompt_chars,
        max_prompt_chars=m.max_prompt_chars,
        classes=_frozen(m.classes),
    )


def route_rules(routing: RoutingConfig) -> tuple[RouteRules, ...]:
    """The routes in priority order with their rules."""
    return tuple(RouteRules(r.name, tuple(_rule(m) for m in r.match)) for r in routing.routes)


def route_bounds(routing: RoutingConfig) -> Mapping[str, KBounds]:
    """Every route's k bounds, the default route included."""
    out = {}
    for name in routing.route_names():
        k = routing.route(name).k
        out[name] = KBounds(k.min, k.max, k.pin)
    return MappingProxyType(out)


def _main_pool(config: GatewayConfig, route_pools: list[str] | None) -> str:
    """The pool a route's k is optimised for: its first allowed pool that takes per-request k, else the
    allowed pool with the largest max k."""
    pools = [p for p in config.pools if route_pools is None or p.name in route_pools] or list(config.pools)
    plugin = [p for p in pools if p.speculation.per_request_k]
    chosen = plugin[0] if plugin else max(pools, key=lambda p: p.speculation.max_k)
    return chosen.name


def build_controller(config: GatewayConfig) -> SpeculationController:
    c = config.controller
    settings = ControllerSettings(
        tick_s=c.tick_s,
        half_life_s=c.half_life_s,
        hysteresis=c.hysteresis,
        min_dwell_s=c.min_dwell_s,
        max_step=c.max_step,
        explore_share=c.explore_share,
        explore_futile_requests=c.explore_futile_requests,
        cold_start_paying_share=c.cold_start_paying_share,
        stale_after_s=c.stale_after_s,
        safe_k=c.safe_k,
        decision_log_size=c.decision_log_size,
        adaptive=c.enabled,
        prior_weight=c.prior_weight,
        z=c.z,
        change_z=c.change_z,
        recent_half_life_s=c.recent_half_life_s,
        proposal_rate=c.proposal_rate,
        kv_cap=c.kv_cap,
        kv_high=c.kv_high,
        kv_low=c.kv_low,
        kv_recover_s=c.kv_recover_s,
        kv_draft_share=c.kv_draft_share,
        objective=c.objective,
    )
    routes = []
    for name in config.routing.route_names():
        r = config.routing.route(name)
        routes.append(RouteSpec(name, _main_pool(config, r.pools), r.k.min, r.k.max, r.k.pin, r.tpot_slo_s))
    if not config.pools:
        return SpeculationController(settings, [], [], now=time.monotonic())
    pools = [
        PoolSpec(
            p.name,
            p.speculation.max_k,
            c.cost_prior,
            p.speculation.method,
            p.speculation.draft_cost,
            _step_time(p.speculation.step_time),
            p.speculation.max_num_seqs,
        )
        for p in config.pools
    ]
    return SpeculationController(settings, routes, pools, now=time.monotonic())


def _step_time(s: StepTimeConfig | None) -> tuple[float, float, float, float] | None:
    return None if s is None else (s.floor_s, s.per_token_s, s.knee_tokens, s.draft_token_cost)


def drift_settings(d: DriftConfig) -> DriftSettings:
    return DriftSettings(
        min_trials=d.min_trials,
        baseline_windows=d.baseline_windows,
        cusum_k=d.cusum_k,
        cusum_h=d.cusum_h,
        ewma_lambda=d.ewma_lambda,
        ewma_l=d.ewma_l,
        confirm=d.confirm,
        for_s=d.for_s,
        keep_firing_for_s=d.keep_firing_for_s,
        break_even_z=d.break_even_z,
    )


def build_drift_monitor(config: GatewayConfig, routes: list[str]) -> DriftMonitor | None:
    d = config.alerts.drift
    if not d.enabled or not routes:
        return None
    return DriftMonitor(routes, drift_settings(d))
