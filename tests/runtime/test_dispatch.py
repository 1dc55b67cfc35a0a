"""From the decision table to what the engine is sent: schedules for plugin pools, a k read at the joining batch for
the others and for pool tiers, one fixed k for clients' own k and exploration. In memory, no engine."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

from specgate.backends.pool import PoolSet
from specgate.controllers.decisions import DecisionTable, RouteDecision
from specgate.runtime.dispatch import Dispatcher, joining_batch
from specgate.runtime.requests import parse_body

from specgate.config import GatewayConfig

SCHEDULE = ((1, 4), (4, 2), (8, 0))


def pool(name: str, max_k: int, plugin: bool, endpoints: int = 1) -> dict[str, Any]:
    method = "ngram" if max_k else "none"
    spec: dict[str, Any] = {"method": method, "max_k": max_k}
    if plugin:
        spec["per_request_k"] = True
    return {
        "name": name,
        "model": "m",
        "endpoints": [f"http://{name}-{i}:8000" for i in range(endpoints)],
        "speculation": spec,
    }


def dispatcher(*pools: dict[str, Any], allow_client_k: bool = False, explore: float = 0.0) -> Dispatcher:
    config = GatewayConfig.model_validate(
        {"pools": list(pools), "routing": {"routes": [{"name": "code"}], "allow_client_k": allow_client_k}}
    )
    d = Dispatcher(config, PoolSet(config))
    d.table = DecisionTable(
        5, MappingProxyType({"default": RouteDecision(2, "test", 4 if explore else None, explore, SCHEDULE)})
    )
    return d


def request(xargs: dict[str, Any] | None = None) -> Any:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    if xargs is not None:
        body["vllm_xargs"] = xargs
    return parse_body(json.dumps(body).encode(), "chat")


def busy(d: Dispatcher, name: str, outstanding: int) -> None:
    for p in d._pools.pools:
        if p.name == name:
            for ep in p.endpoints:
                ep.outstanding = outstanding


def test_plugin_pool_gets_the_whole_schedule_and_no_fixed_cap() -> None:
    d = dispatcher(pool("p", 4, plugin=True))
    busy(d, "p", 5)  # joins a batch of 6: the schedule says 2 there; the engine decides per step
    req = request({"foo": 1})
    plan = d.plan(req, {})
    assert plan.schedule == "1:4,4:2,8:0" and plan.k == 2
    assert req.body["vllm_xargs"] == {"foo": 1, "specgate_k_schedule": "1:4,4:2,8:0"}


def test_stock_pool_reads_the_schedule_at_the_joining_batch() -> None:
    d = dispatcher(pool("tier0", 0, plugin=False), pool("tier2", 2, plugin=False), pool("tier4", 4, plugin=False))
    assert d.plan(request(), {}).pool.name == "tier4"  # idle: batch 1 -> k 4
    busy(d, "tier4", 3)
    busy(d, "tier2", 3)
    busy(d, "tier0", 3)
    plan = d.plan(request(), {})
    assert (plan.pool.name, plan.k, plan.schedule) == ("tier2", 2, None)  # batch 4 -> k 2
    for name in ("tier0", "tier2", "tier4"):
        busy(d, name, 9)
    req = request({"specgate_k_schedule": "1:16"})
    plan = d.plan(req, {})
    assert (plan.pool.name, plan.k) == ("tier0", 0)  # batch 10 -> k 0
    assert "vllm_xargs" not in req.body  # a client's schedule never reaches an engine


def test_joining_batch_is_the_least_loaded_healthy_endpoint_plus_one() -> None:
    d = dispatcher(pool("p", 4, plugin=True, endpoints=3))
    eps = d._pools.pools[0].endpoints
    for ep, n in zip(eps, (7, 2, 5), strict=True):
        ep.outstanding = n
    assert joining_batch(d._pools.pools) == 3
    eps[1].healthy = False
    assert joining_batch(d._pools.pools) == 6


def test_client_k_and_exploration_fix_k_for_the_request() -> None:
    d = dispatcher(pool("p", 4, plugin=True), allow_client_k=True)
    req = request({"num_speculative_tokens": 1})
    plan = d.plan(req, {})
    assert plan.schedule is None and req.body["vllm_xargs"] == {"num_speculative_tokens": 1}
    explorer = dispatcher(pool("p", 4, plugin=True), explore=1.0)
    req = request()
    plan = explorer.plan(req, {})
    assert plan.explored and plan.schedule is None and req.body["vllm_xargs"] == {"num_speculative_tokens": 4}


def test_an_explorer_explores_only_up_to_where_exploring_pays() -> None:
    """Route k by SCHEDULE (4 at batch 1-3, 2 at 4-7, 0 from 8), explore k 4 up to batch 5: a plugin pool gets
    the explorer's own schedule (4 to 5, the route's past it), and the k the request starts with (what a pool without
    the plugin, or a choice among tiers, goes by) is that schedule's at the joining batch."""
    explorer = dispatcher(pool("p", 4, plugin=True), explore=1.0)
    explorer.table = DecisionTable(
        6, MappingProxyType({"default": RouteDecision(2, "test", 4, 1.0, SCHEDULE, explore_until=5)})
    )
    req = request()
    plan = explorer.plan(req, {})
    assert plan.explored and plan.schedule == "1:4,6:2,8:0"
    assert req.body["vllm_xargs"]["specgate_k_schedule"] == "1:4,6:2,8:0"
    busy(explorer, "p", 2)  # joins a batch of 3: explores
    assert explorer.plan(request(), {}).k == 4
    busy(explorer, "p", 6)  # joins a batch of 7: past where exploring pays, the route's k there
    late = explorer.plan(request(), {})
    assert late.k == 2 and late.schedule == "1:4,6:2,8:0"


