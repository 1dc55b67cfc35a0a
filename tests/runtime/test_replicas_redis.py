"""Several gateway processes on one real Redis: shared observations, one leader, failover on a real process
kill, rate limits across replicas, a Redis outage without failed requests, API and admin keys."""

from __future__ import annotations

import asyncio
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
from specgate.backends.launcher import EngineSpec
from specgate.gateway.auth import hash_key

from tests.conftest import MODEL, engine_pool, free_port
from tests.redis_server import RedisServer

pytestmark = pytest.mark.slow

KEY, OTHER_KEY, ADMIN = "sk-acme-test-key", "sk-globex-test-key", "admin-secret-0123456789"
LEASE_S = 1.0
COPY = "import os\nimport sys\nimport os\nimport sys\nimport os\nimport"


class Replica:
    def __init__(self, config: dict[str, Any], tmp: Path, name: str) -> None:
        self.port = free_port()
        self.name = name
        path = tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump({**config, "server": {"port": self.port}}))
        self.log = (tmp / f"{name}.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "specgate", "serve", "--config", str(path)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parents[2],
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, f"replica {self.name} exited"
            time.sleep(0.1)
        raise RuntimeError(f"replica {self.name} did not start")

    def status(self) -> dict[str, Any]:
        return httpx.get(f"{self.url}/admin/controller", headers={"authorization": f"Bearer {ADMIN}"}, timeout=5).json()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def replicas(engine: EngineSpec, redis: RedisServer, tmp_path: Path) -> Iterator[list[Replica]]:
    config = {
        "pools": [engine_pool(engine)],
        "routing": {"routes": [{"name": "code"}, {"name": "chat"}], "default_route": "code"},
        "controller": {"tick_s": 0.25, "cost_prior": "cpu"},
        "state": {"redis_url": redis.url, "lease_ttl_s": LEASE_S, "timeout_s": 0.3},
        "auth": {
            "api_keys": [
                {"sha256": hash_key(KEY), "tenant": "acme"},
                {"sha256": hash_key(OTHER_KEY), "tenant": "globex"},
            ],
            "tenants": {"acme": {"requests_per_min": 12}},
        },
        "admin_key": ADMIN,
        "logging": {"level": "warning"},
    }
    group = [Replica(config, tmp_path, f"r{i}") for i in range(3)]
    try:
        for r in group:
            r.wait_ready()
        yield group
    finally:
        for r in group:
            r.kill()


def leaders(group: list[Replica]) -> list[Replica]:
    return [r for r in group if r.proc.poll() is None and r.status()["leader"]]


def wait_for(predicate: Any, timeout_s: float, step_s: float = 0.05) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if predicate():
            return time.monotonic() - started
        time.sleep(step_s)
    return None


def complete(replica: Replica, key: str = OTHER_KEY, max_tokens: int = 8) -> httpx.Response:
    return httpx.post(
        f"{replica.url}/v1/completions",
        json={"model": MODEL, "prompt": COPY, "max_tokens": max_tokens, "temperature": 0},
        headers={"authorization": f"Bearer {key}"},
        timeout=60,
    )


def test_one_leader_that_sees_every_replicas_traffic(replicas: list[Replica]) -> None:
    assert wait_for(lambda: len(leaders(replicas)) == 1, 10)
    samples = []
    for _ in range(40):  # ~ many ticks: never two leaders
        samples.append(len(leaders(replicas)))
        time.sleep(0.1)
    assert max(samples) == 1 and min(samples) == 1
    (leader,) = leaders(replicas)
    followers = [r for r in replicas if r is not leader]
    holders = {r.status()["lease_holder"] for r in replicas}
    assert len(holders) == 1 and holders.pop().startswith(leader.status()["replica_id"] + ":")
    for _ in range(6):
        for f in followers:
            assert complete(f, max_tokens=24).status_code == 200

    def leader_saw_it() -> bool:
        routes = httpx.get(f"{leader.url}/admin/routes", headers={"authorization": f"Bearer {ADMIN}"}).json()
        return routes["routes"]["code"]["last_observation_age_s"] is not None

    assert wait_for(leader_saw_it, 5), "observations sent to followers reached the leader"
    # followers serve the leader's view and the same table version
    assert wait_for(lambda: len({r.status()["decision_table_version"] for r in replicas}) == 1, 5)
    shared = httpx.get(f"{followers[0].url}/admin/routes", headers={"authorization": f"Bearer {ADMIN}"}).json()
    assert shared["served_by"] == "leader-state" and shared["routes"]["code"]["last_observation_age_s"] is not None


def test_a_follower_takes_over_within_two_lease_periods(replicas: list[Replica]) -> None:
    assert wait_for(lambda: len(leaders(replicas)) == 1, 10)
    (leader,) = leaders(replicas)
    killed_at = time.monotonic()
    leader.kill()
    rest = [r for r in replicas if r is not leader]
    took = wait_for(lambda: len(leaders(rest)) == 1, 4 * LEASE_S)
    assert took is not None, "no follower took over"
    assert time.monotonic() - killed_at <= 2 * LEASE_S + 0.5  # two lease periods, plus one tick and polling
    (new,) = leaders(rest)
    assert new.status()["lease_holder"] != leader.name
    # the survivors keep serving
    for r in rest:
        assert complete(r).status_code == 200


def test_a_tenant_limit_holds_across_replicas(replicas: list[Replica]) -> None:
    # Limits are fixed one-minute windows: start well inside one, so all requests fall in the same window.
    wait_for(lambda: time.time() % 60 < 45, 20, step_s=0.5)
    codes: list[int] = []
    limited: list[httpx.Response] = []
    for i in range(18):
        r = complete(replicas[i % 3], key=KEY, max_tokens=1)
        codes.append(r.status_code)
        if r.status_code == 429:
            limited.append(r)
    assert codes.count(200) == 12 and codes.count(429) == 6
    r = limited[0]
    assert r.json()["error"]["code"] == "rate_limit_exceeded" and int(r.headers["retry-after"]) >= 1
    assert r.headers["x-ratelimit-limit-requests"] == "12" and r.headers["x-ratelimit-remaining-requests"] == "0"
    ok = complete(replicas[0], key=OTHER_KEY)  # another tenant is not affected
    assert ok.status_code == 200


def test_redis_outage_fails_no_request_and_state_converges(replicas: list[Replica], redis: RedisServer) -> None:
    assert wait_for(lambda: len(leaders(replicas)) == 1, 10)

    async def traffic(seconds: float) -> list[int]:
        codes: list[int] = []
        deadline = time.monotonic() + seconds
        async with httpx.AsyncClient(timeout=60) as http:

            async def one(r: Replica) -> None:
                resp = await http.post(
                    f"{r.url}/v1/completions",
                    json={"model": MODEL, "prompt": COPY, "max_tokens": 8, "temperature": 0},
                    headers={"authorization": f"Bearer {KEY if len(codes) % 5 == 0 else OTHER_KEY}"},
                )
                codes.append(resp.status_code)

            while time.monotonic() < deadline:
                await asyncio.gather(*(one(r) for r in replicas))
        return codes

    async def scenario() -> list[int]:
        task = asyncio.create_task(traffic(8))
        await asyncio.sleep(1.5)
        await asyncio.to_thread(redis.stop)
        await asyncio.sleep(3)
        await asyncio.to_thread(redis.start)
        return await task

    codes = asyncio.run(scenario())
    assert codes and all(c in (200, 429) for c in codes), sorted(set(codes))
    assert codes.count(200) > len(codes) // 2
    # back together: store up everywhere, one leader, one table version
    assert wait_for(lambda: all(r.status()["state_store_up"] for r in replicas), 10)
    assert wait_for(lambda: len(leaders(replicas)) == 1, 10)
    assert wait_for(lambda: len({r.status()["decision_table_version"] for r in replicas}) == 1, 10)
    metrics = httpx.get(f"{replicas[0].url}/metrics").text
    assert "specgate_state_store_errors_total" in metrics


def test_keys_are_required_and_admin_needs_the_admin_key(replicas: list[Replica]) -> None:
    r = replicas[0]
    body = {"model": MODEL, "prompt": "x", "max_tokens": 1}
    missing = httpx.post(f"{r.url}/v1/completions", json=body)
    assert missing.status_code == 401 and missing.json()["error"]["type"] == "authentication_error"
    wrong = httpx.post(f"{r.url}/v1/completions", json=body, headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert httpx.get(f"{r.url}/v1/models").status_code == 401
    assert httpx.get(f"{r.url}/v1/models", headers={"authorization": f"Bearer {KEY}"}).status_code == 200
    assert httpx.get(f"{r.url}/admin/routes").status_code == 403
    assert httpx.get(f"{r.url}/admin/routes", headers={"authorization": f"Bearer {KEY}"}).status_code == 403
    log = Path(r.log.name).read_text()
    assert KEY not in log and ADMIN not in log and "import os" not in log
