"""The shipped Alertmanager config (deploy/alertmanager.yml) on a real Alertmanager (the Debian package): it loads,
and while a pool has no healthy endpoint the gateway's drift alert for a route on that pool is inhibited, while a
route on another pool still alerts. Alerts go in through the gateway's own push (runtime/alerts.py)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from specgate.backends.webhooks import Alert
from specgate.runtime.alerts import AlertDispatcher
from specgate.runtime.metrics import GatewayMetrics

from specgate.config import AlertsConfig
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing on CI (.ci/run installs prometheus-alertmanager)")
        pytest.skip(f"{name} not installed (apt-get install prometheus-alertmanager)")
    return found


def test_the_shipped_config_passes_amtool() -> None:
    done = subprocess.run(
        [_binary("amtool"), "check-config", str(ROOT / "deploy" / "alertmanager.yml")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    binary = _binary("prometheus-alertmanager")
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={ROOT / 'deploy' / 'alertmanager.yml'}",
            f"--storage.path={tmp_path}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError(f"alertmanager did not start: {proc.communicate()[1].decode()[-2000:]}")
        time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


def _alert(name: str, **labels: str) -> Alert:
    return Alert(
        name, {"severity": "warning", "source": "specgate", **labels}, {"summary": name}, "firing", time.time()
    )


def _states(url: str) -> dict[tuple[str, str], dict[str, Any]]:
    alerts = httpx.get(f"{url}/api/v2/alerts", timeout=5).json()
    return {(a["labels"]["alertname"], a["labels"].get("route", "")): a["status"] for a in alerts}


def test_a_down_pool_inhibits_its_routes_drift_alerts_only(alertmanager: str) -> None:
    async def push() -> None:
        config = AlertsConfig.model_validate({"alertmanager": {"url": alertmanager, "resend_s": 60}})
        dispatcher = AlertDispatcher(config, GatewayMetrics())
        await dispatcher.start()
        for alert in (
            _alert("SpecgateNoHealthyEndpoint", pool="cpu"),
            _alert("SpecgateRouteAcceptanceDrift", route="code", pool="cpu", kind="shift"),
            _alert("SpecgateRouteAcceptanceDrift", route="chat", pool="gpu", kind="shift"),
        ):
            dispatcher.publish(alert)
        deadline = time.monotonic() + 10
        while len((await asyncio.to_thread(httpx.get, f"{alertmanager}/api/v2/alerts", timeout=5)).json()) < 3:
            assert time.monotonic() < deadline, "alerts did not arrive"
            await asyncio.sleep(0.1)
        await dispatcher.stop()

    asyncio.run(push())
    deadline = time.monotonic() + 15
    while True:  # inhibition is evaluated as alerts arrive
        states = _states(alertmanager)
        code = states[("SpecgateRouteAcceptanceDrift", "code")]
        if code["state"] == "suppressed" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert code["state"] == "suppressed" and code["inhibitedBy"], states
    assert states[("SpecgateRouteAcceptanceDrift", "chat")]["state"] == "active"
    assert states[("SpecgateNoHealthyEndpoint", "")]["state"] == "active"
    # The grouping the config promises: by alert name, route and pool.
    config = yaml.safe_load((ROOT / "deploy" / "alertmanager.yml").read_text())
    assert config["route"]["group_by"] == ["alertname", "route", "pool"]