def test_static_table_sends_a_fixed_cap() -> None:
    d = dispatcher(pool("p", 4, plugin=True))
    d.table = DecisionTable(2, MappingProxyType({"default": RouteDecision(3, "static")}))
    req = request()
    plan = d.plan(req, {})
    assert plan.schedule is None and req.body["vllm_xargs"] == {"num_speculative_tokens": 3}


def test_a_constant_schedule_is_sent_as_a_fixed_cap() -> None:
    d = dispatcher(pool("p", 4, plugin=True))
    d.table = DecisionTable(
        3, MappingProxyType({"default": RouteDecision(1, "pinned in config", None, 0.0, ((1, 1),))})
    )
    req = request()
    plan = d.plan(req, {})
    assert plan.schedule is None and plan.k == 1 and req.body["vllm_xargs"] == {"num_speculative_tokens": 1}


def test_an_endpoint_found_without_the_plugin_makes_its_pool_a_stock_engine() -> None:
    """Discovery (backends/capabilities.py) found a cap of 0 ignored on one endpoint: nothing sent to that pool is a
    cap or a schedule any more, and the plan reports the k the engine will really use (its own max)."""
    from specgate.controllers.capabilities import EngineFacts

    d = dispatcher(pool("p", 4, plugin=True, endpoints=2))
    (p,) = d._pools.pools
    p.endpoints[0].facts = EngineFacts("vllm", plugin=True)
    assert p.per_request_k and d.plan(request(), {}).schedule is not None
    p.endpoints[1].facts = EngineFacts("vllm", plugin=None)  # unknown: the config is trusted
    assert p.per_request_k
    p.endpoints[1].facts = EngineFacts("vllm", plugin=False)
    req = request({"foo": 1, "num_speculative_tokens": 1})
    plan = d.plan(req, {})
    assert not p.per_request_k
    assert (plan.k, plan.cap, plan.schedule) == (4, None, None)
    assert req.body["vllm_xargs"] == {"foo": 1}  # a cap the engine would ignore is not sent
    assert p.describe()["per_request_k"] is False
