"""docker-compose.yml and the deploy configs: validated without a Docker engine (none runs here)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gateway.config import load_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(
    shutil.which("docker-compose") is None and not os.environ.get("CI"),
    reason="docker-compose (Debian package) not installed; .ci/run installs it",
)
@pytest.mark.parametrize("profile", ["gpu", "cpu"])
def test_compose_file_is_valid(profile: str) -> None:
    out = subprocess.run(
        ["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "--profile", profile, "config"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    services = yaml.safe_load(out.stdout)["services"]
    assert {"gateway", "redis", "prometheus", "grafana", "alertmanager", f"vllm-{profile}"} <= set(services)
    engine = services[f"vllm-{profile}"]
    assert "--scheduler-cls=backends.vllm_scheduler.SpecCapScheduler" in engine["command"]
    assert "--per-request-spec-decode-metrics=summary" in engine["command"]


def test_compose_references_files_that_exist() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert (ROOT / source).exists(), source
        build = service.get("build")
        if build:
            assert (ROOT / build["dockerfile"]).exists()


def test_gateway_config_for_compose_is_valid() -> None:
    config = load_config(ROOT / "deploy" / "specgate-compose.yaml")
    assert {p.name for p in config.pools} == {"gpu", "cpu"}
    prom = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    targets = [t for job in prom["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    assert "gateway:8000" in targets
