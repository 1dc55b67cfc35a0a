"""Grafana dashboards as code: plain dicts, written as JSON, with a check mode for CI.

`specgate dashboards build` writes `dashboards/json/*.json` into the source checkout (a developer command);
`specgate dashboards check` fails when the committed JSON differs from what this code builds, or when a query
names a metric that neither specgate nor vLLM exports. `check` reads the JSON as package data
(`importlib.resources`), so it works the same in a checkout, an editable install and an installed wheel.
Every dashboard has a `datasource` variable (type datasource) and its panels use `${datasource}`, so file
provisioning works (no `__inputs`).
"""

from __future__ import annotations

import json
import os
import re
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from specgate.backends.vllm_metrics import ENGINE_SERIES

__all__ = [
    "COMMITTED",
    "DASHBOARDS",
    "VLLM_METRICS",
    "NotASourceCheckout",
    "build_all",
    "check",
    "known_metrics",
    "query_metrics",
    "source_dir",
]

# The committed JSON, read as package data of `specgate.dashboards` (checkout, editable install or wheel).
COMMITTED: Traversable = files("specgate.dashboards") / "json"
DS = {"type": "prometheus", "uid": "${datasource}"}

# vLLM's own series the dashboards may read: the ones specgate knows (one list, in backends/vllm_metrics.py).
VLLM_METRICS = ENGINE_SERIES


def _panel(
    pid: int,
    title: str,
    exprs: list[tuple[str, str]],
    x: int,
    y: int,
    unit: str = "short",
    w: int = 12,
    h: int = 8,
    description: str = "",
) -> dict[str, Any]:
    return {
        "id": pid,
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DS,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(65 + i), "datasource": DS, "expr": e, "legendFormat": legend}
            for i, (e, legend) in enumerate(exprs)
        ],
    }


def _schedule_matrix(pid: int, x: int, y: int) -> dict[str, Any]:
    """The k schedules in force as a table: a row per route, a column per batch size (its k from there on)."""
    return {
        "id": pid,
        "type": "table",
        "title": "k schedule in force: k by batch size, per route",
        "description": "What requests carry now: the scheduler plugin applies the k of the engine's live batch at "
        "every step; pools without it read the k at the batch a request joins. Columns are the batch sizes where "
        "k may change.",
        "datasource": DS,
        "gridPos": {"x": x, "y": y, "w": 24, "h": 8},
        "fieldConfig": {"defaults": {"unit": "short"}, "overrides": []},
        "targets": [
            {
                "refId": "A",
                "datasource": DS,
                "expr": "max by (route, batch) (specgate_route_schedule_k)",
                "format": "table",
                "instant": True,
            }
        ],
        "transformations": [
            {
                "id": "groupingToMatrix",
                "options": {"columnField": "batch", "rowField": "route", "valueField": "Value"},
            },
        ],
    }


def _quantile(q: float, metric: str, by: str = "le, pool") -> str:
    return f"histogram_quantile({q}, sum by ({by}) (rate({metric}[$__rate_interval])))"


def _dashboard(uid: str, title: str, panels: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "tags": ["specgate"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "type": "datasource",
                    "query": "prometheus",
                    "label": "Data source",
                    "current": {},
                    "hide": 0,
                }
            ]
        },
        "panels": panels,
    }


def gateway_overview() -> dict[str, Any]:
    r = "[$__rate_interval]"
    return _dashboard(
        "specgate-overview",
        "specgate / Gateway overview",
        [
            _panel(
                1,
                "Requests/s by route",
                [(f"sum by (route) (rate(specgate_route_requests_total{r}))", "{{route}}")],
                0,
                0,
                "reqps",
            ),
            _panel(
                2,
                "Responses/s by status",
                [(f"sum by (status) (rate(specgate_requests_total{r}))", "{{status}}")],
                12,
                0,
                "reqps",
            ),
            _panel(
                3,
                "Request latency p50 / p99 by pool",
                [
                    (
                        _quantile(0.5, "specgate_request_duration_seconds_bucket"),
                        "p50 {{pool}}",
                    ),
                    (
                        _quantile(0.99, "specgate_request_duration_seconds_bucket"),
                        "p99 {{pool}}",
                    ),
                ],
                0,
                8,
                "s",
            ),
            _panel(
                4,
                "Time to first token p50 / p99",
                [
                    (
                        _quantile(0.5, "specgate_time_to_first_token_seconds_bucket"),
                        "p50 {{pool}}",
                    ),
                    (
                        _quantile(0.99, "specgate_time_to_first_token_seconds_bucket"),
                        "p99 {{pool}}",
                    ),
                ],
                12,
                8,
                "s",
            ),
            _panel(
                5,
                "Upstream errors and retries",
                [
                    (f"sum by (reason) (rate(specgate_upstream_errors_total{r}))", "error {{reason}}"),
                    (f"sum(rate(specgate_upstream_retries_total{r}))", "retries"),
                ],
                0,
                16,
                "ops",
            ),
            _panel(
                6,
                "In flight / client disconnects",
                [
                    ("sum by (api) (specgate_requests_in_flight)", "in flight {{api}}"),
                    (f"sum(rate(specgate_client_disconnects_total{r}))", "disconnects/s"),
                ],
                12,
                16,
            ),
            _panel(
                7,
                "Time per output token p50 / p99 by route (streams)",
                [
                    (_quantile(0.5, "specgate_time_per_output_token_seconds_bucket", "le, route"), "p50 {{route}}"),
                    (_quantile(0.99, "specgate_time_per_output_token_seconds_bucket", "le, route"), "p99 {{route}}"),
                ],
                0,
                24,
                "s",
            ),
            _panel(
                8,
                "Error ratio by route (5xx)",
                [
                    (
                        # `or ... * 0`: a route without any 5xx shows 0, not a gap
                        f'(sum by (route) (rate(specgate_requests_total{{status=~"5.."}}{r})) '
                        f"or sum by (route) (rate(specgate_requests_total{r})) * 0) "
                        f"/ (sum by (route) (rate(specgate_requests_total{r})) > 0)",
                        "{{route}}",
                    )
                ],
                12,
                24,
                "percentunit",
            ),
        ],
    )


