"""From a checked request to a plan: route, pool, k to apply, and the shaped upstream body.

request -> features -> route -> decision table -> actuator (pool + per-request cap) -> shaping
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson
from specgate.backends.pool import Pool, PoolSet
from specgate.backends.shaping import client_k, shape_request
from specgate.controllers.actuator import PoolOption, actuate
from specgate.controllers.decisions import DecisionTable, static_table
from specgate.controllers.k_schedule import encode
from specgate.controllers.picker import running_requests
from specgate.controllers.prefix_key import PrefixKeySettings, chat_key, completion_key
from specgate.controllers.routing import RequestFeatures, select_route
from specgate.runtime.requests import ParsedRequest
from specgate.runtime.settings import route_bounds, route_rules

from specgate.config import GatewayConfig
from specgate.errors import InvalidRequest, ModelNotFound

__all__ = ["Dispatcher", "Plan", "affinity_key", "joining_batch", "request_features"]

ROUTE_HEADER = "x-specgate-route"
_HEAD_CHARS = 2048


@dataclass(slots=True)
class Plan:
    route: str
    pool: Pool
    k: int
    cap: int | None
    # The client asked for the final usage chunk itself (else the gateway drops it after reading it).
    client_usage: bool
    explored: bool = False
    # The k schedule sent to the engine's scheduler plugin (backends/spec_cap.py's form), if any.
    schedule: str | None = None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def request_features(
    req: ParsedRequest, tenant: str | None = None, classify: Callable[[], str | None] | None = None
) -> RequestFeatures:
    body = req.body
    system = ""
    chars = 0
    if req.api == "chat":
        for msg in body["messages"]:
            text = _text(msg.get("content"))
            chars += len(text)
            if not system and msg.get("role") in ("system", "developer"):
                system = text[:_HEAD_CHARS]
    else:
        prompt = body["prompt"]
        chars = len(prompt) if isinstance(prompt, str) else sum(len(p) for p in prompt if isinstance(p, str))
    fmt = body.get("response_format")
    return RequestFeatures(
        model=req.model,
        api=req.api,
        tenant=tenant,
        system_prompt=system,
        has_tools=bool(body.get("tools")),
        json_response=isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"),
        prompt_chars=chars,
        classify=classify,
    )


def affinity_key(req: ParsedRequest, settings: PrefixKeySettings) -> int | None:
    """The request's prefix-affinity key (controllers/prefix_key.py), from its tools and messages or its prompt."""
    body = req.body
    if req.api == "chat":
        tools = body.get("tools")
        tools_text = orjson.dumps(tools, option=orjson.OPT_SORT_KEYS).decode() if tools else ""
        messages = [(str(m.get("role")), _text(m.get("content"))) for m in body["messages"]]
        return chat_key(tools_text, messages, settings)
    prompt = body["prompt"]
    if isinstance(prompt, list):
        # A batch of prompts, or token ids: keyed by the first string, if any.
        prompt = next((p for p in prompt if isinstance(p, str)), "")
    return completion_key(prompt, settings) if isinstance(prompt, str) else None


