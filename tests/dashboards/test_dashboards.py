from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from specgate.dashboards.build import DASHBOARDS, OUT, build_all, check, known_metrics, query_metrics

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


def test_dashboards_use_the_datasource_variable() -> None:
    for name in DASHBOARDS:
        d = json.loads((OUT / f"{name}.json").read_text())
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