def speculation_control() -> dict[str, Any]:
    r = "[$__rate_interval]"
    return _dashboard(
        "specgate-speculation",
        "specgate / Speculation control",
        [
            _panel(
                1,
                "k per route",
                [("specgate_route_k", "{{route}}")],
                0,
                0,
                description="The k the decision table holds; 0 = speculation off.",
            ),
            _panel(
                2,
                "Measured acceptance length per route",
                [
                    (
                        f"1 + sum by (route) (rate(specgate_spec_accepted_tokens_total{r})) / "
                        f"(sum by (route) (rate(specgate_spec_verify_steps_total{r})) > 0)",
                        "{{route}}",
                    ),
                ],
                12,
                0,
                description="Tokens per verify step, from vLLM's per-request metrics.",
            ),
            _panel(
                3,
                "Estimated acceptance by draft position",
                [
                    ("specgate_route_acceptance_rate_estimate", "{{route}} pos {{position}}"),
                ],
                0,
                8,
                "percentunit",
            ),
            _panel(
                4,
                "Expected vs measured speed-up",
                [
                    ("specgate_route_expected_speedup", "expected {{route}}"),
                    ("specgate_route_measured_speedup", "measured {{route}}"),
                    ("specgate_route_acceptance_length_estimate", "est. tokens/step {{route}}"),
                ],
                12,
                8,
            ),
            _panel(
                5,
                "Decision changes and ticks",
                [
                    (f"sum by (route) (increase(specgate_controller_decision_changes_total{r}))", "changes {{route}}"),
                    (f"rate(specgate_controller_ticks_total{r})", "ticks/s"),
                ],
                0,
                16,
            ),
            _panel(
                6,
                "Controller state",
                [
                    ("specgate_controller_paused", "paused"),
                    ("specgate_controller_kill_switch", "kill switch"),
                    ("specgate_decision_table_version", "table version"),
                    ("time() - specgate_controller_last_tick_timestamp_seconds", "seconds since last tick"),
                ],
                12,
                16,
            ),
            _panel(
                7,
                "Requests by applied k",
                [(f"sum by (k) (rate(specgate_spec_requests_total{r}))", "k={{k}}")],
                0,
                24,
                "reqps",
            ),
            _panel(
                8,
                "Step-time model fit quality",
                [("specgate_cost_model_fit_quality", "{{pool}}")],
                12,
                24,
                "percentunit",
            ),
            _panel(
                9,
                "Drift: window acceptance vs baseline and break-even",
                [
                    ("specgate_drift_window_acceptance", "window {{route}}"),
                    ("specgate_drift_baseline_acceptance", "baseline {{route}}"),
                    ("specgate_route_break_even_acceptance", "break-even {{route}}"),
                ],
                0,
                32,
                "percentunit",
                description="Acceptance over draft positions per closed drift window; alerts fire below baseline "
                "(CUSUM/EWMA) or below break-even.",
            ),
            _panel(
                10,
                "Drift state and alert deliveries",
                [
                    ("specgate_drift_state", "state {{route}} (0 learning, 1 ok, 2 firing)"),
                    (
                        f"sum by (receiver, outcome) (increase(specgate_alert_deliveries_total{r}))",
                        "{{receiver}} {{outcome}}",
                    ),
                    (f"sum by (receiver) (increase(specgate_alert_delivery_retries_total{r}))", "retries {{receiver}}"),
                ],
                12,
                32,
            ),
            _schedule_matrix(11, 0, 40),
            _panel(
                12,
                "Verify steps by drafts carried, per route",
                [(f"sum by (route, k) (rate(specgate_spec_steps_by_k_total{r}))", "{{route}} k={{k}}")],
                0,
                48,
                w=24,
                description="The k the engine applied step by step (per-step engine metrics, "
                "`--per-request-spec-decode-metrics detailed`): under a schedule it moves with the batch.",
            ),
        ],
    )