class Dispatcher:
    def __init__(
        self,
        config: GatewayConfig,
        pools: PoolSet,
        classify: Callable[[Mapping[str, Any]], str | None] | None = None,
    ) -> None:
        self._routing = config.routing
        self._rules = route_rules(config.routing)
        self._classify = classify
        self._random = random.Random().random
        self._pools = pools
        self._route_names = frozenset(config.routing.route_names())
        picking = config.picking
        self._prefix = (
            PrefixKeySettings(picking.prefix_min_chars, picking.prefix_max_chars, picking.completion_prefix_chars)
            if picking.weights.prefix > 0
            else None
        )
        engine_max = max((p.speculation.max_k for p in config.pools), default=0)
        # Replaced wholesale (one reference assignment) whenever the controller decides.
        self.table: DecisionTable = static_table(route_bounds(config.routing), engine_max)

    @property
    def route_names(self) -> frozenset[str]:
        return self._route_names

    def choose_route(self, req: ParsedRequest, headers: Mapping[str, str], tenant: str | None = None) -> str:
        asked = headers.get(ROUTE_HEADER)
        if asked and self._routing.allow_route_header:
            if asked not in self._route_names:
                raise InvalidRequest(f"unknown route '{asked}'", param=ROUTE_HEADER)
            return asked
        classify = self._classify
        label = (lambda: classify(req.body)) if classify else None
        return select_route(self._rules, self._routing.default_route, request_features(req, tenant, label))

    def candidate_pools(self, model: str, route: str) -> list[Pool]:
        pools = self._pools.pools_for(model)
        if not pools:
            raise ModelNotFound(f"The model '{model}' does not exist", param="model")
        allowed = self._routing.route(route).pools
        if allowed is not None:
            narrowed = [p for p in pools if p.name in allowed]
            # A route restricted to pools that do not serve this model still serves it from the others.
            pools = narrowed or pools
        return pools

    def plan(self, req: ParsedRequest, headers: Mapping[str, str], tenant: str | None = None) -> Plan:
        """Route, pool and k. k comes from the route's schedule: pools with the scheduler plugin get the whole
        schedule and apply it at every engine step from their live batch; for the others (and to choose among pool
        tiers) the schedule is read at the batch the request joins now. A client's own k (when allowed) takes one
        fixed k for the request's life; an exploration request takes its route's explore k up to the batch where
        exploring was found to pay and the route's schedule past it (`RouteDecision.explorer_schedule`)."""
        route = req.route = self.choose_route(req, headers, tenant)
        pools = self.candidate_pools(req.model, route)
        asked_k = client_k(req.body)
        explored = False
        schedule = None
        if asked_k is not None and self._routing.allow_client_k:
            desired = asked_k
        else:
            decision = self.table.routes.get(route)
            if decision is None:
                desired = self.table.fallback_k
            elif decision.explore_k is not None and self._random() < decision.explore_share:
                # The explore k up to the batch where exploring was found to pay, the route's schedule past it: per
                # step where the plugin applies the schedule, at the joining batch for the request's life elsewhere.
                desired, explored = decision.explore_k_at(joining_batch(pools)), True
                own = decision.explorer_schedule()
                schedule = own if len(own) > 1 else None
            else:
                desired = decision.k_at(joining_batch(pools))
                # A constant schedule (a pin, the kill switch, stale inputs) is a fixed cap: sent as one, so the
                # request's evidence and vLLM's accounting stay those of a fixed k.
                schedule = decision.schedule if decision.schedule and len(decision.schedule) > 1 else None
        options = [
            PoolOption(
                p.config.speculation.max_k,
                p.per_request_k,
                any(ep.healthy is not False for ep in p.endpoints),
            )
            for p in pools
        ]
        act = actuate(desired, options)
        pool = pools[act.pool_index]
        if self._prefix is not None and len(pool.endpoints) > 1:
            req.affinity = affinity_key(req, self._prefix)
        # The plugin takes the schedule instead of a fixed cap: the k at each step follows the engine's batch.
        sent = _encoded(schedule) if schedule is not None and act.cap is not None else None
        ask_usage = req.stream and not req.include_usage
        if shape_request(req.body, cap=None if sent else act.cap, ask_usage=ask_usage, schedule=sent):
            req.modified = True
        return Plan(
            route,
            pool,
            act.applied_k,
            act.cap,
            client_usage=req.include_usage or not req.stream,
            explored=explored,
            schedule=sent,
        )


# Every request of a route carries the same schedule until the table changes: encode it once, not per request.
@lru_cache(maxsize=1024)
def _encoded(schedule: tuple[tuple[int, int], ...]) -> str:
    return encode(schedule)


def joining_batch(pools: Sequence[Pool]) -> int:
    """The batch a request dispatched now joins: the least-loaded available endpoint of the pools (where the
    picker sends it) plus the request itself. Running requests are this gateway's outstanding ones, or the
    engine's last scrape when larger and fresh (other replicas' requests are in it)."""
    now = time.monotonic()
    loads = [
        running_requests(load.outstanding, load.running)
        for pool in pools
        for load in (ep.load(now, pool.stale_after_s) for ep in pool.endpoints)
        if load.healthy
    ]
    return int(min(loads, default=0.0)) + 1
