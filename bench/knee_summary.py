"""Summarise bench/knee_runs.sh: per phase and over the whole run, each policy's mean TPOT (median [min-max] over
repetitions) and, per repetition, specgate's adaptive policy over the best baseline of that repetition (the best of
static k0/k2/k4 and vLLM's own batch-size table, picked per phase in hindsight), median [min-max]; and the whole run
of that per-phase best as one policy (a batch-size table picking each phase's best k, found in hindsight); and each
policy's mean TPOT per route and phase (from the requests' timelines), median over repetitions.

    python bench/knee_summary.py bench/results/knee
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

TABLE = "vllm-table"


def _reps(folder: Path) -> list[dict[str, dict[str, Any]]]:
    reps = []
    for path in sorted(folder.glob("rep[0-9]*.json")):
        if path.stem.endswith("-table"):
            continue
        policies = dict(json.loads(path.read_text())["policies"])
        table = path.with_name(f"{path.stem}-table.json")
        if table.is_file():
            policies[TABLE] = json.loads(table.read_text())["policies"]["static-k4"]
        reps.append(policies)
    return reps


def _route_means(folder: Path) -> dict[tuple[str, str, str], list[float]]:
    """(policy, phase, route) -> the mean TPOT (ms) of that route's requests in that phase, one per repetition."""
    out: dict[tuple[str, str, str], list[float]] = {}
    for path in sorted(folder.glob("rep[0-9]*.json")):
        report = json.loads(path.read_text())
        for policy, timeline in report.get("timeline", {}).items():
            name = TABLE if path.stem.endswith("-table") else policy
            start = 0.0
            for phase in report["phases"]:
                end = start + phase["seconds"]
                by_route: dict[str, list[float]] = {}
                for t, tpot, _k, route in timeline:
                    if start <= t < end:
                        by_route.setdefault(route, []).append(tpot)
                for route, values in by_route.items():
                    out.setdefault((name, phase["name"], route), []).append(statistics.fmean(values))
                start = end
    return out


def _adaptive(policy: str) -> bool:
    """specgate's adaptive control, as shipped or a variant (loadgen.ADAPTIVE): not a baseline."""
    return policy.startswith("adaptive")


def _whole(rows: dict[str, Any]) -> float:
    n = sum(r["requests"] for r in rows.values())
    return sum(r["mean_tpot_ms"] * r["requests"] for r in rows.values()) / n


def _fmt(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} [{min(values):.2f}-{max(values):.2f}]"


def main(folder: Path) -> int:
    reps = _reps(folder)
    if not reps:
        print(f"no rep*.json under {folder}", file=sys.stderr)
        return 1
    phases = [*next(iter(reps[0].values())).keys(), "whole"]
    names = sorted({name for rep in reps for name in rep})
    print(f"{len(reps)} repetitions; mean TPOT ms, median [min-max]")
    for phase in phases:
        print(f"\n{phase}")
        for name in names:
            values = [
                (_whole(rep[name]) if phase == "whole" else rep[name][phase]["mean_tpot_ms"])
                for rep in reps
                if name in rep
            ]
            print(f"  {name:12s} {_fmt(values)}")
        for ours in [n for n in names if _adaptive(n)]:
            ratios = []
            for rep in reps:
                base = {n: (_whole(r) if phase == "whole" else r[phase]["mean_tpot_ms"]) for n, r in rep.items()}
                baselines = [v for n, v in base.items() if not _adaptive(n)]
                if ours in base and baselines:
                    ratios.append(base[ours] / min(baselines))
            if ratios:
                print(f"  {ours} / best baseline: {_fmt(ratios)}  per rep {[round(r, 3) for r in ratios]}")
    # The best baseline of each phase, as one policy: the phases run at different loads (2, 24 and 8 clients), so a
    # batch-size table may take each phase's best k; this is the best such table among the baselines' ks, found in
    # hindsight (it cannot tell the routes apart).
    composite, ratios = [], []
    for rep in reps:
        if all(_adaptive(n) for n in rep):
            continue
        rows = [
            min((r[p] for n, r in rep.items() if not _adaptive(n)), key=lambda row: row["mean_tpot_ms"])
            for p in phases[:-1]
        ]
        whole = sum(r["mean_tpot_ms"] * r["requests"] for r in rows) / sum(r["requests"] for r in rows)
        composite.append(whole)
        if "adaptive" in rep:
            ratios.append(_whole(rep["adaptive"]) / whole)
    if composite:
        print(f"\nbest baseline per phase, as one table (hindsight): whole run {_fmt(composite)}")
    if ratios:
        print(f"  adaptive / it: {_fmt(ratios)}  per rep {[round(r, 3) for r in ratios]}")
    routes = _route_means(folder)
    if routes:
        print("\nper route (mean TPOT ms of its requests, median [min-max] over repetitions)")
        for phase in phases[:-1]:
            print(f"\n{phase}")
            for name in names:
                cells = [f"{route} {_fmt(v)}" for (n, p, route), v in sorted(routes.items()) if (n, p) == (name, phase)]
                print(f"  {name:12s} " + "   ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results/knee")))