def pools() -> dict[str, Any]:
    r = "[$__rate_interval]"
    return _dashboard(
        "specgate-pools",
        "specgate / Pools",
        [
            _panel(1, "Running requests per endpoint", [("vllm:num_requests_running", "{{instance}}")], 0, 0),
            _panel(2, "Waiting requests per endpoint", [("vllm:num_requests_waiting", "{{instance}}")], 12, 0),
            _panel(3, "KV cache use", [("vllm:kv_cache_usage_perc", "{{instance}}")], 0, 8, "percentunit"),
            _panel(
                4,
                "Engine acceptance length (vLLM counters)",
                [
                    (
                        f"1 + sum by (instance) (rate(vllm:spec_decode_num_accepted_tokens_total{r})) / "
                        f"(sum by (instance) (rate(vllm:spec_decode_num_drafts_total{r})) > 0)",
                        "{{instance}}",
                    ),
                ],
                12,
                8,
            ),
            _panel(
                5,
                "Engine acceptance by draft position",
                [
                    (
                        f"sum by (position) (rate(vllm:spec_decode_num_accepted_tokens_per_pos_total{r}))"
                        " / ignoring(position) "
                        f"group_left sum(rate(vllm:spec_decode_num_drafts_total{r}))",
                        "pos {{position}}",
                    ),
                ],
                0,
                16,
                "percentunit",
            ),
            _panel(
                6,
                "Endpoint health and outstanding requests (gateway view)",
                [
                    ("specgate_endpoint_healthy", "healthy {{endpoint}}"),
                    ("specgate_endpoint_outstanding_requests", "outstanding {{endpoint}}"),
                ],
                12,
                16,
            ),
            _panel(
                7,
                "Inter-token latency p50 / p99 (engine)",
                [
                    (f"histogram_quantile(0.5, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{r})))", "p50"),
                    (
                        f"histogram_quantile(0.99, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{r})))",
                        "p99",
                    ),
                ],
                0,
                24,
                "s",
            ),
        ],
    )


DASHBOARDS = {"gateway-overview": gateway_overview, "speculation-control": speculation_control, "pools": pools}

_METRIC = re.compile(r"\b(specgate_[a-z0-9_]+|vllm:[a-z0-9_:]+)")


def query_metrics(dashboard: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            names.update(_METRIC.findall(target["expr"]))
    return names


def known_metrics() -> set[str]:
    """Every series name specgate exports (with histogram/counter suffixes) plus the vLLM series used."""
    from specgate.runtime.metrics import GatewayMetrics

    names: set[str] = set(VLLM_METRICS)
    for family in GatewayMetrics().registry.collect():
        names.add(family.name)
        if family.type == "counter":
            names.add(family.name + "_total")
        if family.type == "histogram":
            names.update(family.name + s for s in ("_bucket", "_sum", "_count"))
    return names


def _render(dashboard: dict[str, Any]) -> str:
    return json.dumps(dashboard, indent=2, sort_keys=True) + "\n"


class NotASourceCheckout(RuntimeError):
    """`build` without an output folder, from a specgate that is not a writable source checkout."""


def source_dir() -> Path:
    """`dashboards/json/` of the source checkout this module runs from (a clone, or its editable install).

    Raises NotASourceCheckout for an installed wheel or a read-only tree: the JSON is committed, so it is built
    where it is committed, not into site-packages."""
    here = Path(__file__).resolve().parent
    root = here.parent
    if here.name != "dashboards" or not (root / "pyproject.toml").is_file():
        raise NotASourceCheckout(
            f"specgate is installed at {here}, not run from a source checkout: `specgate dashboards build` writes "
            "the committed dashboards/json/ of a clone (pip install -e .); pass --out DIR to write elsewhere"
        )
    out = here / "json"
    writable = out if out.exists() else here
    if not os.access(writable, os.W_OK):
        raise NotASourceCheckout(f"{writable} is not writable; pass --out DIR to write elsewhere")
    return out


def build_all(out: Path | None = None) -> list[Path]:
    """Write every dashboard's JSON into `out` (default: the source checkout's dashboards/json/)."""
    out = source_dir() if out is None else out
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fn in DASHBOARDS.items():
        path = out / f"{name}.json"
        path.write_text(_render(fn()), encoding="utf-8")
        written.append(path)
    return written


def check(out: Path | Traversable = COMMITTED) -> list[str]:
    """Problems (empty when all is well): stale or missing JSON, unknown metrics in queries."""
    problems = []
    known = known_metrics()
    for name, fn in DASHBOARDS.items():
        dashboard = fn()
        path = out / f"{name}.json"
        if not path.is_file() or path.read_text(encoding="utf-8") != _render(dashboard):
            problems.append(f"{path}: stale or missing; run `specgate dashboards build`")
        for metric in sorted(query_metrics(dashboard) - known):
            problems.append(f"{name}: query names unknown metric {metric}")
    return problems
