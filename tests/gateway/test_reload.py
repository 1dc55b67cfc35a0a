"""Config reload on a live gateway (no engine: what it changes shows in the admin API, /v1/models, auth and metrics).
Under load on a real engine: tests/gateway/test_reload_vllm.py. SIGHUP and the file watch: the real `specgate serve`
process, below."""

from __future__ import annotations

import copy
import hashlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from specgate.config import load_config
from tests.conftest import GatewayServer, free_port

KEY = "sk-tenant-a-0123456789"


def _pool(name: str, model: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": model,
        "endpoints": [f"http://127.0.0.1:{free_port()}"],
        "speculation": {"method": "ngram", "max_k": 4, "per_request_k": True},
    }


def _base(port: int) -> dict[str, Any]:
    return {
        "server": {"port": port},
        "pools": [_pool("p", "m")],
        "routing": {"routes": [{"name": "code", "k": {"min": 0, "max": 3}}]},
        "controller": {"tick_s": 3600},
        "discovery": {"probe": False},
    }


class Live:
    """A gateway served from a config file that the test rewrites."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self.write(data)
        self.server = GatewayServer(load_config(path), reload_from=lambda: load_config(path)).start()
        self.url = self.server.url

    def write(self, data: dict[str, Any] | str) -> None:
        self.path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))

    def reload(self, data: dict[str, Any] | str, **headers: str) -> httpx.Response:
        self.write(data)
        return httpx.post(f"{self.url}/admin/config/reload", headers=headers, timeout=30)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], Live]]:
    started: list[Live] = []

    def start(data: dict[str, Any]) -> Live:
        started.append(Live(tmp_path / "specgate.yaml", data))
        return started[-1]

    yield start
    for item in started:
        item.server.stop()


def test_routes_pools_keys_and_controller_settings_reload(live: Callable[[dict[str, Any]], Live]) -> None:
    base = _base(free_port())
    gw = live(copy.deepcopy(base))
    assert set(httpx.get(f"{gw.url}/admin/routes").json()["routes"]) == {"code", "default"}
    httpx.put(f"{gw.url}/admin/routes/code/k", json={"k": 2})  # an admin pin: carried over
    version = httpx.get(f"{gw.url}/admin/controller").json()["decision_table_version"]

    new = copy.deepcopy(base)
    new["routing"]["routes"].append({"name": "chat", "k": {"pin": 1}})
    new["pools"].append(_pool("q", "other-model"))
    new["controller"]["hysteresis"] = 0.1
    new["auth"] = {"api_keys": [{"sha256": hashlib.sha256(KEY.encode()).hexdigest(), "tenant": "a"}]}
    r = gw.reload(new)
    assert r.status_code == 200, r.text
    assert r.json()["result"] == "applied"
    assert r.json()["changed"] == ["routing", "controller", "auth", "pools"]

    routes = httpx.get(f"{gw.url}/admin/routes").json()
    assert set(routes["routes"]) == {"code", "chat", "default"}
    assert routes["routes"]["chat"]["k"] == 1 and routes["routes"]["chat"]["pinned_by"] == "config"
    assert routes["routes"]["code"]["k"] == 2 and routes["routes"]["code"]["pinned_by"] == "admin"
    assert routes["version"] > version
    # A key is now required, and the new pool's model is served.
    assert httpx.get(f"{gw.url}/v1/models").status_code == 401
    models = httpx.get(f"{gw.url}/v1/models", headers={"authorization": f"Bearer {KEY}"}).json()
    assert {m["id"] for m in models["data"]} == {"m", "other-model"}
    # The new endpoint was health-checked before it could take traffic (nothing listens there: unhealthy).
    pools = httpx.get(f"{gw.url}/admin/pools").json()["pools"]
    assert pools["q"]["endpoints"][0]["healthy"] is False
    shown = httpx.get(f"{gw.url}/admin/config").json()
    assert shown["last_reload"]["result"] == "applied" and shown["config"]["controller"]["hysteresis"] == 0.1

    # Removing the route and the pool again: their gauges go; the route's counters stay.
    r = gw.reload(base)
    assert r.status_code == 200 and r.json()["result"] == "applied"
    metrics = httpx.get(f"{gw.url}/metrics").text
    assert 'specgate_route_k{route="chat"}' not in metrics
    assert 'specgate_route_k{route="code"}' in metrics
    assert 'specgate_config_reloads_total{result="applied"} 2.0' in metrics
    assert gw.reload(base).json()["result"] == "unchanged"


def test_an_invalid_config_is_rejected_whole_and_the_old_one_keeps_serving(
    live: Callable[[dict[str, Any]], Live],
) -> None:
    base = _base(free_port())
    gw = live(copy.deepcopy(base))
    bad = copy.deepcopy(base)
    bad["controller"]["tick_s"] = -1
    bad["routing"]["routes"].append({"name": "x", "pools": ["nowhere"]})
    bad["server"]["max_body_bytes"] = 2048
    bad["retries"] = {"max_attempts": 0}
    r = gw.reload(bad)
    assert r.status_code == 422
    body = r.json()
    assert body["error"]["code"] == "config_rejected" and body["error"]["type"] == "invalid_request_error"
    errors = body["reload"]["errors"]
    # Every field error at once, each with its path.
    assert sorted(e.split(":")[0] for e in errors) == ["controller.tick_s", "retries.max_attempts"], errors
    bad["retries"] = {"max_attempts": 2}
    # Validation stops at field errors before model checks: the unknown pool shows once those are fixed.
    bad["controller"]["tick_s"] = 1
    errors = gw.reload(bad).json()["reload"]["errors"]
    assert any("unknown pool(s) nowhere" in e for e in errors), errors
    bad["routing"]["routes"].pop()
    errors = gw.reload(bad).json()["reload"]["errors"]
    assert errors == [
        "server.max_body_bytes: changed, but only a restart applies it (reload refused; the running config stays)"
    ]
    assert gw.reload("pools: [unclosed").status_code == 422
    # Still the old config, serving.
    assert set(httpx.get(f"{gw.url}/admin/routes").json()["routes"]) == {"code", "default"}
    assert httpx.get(f"{gw.url}/admin/controller").json()["tick_s"] == 3600
    metrics = httpx.get(f"{gw.url}/metrics").text
    assert "specgate_config_last_reload_successful 0.0" in metrics
    assert 'specgate_config_reloads_total{result="rejected"} 4.0' in metrics


def test_reload_needs_the_admin_key_and_takes_a_new_one(live: Callable[[dict[str, Any]], Live]) -> None:
    data = {**_base(free_port()), "admin_key": "a" * 32}
    gw = live(data)
    assert gw.reload(data).status_code == 403
    rotated = {**data, "admin_key": "b" * 32}
    assert gw.reload(rotated, authorization=f"Bearer {'a' * 32}").json()["result"] == "applied"
    assert httpx.get(f"{gw.url}/admin/routes", headers={"authorization": f"Bearer {'a' * 32}"}).status_code == 403
    assert httpx.get(f"{gw.url}/admin/routes", headers={"authorization": f"Bearer {'b' * 32}"}).status_code == 200


def test_a_gateway_without_a_config_file_says_it_cannot_reload(start_gateway: Callable[..., GatewayServer]) -> None:
    gw = start_gateway([_pool("p", "m")])
    r = httpx.post(f"{gw.url}/admin/config/reload")
    assert r.status_code == 409 and r.json()["error"]["code"] == "reload_unavailable"


def _wait_for(check: Callable[[], bool], within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


class Served:
    """`specgate serve --config FILE` as a real process."""

    def __init__(self, path: Path, data: dict[str, Any], *flags: str) -> None:
        self.path = path
        path.write_text(yaml.safe_dump(data))
        self.url = f"http://127.0.0.1:{data['server']['port']}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "specgate", "serve", "--config", str(path), *flags],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _wait_for(lambda: self.routes() == {"code", "default"}, 30)

    def routes(self) -> set[str]:
        try:
            return set(httpx.get(f"{self.url}/admin/routes", timeout=5).json()["routes"])
        except httpx.HTTPError:
            return set()

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        # uvicorn re-raises the SIGTERM it handled once it has shut down cleanly.
        assert self.proc.returncode in (0, -signal.SIGTERM), err.decode()[-2000:]
        return err.decode()


def _with_route(port: int, *names: str) -> dict[str, Any]:
    data = _base(port)
    data["routing"]["routes"] += [{"name": name} for name in names]
    return data


def test_sighup_reloads_the_serve_process(tmp_path: Path) -> None:
    port = free_port()
    served = Served(tmp_path / "specgate.yaml", _base(port))
    try:
        served.path.write_text(yaml.safe_dump(_with_route(port, "chat")))
        time.sleep(3)
        assert served.routes() == {"code", "default"}  # no watch: the file alone changes nothing
        served.proc.send_signal(signal.SIGHUP)
        _wait_for(lambda: served.routes() == {"code", "chat", "default"}, 15)
    finally:
        log = served.stop()
    assert '"msg":"config reloaded"' in log and '"trigger":"sighup"' in log


def test_the_file_watch_reloads_when_the_file_changes_or_is_replaced(tmp_path: Path) -> None:
    port = free_port()
    served = Served(tmp_path / "specgate.yaml", _base(port), "--watch-config")
    try:
        served.path.write_text(yaml.safe_dump(_with_route(port, "chat")))  # polled every 2 s
        _wait_for(lambda: served.routes() == {"code", "chat", "default"}, 15)
        # Written elsewhere and renamed over the config, as editors and Kubernetes ConfigMaps do.
        staged = tmp_path / "specgate.yaml.new"
        staged.write_text(yaml.safe_dump(_with_route(port, "chat", "rag")))
        staged.replace(served.path)
        _wait_for(lambda: served.routes() == {"code", "chat", "rag", "default"}, 15)
        served.path.write_text("routing: {routes: [")  # broken: rejected, the last good config serves on
        time.sleep(4)
        assert served.routes() == {"code", "chat", "rag", "default"}
    finally:
        log = served.stop()
    assert '"trigger":"file-watch"' in log and '"msg":"config reload rejected"' in log


def test_a_scrape_in_flight_for_a_removed_endpoint_records_nothing_after_the_reload(
    live: Callable[[dict[str, Any]], Live],
) -> None:
    """Its /metrics answers later than the scrape waits (a timeout, every round): the round in flight when the reload
    removes it ends after the swap, and must not add to (or bring back) the series of an endpoint that is gone."""
    from tests.fault_upstream import FaultUpstream

    stays, goes = FaultUpstream("ok"), FaultUpstream("slow_metrics", delay_s=2.0)
    try:
        base = _base(free_port())
        base["pools"] = [{"name": "p", "model": "m", "endpoints": [stays.url, goes.url]}]
        base["scrape"] = {"interval_s": 0.1, "timeout_s": 0.8}
        gw = live(copy.deepcopy(base))
        series = f'specgate_engine_scrape_failures_total{{endpoint="{goes.url}",pool="p",reason="timeout"}}'

        def failures() -> float:
            line = next((x for x in httpx.get(f"{gw.url}/metrics").text.splitlines() if x.startswith(series)), None)
            return float(line.rsplit(" ", 1)[1]) if line else 0.0

        deadline = time.monotonic() + 10
        while failures() < 1:
            assert time.monotonic() < deadline, "the slow endpoint's scrapes never timed out"
            time.sleep(0.1)
        time.sleep(0.3)  # the next round is in flight (it waits 0.8 s for the slow endpoint)
        base["pools"][0]["endpoints"] = [stays.url]
        assert gw.reload(base).json()["result"] == "applied"
        after_reload = failures()
        time.sleep(1.5)  # the round in flight at the reload has timed out by now
        assert failures() == after_reload
        assert f'endpoint="{goes.url}"' not in "\n".join(
            x for x in httpx.get(f"{gw.url}/metrics").text.splitlines() if x.startswith("specgate_endpoint_healthy")
        )
    finally:
        stays.close()
        goes.close()
