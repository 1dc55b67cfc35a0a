"""`specgate advise`: what speculation would do for the traffic a gateway recorded (a simulator run, not an engine).

The record (runtime/recorder.py, `recording.enabled`) gives, per route, how many requests came when, their lengths
and the acceptance histograms of the steps they ran. From it:

- per route, the conditional acceptance at each draft position with a 90% interval (Wilson; positions the record
  never drafted are unknown, not zero), and the expected tokens per verify step E[L(k)] for k = 0..max;
- a simulator scenario with the record's traffic (closed loop by default: the requests it had in flight, per 10 s,
  as users who send again when answered; or open arrivals at its per-10-s rates), route mix, output lengths and
  acceptance, on
  a step-time profile (`--engine-profile`: the simulator's named profiles); every policy is run on the scenario at the
  interval's low end, its point and its high end (acceptance), each over `seeds`: static k = 0..max, vLLM's
  batch-size table, the best batch-size table in hindsight (offline/hindsight.py: the `num_speculative_tokens_per_
  batch_size` table to give a stock engine) and specgate's per-step schedules; mean TPOT median [min-max] over those
  runs, so the spread says how much the record's acceptance is known;
- the routes that should not speculate: those whose own traffic alone is fastest at k = 0 at the point estimate.

The simulator's step-time profile is the largest assumption: the figures are as good as the profile is for the
engine. How far they are from measured runs on the CPU engine: docs/advisor.md.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from specgate.controllers.estimator import AcceptanceEstimator
from specgate.offline.hindsight import hindsight_table
from specgate.offline.simulator import STEP_PROFILES, BatchTable, RouteScenario, Scenario, make_policy, run

__all__ = ["RouteEvidence", "advise", "load_records", "render", "route_evidence", "scenario_from_records"]

Which = Literal["low", "point", "high"]
LEVELS: tuple[Which, ...] = ("low", "point", "high")
_Z90 = 1.645
BIN_S = 10.0
Arrivals = Literal["closed", "open"]


def load_records(paths: Iterable[Path]) -> tuple[list[dict[str, Any]], int]:
    """Records from JSON-lines files (rotated files may be given in any order: sorted by time); and how many lines
    were not records (skipped, counted)."""
    return parse_records(line for path in paths for line in path.read_text(errors="replace").splitlines())


def parse_records(lines: Iterable[str | bytes]) -> tuple[list[dict[str, Any]], int]:
    """Records from record lines (a file's, a Redis stream's), sorted by time; and how many lines were not records."""
    out: list[dict[str, Any]] = []
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            skipped += 1
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("t"), int | float) or not rec.get("route"):
            skipped += 1
            continue
        out.append(rec)
    out.sort(key=lambda r: r["t"])
    return out, skipped


@dataclass
class RouteEvidence:
    name: str
    max_k: int
    requests: int = 0
    output_tokens: list[int] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    estimator: AcceptanceEstimator = field(init=False)

    def __post_init__(self) -> None:
        self.estimator = AcceptanceEstimator(self.max_k, half_life_s=0.0)

    def add(self, rec: dict[str, Any]) -> None:
        self.requests += 1
        self.output_tokens.append(int(rec.get("completion_tokens") or 0))
        self.prompt_tokens.append(int(rec.get("prompt_tokens") or 0))
        by_k = rec.get("by_k") or []
        if by_k:
            for k, hist in by_k:
                self.estimator.observe([int(x) for x in hist], int(k), 0.0)
        elif rec.get("histogram") and int(rec.get("k") or 0) > 0:
            self.estimator.observe([int(x) for x in rec["histogram"]], int(rec["k"]), 0.0)

    def alpha(self, position: int, which: Which) -> float | None:
        """Conditional acceptance at a position: the point estimate or an end of its 90% Wilson interval."""
        t = self.estimator.trials[position]
        if t <= 0:
            return None
        s = self.estimator.passes[position]
        if which == "point":
            return s / t
        low, high = _wilson(s, t, _Z90)
        return low if which == "low" else high

    def alphas(self, which: Which) -> tuple[float, ...]:
        """Known positions from 1 on, stopping at the first the record never drafted."""
        out = []
        for i in range(1, self.max_k + 1):
            a = self.alpha(i, which)
            if a is None:
                break
            out.append(a)
        return tuple(out)

    def lengths(self, which: Which) -> list[float]:
        """E[L(k)] for k = 0..max_k; positions past the known ones add nothing."""
        out, total, chain = [1.0], 1.0, 1.0
        known = self.alphas(which)
        for i in range(1, self.max_k + 1):
            if i <= len(known):
                chain *= known[i - 1]
                total += chain
            out.append(total)
        return out


def _wilson(s: float, t: float, z: float) -> tuple[float, float]:
    p = s / t
    denom = 1 + z * z / t
    centre = p + z * z / (2 * t)
    spread = z * math.sqrt(p * (1 - p) / t + z * z / (4 * t * t))
    return max(0.0, (centre - spread) / denom), min(1.0, (centre + spread) / denom)


def route_evidence(records: Sequence[dict[str, Any]], max_k: int) -> dict[str, RouteEvidence]:
    routes: dict[str, RouteEvidence] = {}
    for rec in records:
        name = str(rec["route"])
        routes.setdefault(name, RouteEvidence(name, max_k)).add(rec)
    return routes


def _arrivals(records: Sequence[dict[str, Any]]) -> tuple[tuple[float, float], ...]:
    start = records[0]["t"]
    span = max(records[-1]["t"] - start, 1.0)
    bins = max(1, math.ceil(span / BIN_S))
    counts = [0] * bins
    for rec in records:
        counts[min(bins - 1, int((rec["t"] - start) // BIN_S))] += 1
    width = span / bins
    return tuple(((i + 1) * width, c / width) for i, c in enumerate(counts))


def _users(records: Sequence[dict[str, Any]]) -> tuple[tuple[float, int], ...]:
    """Requests in flight per bin (time-averaged from each request's start and end), as closed-loop users; empty when
    no record carries its timing."""
    start = min(r["t"] - _duration(r) for r in records)
    end = records[-1]["t"]
    bins = max(1, math.ceil((end - start) / BIN_S))
    busy = [0.0] * bins
    for r in records:
        a, b = r["t"] - _duration(r) - start, r["t"] - start
        for i in range(int(a // BIN_S), min(bins, int(b // BIN_S) + 1)):
            busy[i] += max(0.0, min(b, (i + 1) * BIN_S) - max(a, i * BIN_S))
    if not any(busy):
        return ()  # no request carries its timing: nothing to replay as users (open arrivals instead)
    width = (end - start) / bins
    # A bin with any request in flight has at least one user; one with none (a quiet spell) has none.
    return tuple(((i + 1) * width, max(1, round(x / BIN_S)) if x > 0 else 0) for i, x in enumerate(busy))


def _duration(rec: dict[str, Any]) -> float:
    e2e = rec.get("e2e_s")
    if isinstance(e2e, int | float):
        return float(e2e)
    return float(rec.get("ttft_s") or 0.0) + float(rec.get("decode_s") or 0.0)


def scenario_from_records(
    records: Sequence[dict[str, Any]],
    evidence: dict[str, RouteEvidence],
    profile: str,
    max_k: int,
    which: Which = "point",
    only: str | None = None,
    mode: Arrivals = "closed",
) -> Scenario:
    """The recorded traffic as a simulator scenario (all routes, or `only` one of them at its own rate): closed
    loop (the record's requests in flight as users who send again when answered) or open arrivals at its rates."""
    chosen = [r for r in records if only is None or r["route"] == only]
    arrivals = _arrivals(chosen)
    users = _users(chosen) if mode == "closed" else ()
    routes = []
    for name, ev in sorted(evidence.items()):
        if only is not None and name != only:
            continue
        alphas = ev.alphas(which) or (0.0,)
        routes.append(
            RouteScenario(
                name,
                float(ev.requests),
                ((0.0, alphas[0]),),
                max(1.0, statistics.fmean(ev.output_tokens)),
                None,
                alphas,
            )
        )
    prompts = [int(r.get("prompt_tokens") or 0) for r in chosen]
    return Scenario(
        f"record{'-' + only if only else ''}-{which}",
        users[-1][0] if users else arrivals[-1][0],
        arrivals,
        tuple(routes),
        profile=profile,
        max_k=max_k,
        prompt_tokens=max(1, round(statistics.fmean(prompts))) if prompts else 512,
        users=users,
    )


def _mean_tpot(scenario: Scenario, policy_name: str, table: tuple[tuple[int, int], ...] | None) -> float | None:
    policy = BatchTable(0, "hindsight-table", table) if table is not None else make_policy(policy_name, scenario)
    got = run(scenario, policy).summary()["mean_tpot_ms"]
    return float(got) if got is not None else None


def advise(
    records: Sequence[dict[str, Any]],
    profile: str,
    max_k: int | None = None,
    seeds: int = 2,
    mode: Arrivals = "closed",
) -> dict[str, Any]:
    if not records:
        raise ValueError("no records: turn recording.enabled on and send traffic first")
    if profile not in STEP_PROFILES:
        raise ValueError(f"unknown engine profile {profile!r}: one of {', '.join(sorted(STEP_PROFILES))}")
    top = max_k if max_k is not None else max(int(r.get("k") or 0) for r in records)
    top = max(top, 1)
    evidence = route_evidence(records, top)
    point = scenario_from_records(records, evidence, profile, top, mode=mode)
    table, _, _ = hindsight_table(point, [point.seed])
    policies = [*(f"static-k{k}" for k in range(top + 1)), "vllm-batch-table", "hindsight-table", "specgate"]
    tpots: dict[str, list[float]] = {p: [] for p in policies}
    for which in LEVELS:
        base = scenario_from_records(records, evidence, profile, top, which, mode=mode)
        for seed in range(seeds):
            scenario = replace(base, seed=base.seed + 1000 * seed)
            for name in policies:
                got = _mean_tpot(scenario, name, table if name == "hindsight-table" else None)
                if got is not None:
                    tpots[name].append(got)
    no_spec = []
    for name in sorted(evidence):
        alone = scenario_from_records(records, evidence, profile, top, "point", only=name, mode=mode)
        per_k = [_mean_tpot(alone, f"static-k{k}", None) or math.inf for k in range(top + 1)]
        if min(range(top + 1), key=per_k.__getitem__) == 0:
            no_spec.append(name)
    return {
        "profile": profile,
        "arrivals": mode,
        "max_k": top,
        "requests": len(records),
        "span_s": round(records[-1]["t"] - records[0]["t"], 1),
        "routes": {
            name: {
                "requests": ev.requests,
                "alpha": [
                    {
                        "position": i,
                        "point": ev.alpha(i, "point"),
                        "low": ev.alpha(i, "low"),
                        "high": ev.alpha(i, "high"),
                    }
                    for i in range(1, top + 1)
                ],
                "expected_length": {w: [round(x, 3) for x in ev.lengths(w)] for w in LEVELS},
                "trials": [round(t) for t in ev.estimator.trials[1:]],
            }
            for name, ev in sorted(evidence.items())
        },
        "policies": {
            name: {
                "mean_tpot_ms": statistics.median(v) if v else None,
                "min": min(v) if v else None,
                "max": max(v) if v else None,
                "runs": len(v),
            }
            for name, v in tpots.items()
        },
        "recommended_table": [list(row) for row in table],
        "no_speculation": no_spec,
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"{report['requests']} requests over {report['span_s']} s replayed as {report['arrivals']} arrivals; engine "
        f"profile {report['profile']} (a simulator profile, not your engine); max k {report['max_k']}",
        "",
        "acceptance per draft position (point [90% interval], trials):",
    ]
    for name, route in report["routes"].items():
        cells = []
        for a, trials in zip(route["alpha"], route["trials"], strict=True):
            if a["point"] is None:
                cells.append(f"p{a['position']} unknown")
            else:
                cells.append(f"p{a['position']} {a['point']:.2f} [{a['low']:.2f}-{a['high']:.2f}] n={trials}")
        lines.append(f"  {name} ({route['requests']} requests): " + ", ".join(cells))
        el = route["expected_length"]
        lines.append(
            "    tokens per step by k: "
            + ", ".join(
                f"k={k} {p:.2f} [{lo:.2f}-{hi:.2f}]"
                for k, (lo, p, hi) in enumerate(zip(el["low"], el["point"], el["high"], strict=True))
            )
        )
    lines += ["", "mean TPOT in the simulator, median [min-max] over acceptance low/point/high x seeds:"]
    best = min((v["mean_tpot_ms"] for v in report["policies"].values() if v["mean_tpot_ms"]), default=None)
    for name, v in report["policies"].items():
        if v["mean_tpot_ms"] is None:
            lines.append(f"  {name:18s} no finished requests")
            continue
        ratio = v["mean_tpot_ms"] / best if best else float("nan")
        lines.append(f"  {name:18s} {v['mean_tpot_ms']:8.2f} ms [{v['min']:.2f}-{v['max']:.2f}]  {ratio:.3f}x the best")
    table = ", ".join(f"<= {b if b < 10**8 else 'inf'}: k={k}" for b, k in report["recommended_table"])
    lines += [
        "",
        f"recommended num_speculative_tokens_per_batch_size for a stock engine: {table}",
        "routes that should not speculate (fastest at k=0 on their own traffic): "
        + (", ".join(report["no_speculation"]) or "none"),
    ]
    return "\n".join(lines)
