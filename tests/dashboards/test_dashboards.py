from __future__ import annotations

import json
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

import pytest
import yaml
from specgate.dashboards import build as dashboards_build
from specgate.dashboards.build import (
    COMMITTED,
    DASHBOARDS,
    NotASourceCheckout,
    build_all,
    check,
    known_metrics,
    query_metrics,
    source_dir,
)

ROOT = Path(__file__).resolve().parents[2]


def test_committed_dashboards_are_fresh_and_name_known_metrics() -> None:
    assert check() == []


def test_check_catches_stale_json_and_unknown_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_all(tmp_path)
    assert check(tmp_path) == []
    (tmp_path / "pools.json").write_text("{}")
    assert any("stale" in p for p in check(tmp_path))
    build_all(tmp_path)
    original = DASHBOARDS["pools"]

    def broken() -> dict:
        d = original()
        d["panels"][0]["targets"][0]["expr"] = "rate(specgate_no_such_metric_total[5m])"
        return d

    monkeypatch.setitem(DASHBOARDS, "pools", broken)
    assert any("specgate_no_such_metric_total" in p for p in check(tmp_path))


def test_build_writes_the_checkout_and_refuses_an_installed_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert source_dir() == ROOT / "dashboards" / "json"
    # As installed from a wheel: site-packages/specgate/dashboards/build.py, no pyproject.toml above it.
    installed = tmp_path / "site-packages" / "specgate" / "dashboards"
    installed.mkdir(parents=True)
    monkeypatch.setattr(dashboards_build, "__file__", str(installed / "build.py"))
    with pytest.raises(NotASourceCheckout, match="not run from a source checkout"):
        build_all()
    assert not (installed / "json").exists()
    assert len(build_all(tmp_path / "out")) == len(DASHBOARDS)  # an explicit folder still works


def test_package_data_is_the_committed_files() -> None:
    """What `importlib.resources` finds is the checkout's files (a wheel carries the same; .ci/smoke_wheel.sh)."""
    package = files("specgate.dashboards")
    assert (package / "alerts.yaml").read_text() == (ROOT / "dashboards" / "alerts.yaml").read_text()
    for name in ("dashboards/specgate.yaml", "datasources/prometheus.yaml"):
        assert (package / "provisioning" / name).read_text() == (
            ROOT / "dashboards" / "provisioning" / name
        ).read_text()
    assert sorted(p.name for p in COMMITTED.iterdir()) == sorted(f"{name}.json" for name in DASHBOARDS)


def test_dashboards_use_the_datasource_variable() -> None:
    for name in DASHBOARDS:
        d = json.loads((COMMITTED / f"{name}.json").read_text())
        assert "__inputs" not in d
        assert d["templating"]["list"][0] == {
            "name": "datasource",
            "type": "datasource",
            "query": "prometheus",
            "label": "Data source",
            "current": {},
            "hide": 0,
        }
        for panel in d["panels"]:
            assert panel["datasource"]["uid"] == "${datasource}"
            assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"])
    speculation = DASHBOARDS["speculation-control"]()
    assert {"specgate_route_k", "specgate_route_acceptance_rate_estimate"} <= query_metrics(speculation)


def test_alert_rules_name_known_metrics() -> None:
    rules = yaml.safe_load((ROOT / "dashboards" / "alerts.yaml").read_text())
    names = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    assert {
        "SpecgateNoHealthyEndpoint",
        "SpecgateHighErrorRate",
        "SpecgateControllerStalled",
        "SpecgateAcceptanceBelowBreakEven",
        "SpecgateAcceptanceDrift",
    } <= names
    import re

    used = {m for g in rules["groups"] for r in g["rules"] for m in re.findall(r"specgate_[a-z_]+", r["expr"])}
    assert used <= known_metrics()


@pytest.mark.skipif(
    shutil.which("promtool") is None and not __import__("os").environ.get("CI"),
    reason="promtool (Debian package prometheus) not installed; .ci/run installs it",
)
def test_promtool_checks_and_unit_tests_the_rules() -> None:
    checked = subprocess.run(
        ["promtool", "check", "rules", str(ROOT / "dashboards" / "alerts.yaml")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        ["promtool", "test", "rules", str(ROOT / "tests" / "dashboards_alerts_test.yaml")],
        capture_output=True,
        text=True,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
