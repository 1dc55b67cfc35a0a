"""docker-compose.yml and the deploy configs: validated without a Docker engine (none runs here)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from specgate.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]
ADMIN = "test-admin-key-0123456789"


@pytest.mark.skipif(
    shutil.which("docker-compose") is None and not os.environ.get("CI"),
    reason="docker-compose (Debian package) not installed; .ci/run installs it",
)
@pytest.mark.parametrize("profile", ["gpu", "cpu"])
def test_compose_file_is_valid(profile: str) -> None:
    command = ["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "--profile", profile, "config"]
    env = {k: v for k, v in os.environ.items() if k != "SPECGATE_ADMIN_KEY"}
    refused = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    assert refused.returncode != 0 and "SPECGATE_ADMIN_KEY" in refused.stderr  # no stack without an admin key
    out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env={**env, "SPECGATE_ADMIN_KEY": ADMIN})
    assert out.returncode == 0, out.stderr
    services = yaml.safe_load(out.stdout)["services"]
    assert {"gateway", "redis", "prometheus", "grafana", "alertmanager", f"vllm-{profile}"} <= set(services)
    engine = services[f"vllm-{profile}"]
    assert "--scheduler-cls=specgate.backends.vllm_scheduler.SpecCapScheduler" in engine["command"]
    assert "--per-request-spec-decode-metrics=detailed" in engine["command"]


def test_compose_references_files_that_exist() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert (ROOT / source).exists(), source
        build = service.get("build")
        if build:
            assert (ROOT / build["dockerfile"]).exists()


@pytest.mark.parametrize("dockerfile", ["Dockerfile", "Dockerfile.vllm-cpu"])
def test_dockerfiles_copy_every_package_folder(dockerfile: str) -> None:
    """`pip install .` in the image needs every folder pyproject.toml maps onto `specgate.*`; COPY sources exist."""
    package_dirs = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
    )
    copied = set()
    for line in (ROOT / dockerfile).read_text().splitlines():
        if line.startswith("COPY ") and "--from=" not in line:  # not a copy from an earlier build stage
            *sources, _dest = line.split()[1:]
            for source in sources:
                path = ROOT / source  # an empty folder is not in a clone (git keeps no folders)
                assert path.is_file() or any(p.is_file() for p in path.rglob("*")), f"{dockerfile}: COPY {source}"
                copied.add(source.rstrip("/"))
    assert package_dirs <= copied, f"{dockerfile} does not copy {sorted(package_dirs - copied)}"
    assert {"pyproject.toml", "setup.py", "README.md"} <= copied


def test_gateway_config_for_compose_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPECGATE_ADMIN_KEY", raising=False)
    with pytest.raises(ConfigError, match="SPECGATE_ADMIN_KEY is not set"):
        load_config(ROOT / "deploy" / "specgate-compose.yaml")
    monkeypatch.setenv("SPECGATE_ADMIN_KEY", ADMIN)
    config = load_config(ROOT / "deploy" / "specgate-compose.yaml")
    assert config.admin_key is not None and config.admin_key.get_secret_value() == ADMIN
    assert {p.name for p in config.pools} == {"gpu", "cpu"}
    prom = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    targets = [t for job in prom["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    assert "gateway:8000" in targets


def _k8s_docs() -> list[dict]:
    docs = []
    for path in sorted((ROOT / "deploy" / "k8s").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def test_kubernetes_manifests_fit_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECGATE_ADMIN_KEY", ADMIN)
    from specgate.gateway.app import create_app

    from specgate.config import validate_config

    docs = _k8s_docs()
    by_kind: dict[str, list[dict]] = {}
    for doc in docs:
        assert {"apiVersion", "kind"} <= set(doc), doc
        by_kind.setdefault(doc["kind"], []).append(doc)
    kustomization = next(d for d in docs if d["kind"] == "Kustomization")
    assert all((ROOT / "deploy" / "k8s" / name).exists() for name in kustomization["resources"])
    # The config in the Secret is a valid gateway config with a Redis state store on the Redis Service.
    secret = next(d for d in by_kind["Secret"] if d["metadata"]["name"] == "specgate-config")
    config = validate_config(yaml.safe_load(secret["stringData"]["config.yaml"]))
    services = {s["metadata"]["name"]: s for s in by_kind["Service"]}
    assert config.state.redis_url is not None
    redis_host = config.state.redis_url.split("//")[1].split(":")[0]
    assert redis_host in services
    gateway = next(d for d in by_kind["Deployment"] if d["metadata"]["name"] == "specgate")
    spec = gateway["spec"]
    assert spec["replicas"] >= 2
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    (container,) = spec["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["SPECGATE_ADMIN_KEY"]["valueFrom"]["secretKeyRef"]["name"] not in {
        d["metadata"]["name"] for d in docs if "metadata" in d
    }
    assert container["args"][:2] == ["serve", "--config"]
    mount = container["volumeMounts"][0]["mountPath"]
    assert container["args"][2].startswith(mount)
    # the probes hit endpoints the app serves
    paths = {route.path for route in create_app(config).routes}
    assert container["readinessProbe"]["httpGet"]["path"] in paths
    assert container["livenessProbe"]["httpGet"]["path"] in paths
    assert services["specgate"]["spec"]["selector"].items() <= spec["template"]["metadata"]["labels"].items()
    pdb = by_kind["PodDisruptionBudget"][0]
    assert pdb["spec"]["minAvailable"] < spec["replicas"]
