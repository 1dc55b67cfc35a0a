"""A real Prometheus scrapes a gateway serving traffic on real vLLM (and the engine itself): every dashboard
panel's query returns data through Prometheus's HTTP API, and the alert rules load and evaluate."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from specgate.backends.launcher import EngineSpec
from specgate.dashboards.build import DASHBOARDS

from tests.conftest import GatewayServer, engine_pool, free_port
from tests.receiver import WebhookReceiver
from tests.runtime.test_controller_vllm import body

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def prometheus_bin() -> str:
    found = shutil.which("prometheus")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("prometheus is missing on CI (.ci/run installs the Debian package)")
        pytest.skip("prometheus not installed (apt-get install prometheus)")
    return found


def start_prometheus(binary: str, tmp: Path, targets: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(ROOT / "dashboards" / "alerts.yaml")],
        "scrape_configs": [{"job_name": job, "static_configs": [{"targets": [t]}]} for job, t in targets.items()],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    log = (tmp / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("prometheus did not start: " + (tmp / "prometheus.log").read_text()[-2000:])


async def traffic(url: str, seconds: float) -> None:
    rng = random.Random(3)
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=60) as http:

        async def one(route: str, kind: str, stream: bool) -> None:
            req = {**body(kind, rng), "stream": stream}
            r = await http.post(f"{url}/v1/completions", json=req, headers={"x-specgate-route": route})
            assert r.status_code == 200

        while time.monotonic() < deadline:
            await asyncio.gather(
                one("code", "copy", True),
                one("code", "copy", False),
                one("chat", "random", True),
                one("code", "copy", True),
            )


@pytest.fixture
def stack(
    engine: EngineSpec, start_gateway: Callable[..., GatewayServer], prometheus_bin: str, tmp_path: Path
) -> Iterator[tuple[GatewayServer, str]]:
    receiver = WebhookReceiver()
    gw = start_gateway(
        [engine_pool(engine)],
        routing={"routes": [{"name": "code"}, {"name": "chat"}], "default_route": "chat", "allow_route_header": True},
        # a high exploration share: every route runs at both k = 0 and k > 0, for the measured speed-up
        controller={"tick_s": 0.5, "cost_prior": "cpu", "min_dwell_s": 1.0, "explore_share": 0.3},
        alerts={
            "receivers": [{"name": "ops", "url": receiver.url}],
            "drift": {"min_trials": 20, "baseline_windows": 2},
        },
    )
    gw_target = gw.url.removeprefix("http://")
    proc, url = start_prometheus(
        prometheus_bin, tmp_path, {"specgate": gw_target, "vllm": f"{engine.host}:{engine.port}"}
    )
    try:
        yield gw, url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        receiver.close()


def test_every_dashboard_query_returns_data(stack: tuple[GatewayServer, str]) -> None:
    gw, prom = stack
    asyncio.run(traffic(gw.url, 25))
    time.sleep(3)  # a few more scrapes after the last request
    empty = []
    for make in DASHBOARDS.values():
        dashboard = make()
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                expr = target["expr"].replace("$__rate_interval", "1m")
                r = httpx.get(f"{prom}/api/v1/query", params={"query": expr}, timeout=10).json()
                assert r["status"] == "success", (expr, r)
                if not r["data"]["result"]:
                    empty.append(f"{dashboard['uid']} / {panel['title']}: {expr}")
    assert not empty, "queries without data:\n" + "\n".join(empty)
    rules = httpx.get(f"{prom}/api/v1/rules", timeout=10).json()["data"]["groups"]
    loaded = {rule["name"]: rule["health"] for group in rules for rule in group["rules"]}
    assert "SpecgateRouteDriftDetected" in loaded and "SpecgateAcceptanceDrift" in loaded
    assert set(loaded.values()) == {"ok"}, loaded
