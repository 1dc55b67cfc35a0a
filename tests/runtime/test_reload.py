"""Reload decisions (runtime/reload.py): what a reload may change, and the outcome it reports."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.reload import ConfigReloader, changed_sections, restart_only

from specgate.config import ConfigError, GatewayConfig, validate_config

BASE: dict[str, Any] = {"pools": [{"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9"]}]}


def _config(**overrides: Any) -> GatewayConfig:
    return validate_config({**BASE, **overrides})


def test_restart_only_lists_each_changed_field_by_path() -> None:
    old = _config()
    new = _config(server={"port": 9000, "max_body_bytes": 1024}, state={"redis_url": "redis://127.0.0.1:6379"})
    problems = restart_only(old, new)
    assert [p.split(":")[0] for p in problems] == ["server.port", "server.max_body_bytes", "state.redis_url"]
    assert all("only a restart applies it" in p for p in problems)
    # Reloadable sections are not listed.
    assert restart_only(old, _config(routing={"routes": [{"name": "code"}]}, controller={"tick_s": 1})) == []


def test_changed_sections_in_config_order() -> None:
    old = _config()
    new = _config(controller={"tick_s": 1}, auth={"api_keys": []}, routing={"routes": [{"name": "code"}]})
    assert changed_sections(old, new) == ["routing", "controller"]  # auth: the same as the default
    assert changed_sections(old, _config()) == []


class _Target:
    def __init__(self, config: GatewayConfig, fail: Exception | None = None) -> None:
        self.config = config
        self.applied: list[GatewayConfig] = []
        self.fail = fail

    async def apply(self, new: GatewayConfig) -> None:
        if self.fail is not None:
            raise self.fail
        self.applied.append(new)
        self.config = new


def _reloader(target: _Target, source: Any, metrics: GatewayMetrics) -> ConfigReloader:
    return ConfigReloader(source, lambda: target.config, target.apply, metrics)


def _value(metrics: GatewayMetrics, name: str, labels: dict[str, str] | None = None) -> float:
    value = metrics.registry.get_sample_value(name, labels or {})
    assert value is not None, name
    return value


def test_outcomes_and_metrics() -> None:
    metrics = GatewayMetrics()
    target = _Target(_config())
    sources: list[Any] = [
        lambda: _config(),
        lambda: _config(controller={"tick_s": 1}),
        lambda: (_ for _ in ()).throw(ConfigError(["controller.tick_s: must be > 0", "pools.0.model: missing"])),
        lambda: _config(server={"port": 1234}),
        lambda: _config(pools=[]),
    ]
    outcomes = [asyncio.run(_reloader(target, source, metrics).reload("test")) for source in sources]
    assert [o.result for o in outcomes] == ["unchanged", "applied", "rejected", "rejected", "rejected"]
    assert outcomes[1].changed == ["controller"] and target.config.controller.tick_s == 1
    assert outcomes[2].errors == ["controller.tick_s: must be > 0", "pools.0.model: missing"]
    assert outcomes[3].errors[0].startswith("server.port:")
    assert outcomes[4].errors[0].startswith("pools: empty")
    assert len(target.applied) == 1  # nothing rejected reached the gateway
    assert _value(metrics, "specgate_config_reloads_total", {"result": "rejected"}) == 3
    assert _value(metrics, "specgate_config_reloads_total", {"result": "applied"}) == 1
    assert _value(metrics, "specgate_config_last_reload_successful") == 0


@pytest.mark.parametrize("fail", [ConfigError(["classifier: cannot read model.json"]), OSError("disk full")])
def test_a_failure_while_applying_is_a_rejection_not_a_crash(fail: Exception) -> None:
    metrics = GatewayMetrics()
    target = _Target(_config(), fail)
    outcome = asyncio.run(_reloader(target, lambda: _config(controller={"tick_s": 1}), metrics).reload("test"))
    assert outcome.result == "rejected" and outcome.errors and target.config.controller.tick_s != 1
    assert _value(metrics, "specgate_config_last_reload_successful") == 0


def test_reloads_run_one_at_a_time() -> None:
    metrics = GatewayMetrics()
    target = _Target(_config())
    running = 0
    most = 0

    async def slow_apply(new: GatewayConfig) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.02)
        running -= 1
        target.config = new

    ticks = iter(range(1, 100))
    reloader = ConfigReloader(
        lambda: _config(controller={"tick_s": next(ticks)}), lambda: target.config, slow_apply, metrics
    )

    async def main() -> list[str]:
        return [o.result for o in await asyncio.gather(*(reloader.reload("test") for _ in range(5)))]

    assert asyncio.run(main()) == ["applied"] * 5 and most == 1


def test_at_shutdown_a_reload_in_progress_finishes_and_later_ones_are_refused() -> None:
    metrics = GatewayMetrics()
    target = _Target(_config())
    events: list[str] = []
    started = asyncio.Event()

    async def slow_apply(new: GatewayConfig) -> None:
        events.append("apply started")
        started.set()
        await asyncio.sleep(0.05)
        target.config = new
        events.append("apply done")

    reloader = ConfigReloader(lambda: _config(controller={"tick_s": 1}), lambda: target.config, slow_apply, metrics)

    async def main() -> tuple[str, str]:
        first = asyncio.create_task(reloader.reload("test"))
        await started.wait()
        await reloader.close()
        events.append("closed")
        later = await reloader.reload("test")
        return (await first).result, later.result

    assert asyncio.run(main()) == ("applied", "rejected")
    assert events == ["apply started", "apply done", "closed"]
    assert reloader.last is not None and reloader.last.errors == ["(shutdown): the gateway is stopping"]


class _Following:
    """A replica's seat when another holds the lease (runtime/coordination.py Coordinator): serve `table`."""

    def __init__(self, table: Any) -> None:
        from specgate.runtime.coordination import ReplicaInfo

        self.table = table
        self.info = ReplicaInfo("r2", "follower", False, "r1", "memory", True)

    async def begin(self, local: list[Any]) -> Any:
        from specgate.runtime.coordination import Turn

        return Turn("follower", table=self.table)


def test_a_follower_keeps_serving_the_leaders_table_through_a_reload() -> None:
    """Its own controller never ticks: its table is stale and must not replace the leader's, nor hide the leader's
    next one because the version numbers happen to agree."""
    from specgate.backends.pool import PoolSet
    from specgate.controllers.decisions import DecisionTable, RouteDecision
    from specgate.controllers.observations import ObservationSink
    from specgate.runtime.control_loop import ControlLoop
    from specgate.runtime.dispatch import Dispatcher

    config = _config(routing={"routes": [{"name": "code"}], "default_route": "code"})
    pools = PoolSet(config)
    leader = DecisionTable(7, {"code": RouteDecision(1, "leader")})
    coordinator = _Following(leader)
    loop = ControlLoop(
        config,
        pools,
        ObservationSink(),
        Dispatcher(config, pools, None),
        GatewayMetrics(),
        coordinator,  # type: ignore[arg-type]
    )
    asyncio.run(loop.step())
    assert loop.dispatcher.table is leader
    reloaded = _config(routing={"routes": [{"name": "code"}], "default_route": "code"}, controller={"hysteresis": 0.2})
    loop.reconfigure(reloaded, Dispatcher(reloaded, pools, None), None)
    assert loop.dispatcher.table == leader
    # The leader's next table, at the version the follower's own controller would have published after a reload.
    coordinator.table = DecisionTable(loop.controller.table().version, {"code": RouteDecision(3, "leader")})
    asyncio.run(loop.step())
    assert loop.dispatcher.table.k_for("code") == 3
