"""`specgate serve --workers 2` with a real Redis: two processes on one port, one controller leader between them, one
rate limit, one /metrics with both workers' series; SIGHUP reaches both; without Redis it is refused."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import free_port
from tests.redis_server import RedisServer

KEY = "sk-workers-0123456789"


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.stop()


def _config(port: int, redis_url: str | None, routes: list[str]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "server": {"port": port},
        # Nothing listens there: requests that pass the limit get 503, the limit's own answers are 429.
        "pools": [{"name": "p", "model": "m", "endpoints": [f"http://127.0.0.1:{free_port()}"]}],
        "routing": {"routes": [{"name": r} for r in routes]},
        "controller": {"tick_s": 0.5},
        "discovery": {"probe": False},
        "auth": {
            "api_keys": [{"sha256": hashlib.sha256(KEY.encode()).hexdigest(), "tenant": "acme"}],
            "tenants": {"acme": {"requests_per_min": 12}},
        },
    }
    if redis_url is not None:
        data["state"] = {"redis_url": redis_url, "lease_ttl_s": 3}
    return data


def _fresh(url: str, path: str, **kw: Any) -> httpx.Response:
    """One request on a new connection: the kernel hands each to whichever worker accepts it."""
    with httpx.Client(timeout=10) as client:
        return client.request(kw.pop("method", "GET"), f"{url}{path}", **kw)


def _wait(check: Any, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_two_workers_share_one_leader_one_limit_and_one_metrics_view(redis: RedisServer, tmp_path: Path) -> None:
    port = free_port()
    path = tmp_path / "specgate.yaml"
    data = _config(port, redis.url, ["code"])
    path.write_text(yaml.safe_dump(data))
    proc = subprocess.Popen(
        [sys.executable, "-m", "specgate", "serve", "--config", str(path), "--workers", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        replicas: dict[str, dict[str, Any]] = {}

        def both_settled() -> bool:
            try:
                status = _fresh(url, "/admin/controller").json()
            except httpx.HTTPError:
                return False
            replicas[status["replica_id"]] = status
            return len(replicas) == 2 and all(s["role"] in ("leader", "follower") for s in replicas.values())

        _wait(both_settled, 60)
        for _ in range(20):  # the latest view of each worker
            status = _fresh(url, "/admin/controller").json()
            replicas[status["replica_id"]] = status
        assert sorted(s["role"] for s in replicas.values()) == ["follower", "leader"], replicas
        assert len({s["lease_holder"] for s in replicas.values()}) == 1

        # 30 requests over both workers, 12 a minute allowed for the tenant: exactly 12 pass (they then get 503 from
        # the dead endpoint), the rest 429, whichever worker took them.
        body = {"model": "m", "prompt": "hi", "max_tokens": 4}
        # The limit's windows are fixed minutes of the clock: start early in one (a run slowed down by a busy machine
        # once straddled two and let more through).
        if time.time() % 60 > 30:
            time.sleep(60 - time.time() % 60 + 0.2)
        codes = [
            _fresh(url, "/v1/completions", method="POST", json=body, headers={"authorization": f"Bearer {KEY}"})
            for _ in range(30)
        ]
        assert sum(r.status_code == 429 for r in codes) == 18, [r.status_code for r in codes]

        # /metrics from either worker shows both, labelled by slot; the requests sum to the 30 sent.
        def requests_by_worker() -> dict[str, float]:
            text = _fresh(url, "/metrics").text
            out: dict[str, float] = {}
            for family in text_string_to_metric_families(text):
                if family.name == "specgate_requests":
                    for s in family.samples:
                        if s.name == "specgate_requests_total":
                            out[s.labels["worker"]] = out.get(s.labels["worker"], 0) + s.value
            return out

        _wait(lambda: sum(requests_by_worker().values()) == 30, 10)
        assert set(requests_by_worker()) == {"0", "1"}

        # SIGHUP to the parent reaches both workers: each reloads in place (same replica ids, a new route).
        path.write_text(yaml.safe_dump(_config(port, redis.url, ["code", "chat"]) | {"pools": data["pools"]}))
        proc.send_signal(signal.SIGHUP)
        seen: dict[str, set[str]] = {}

        def both_reloaded() -> bool:
            status = _fresh(url, "/admin/controller").json()
            routes = set(_fresh(url, "/admin/routes").json()["routes"])
            seen[status["replica_id"]] = routes
            return len(seen) == 2 and all("chat" in r for r in seen.values())

        _wait(both_reloaded, 30)
        assert set(seen) == set(replicas)  # reloaded in place, not restarted
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    log = err.decode()
    assert log.count('"msg":"config reloaded"') >= 2, log[-3000:]


def test_more_than_one_worker_without_redis_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "specgate.yaml"
    path.write_text(yaml.safe_dump(_config(free_port(), None, ["code"])))
    done = subprocess.run(
        [sys.executable, "-m", "specgate", "serve", "--config", str(path), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--workers 2 needs a shared state store" in done.stderr
