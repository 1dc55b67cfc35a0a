"""`specgate bench`: a phased load test through a gateway against a real engine (client side).

It starts a gateway in this process in front of the given vLLM endpoint (which must load specgate's
scheduler plugin), then runs the same phases once per policy: static k = 0 and static k = max (made with admin
pins on every route) and the adaptive controller. Phases: low concurrency mixed work, high concurrency, then a
shift of the mix towards text the drafter cannot predict. Every request streams a fixed number of tokens
(`ignore_eos`); the figure per request is its end-to-end time per output token (start to last token / tokens).
Results: a JSON file and a table.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from specgate.gateway.app import create_app
from specgate.offline.progress import Progress

from specgate.config import validate_config

__all__ = ["PHASES", "Phase", "check_policies", "parse_phases", "request_body", "run_bench", "verdict"]

# Copy-heavy work the tiny test model continues verbatim (about 3.4 tokens per verify step at k = 4).
CODE_PROMPT = "import os\nimport sys\nimport os\nimport sys\nimport os\nimport sys\nimport os\nimport"
WORDS = ["tea", "moon", "river", "quiet", "seven", "blue", "stone", "paper", "north", "glass", "cloud", "salt"]


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: float
    concurrency: int
    code_share: float


PHASES = (
    Phase("low-concurrency-mixed", 40, 2, 0.5),
    Phase("high-concurrency", 40, 24, 0.5),
    Phase("shift-to-chat", 40, 8, 0.1),
)


def parse_phases(spec: str) -> tuple[Phase, ...]:
    """Phases from `NAME:SECONDS:CLIENTS:CODE_SHARE,...` (e.g. a burst: `low:40:2:0.5,burst:15:32:0.5,after:30:2:0.5`);
    ValueError naming the bad part."""
    phases = []
    for part in spec.split(","):
        fields = part.strip().split(":")
        if len(fields) != 4 or not fields[0]:
            raise ValueError(f"phase {part!r}: expected NAME:SECONDS:CLIENTS:CODE_SHARE")
        name, seconds, clients, share = fields
        try:
            phase = Phase(name, float(seconds), int(clients), float(share))
        except ValueError:
            raise ValueError(f"phase {part!r}: SECONDS and CODE_SHARE are numbers, CLIENTS an integer") from None
        if not (phase.seconds > 0 and phase.concurrency >= 1 and 0.0 <= phase.code_share <= 1.0):
            raise ValueError(f"phase {part!r}: SECONDS > 0, CLIENTS >= 1 and CODE_SHARE within [0, 1]")
        phases.append(phase)
    if len({p.name for p in phases}) != len(phases):
        raise ValueError("phase names must differ")
    return tuple(phases)


def request_body(route: str, rng: random.Random, max_tokens: int, model: str) -> dict[str, Any]:
    """One `specgate bench` request of `route` (code: copy-heavy, greedy; chat: random words, hot sampling)."""
    if route == "code":
        return {
            "model": model,
            "prompt": CODE_PROMPT,
            "max_tokens": max_tokens,
            "temperature": 0,
            "stream": True,
            "ignore_eos": True,
        }
    words = " ".join(rng.choice(WORDS) for _ in range(16))
    return {
        "model": model,
        "prompt": words,
        "ignore_eos": True,
        "max_tokens": max_tokens,
        "temperature": 1.5,
        "seed": rng.randint(0, 10**9),
        "stream": True,
    }


async def _one(
    http: httpx.AsyncClient, url: str, route: str, rng: random.Random, model: str, tokens: int
) -> dict[str, Any] | None:
    started = time.perf_counter()
    stamps: list[float] = []
    async with http.stream(
        "POST",
        f"{url}/v1/completions",
        json=request_body(route, rng, tokens, model),
        headers={"x-specgate-route": route},
    ) as r:
        if r.status_code != 200:
            return {"error": r.status_code}
        async for line in r.aiter_lines():
            if line.startswith("data: {") and '"text"' in line:
                stamps.append(time.perf_counter())
        k = int(r.headers.get("x-specgate-k", "-1"))
    if len(stamps) < 2:
        return None
    return {
        "route": route,
        "k": k,
        "started": started,
        "ttft_s": stamps[0] - started,
        "chunks": len(stamps),
        "e2e_s": stamps[-1] - started,
    }


async def _phase(url: str, phase: Phase, seed: int, tokens_per_request: int, model: str) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    results: list[dict[str, Any]] = []
    deadline = time.monotonic() + phase.seconds

    async def worker(wid: int) -> None:
        wrng = random.Random(seed * 1000 + wid)
        async with httpx.AsyncClient(timeout=120) as http:
            while time.monotonic() < deadline:
                route = "code" if wrng.random() < phase.code_share else "chat"
                try:
                    res = await _one(http, url, route, rng, model, tokens_per_request)
                except httpx.HTTPError as exc:
                    res = {"error": type(exc).__name__}
                if res is not None:
                    results.append(res)

    phase_start = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(phase.concurrency)))
    for res in results:
        if "started" in res:
            res["t_s"] = round(res.pop("started") - phase_start, 3)
        if "e2e_s" in res:
            # End-to-end time per output token: vLLM merges queued step outputs into one chunk when its API
            # server lags, which makes first-to-last-chunk timing meaningless under load; this is not fooled.
            res["tpot_s"] = res["e2e_s"] / tokens_per_request
    return results


def _summary(results: list[dict[str, Any]], seconds: float, tokens_per_request: int) -> dict[str, Any]:
    ok = [r for r in results if "tpot_s" in r]
    errors = len(results) - len(ok)
    tpots = sorted(r["tpot_s"] for r in ok)
    return {
        "requests": len(ok),
        "errors": errors,
        "mean_tpot_ms": round(1000 * statistics.fmean(tpots), 3) if tpots else None,
        "p50_tpot_ms": round(1000 * tpots[len(tpots) // 2], 3) if tpots else None,
        "p99_tpot_ms": round(1000 * tpots[min(len(tpots) - 1, int(0.99 * len(tpots)))], 3) if tpots else None,
        "tokens_per_s": round(len(ok) * tokens_per_request / seconds, 1),
        "k_mix": {str(k): sum(1 for r in ok if r["k"] == k) for k in sorted({r["k"] for r in ok})},
    }


# The adaptive controller as shipped, and variants to tell its parts apart on the real engine (controller settings).
ADAPTIVE: dict[str, dict[str, Any]] = {
    "adaptive": {},
    "adaptive-prior": {"prior_weight": 20.0},
    "adaptive-no-proposal-rate": {"proposal_rate": False},
    "adaptive-draft-cost": {},
    "adaptive-z0": {"z": 0.0},
    "adaptive-step2": {"max_step": 2},  # the default before max_step 4
    "adaptive-no-change": {"change_z": 0.0},  # acceptance evidence only fades (before step-change detection)
}
# Variants whose gateway's pool declares the drafting cost measured for the drafter (run_bench's `draft_cost`,
# `speculation.draft_cost`) instead of the method's round number.
DECLARES_DRAFT_COST = frozenset({"adaptive-draft-cost"})


def _start_gateway(
    engine_url: str,
    model: str,
    max_k: int,
    port: int,
    controller: dict[str, Any] | None = None,
    cost_prior: str = "cpu",
    record: Path | None = None,
    method: str = "ngram",
    draft_cost: float | None = None,
) -> tuple[uvicorn.Server, threading.Thread]:
    speculation: dict[str, Any] = {"method": method, "max_k": max_k, "per_request_k": True}
    if draft_cost is not None:
        speculation["draft_cost"] = draft_cost
    config = validate_config(
        {
            "server": {"port": port},
            "recording": {"enabled": record is not None, "path": str(record or "specgate-records.jsonl")},
            "pools": [
                {
                    "name": "engine",
                    "model": model,
                    "endpoints": [engine_url],
                    "speculation": speculation,
                }
            ],
            "routing": {
                "routes": [{"name": "code"}, {"name": "chat"}],
                "default_route": "chat",
                "allow_route_header": True,
            },
            "controller": {
                "tick_s": 1.0,
                "half_life_s": 20.0,
                "min_dwell_s": 3.0,
                "cost_prior": cost_prior,
                **(controller or {}),
            },
            "logging": {"level": "warning"},
        }
    )
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config), host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="on"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    return server, thread


def run_bench(
    engine_url: str,
    served_model: str,
    max_k: int,
    out: Path | None,
    phases: tuple[Phase, ...] = PHASES,
    port: int = 18000,
    tokens_per_request: int = 64,
    policies: list[str] | None = None,
    warm_up_s: float = 20.0,
    cost_prior: str = "cpu",
    record: Path | None = None,
    method: str = "ngram",
    draft_cost: float | None = None,
) -> dict[str, Any]:
    """Runs every phase for each policy (default: static-k0, static-kmax, adaptive, in that order), each through a
    gateway of its own (a fresh controller: no policy learns from another's traffic); returns (and writes) the
    results. `method`: the engine's speculation method, which the gateways' pool declares (it sets what the controller
    charges for drafting); `draft_cost`: the drafting cost per position the `adaptive-draft-cost` policy's pool
    declares (a fraction of the target's step, measured for the drafter). First `warm_up_s` of load go to the engine
    directly (no policy sees them): without it, in runs 9 and 11 (docs/controller.md), the policy that ran first took
    40-49 ms per token at k = 0 under high concurrency where the static k = 0 policy later in the same run took 28-37
    ms."""
    order = policies or ["static-k0", f"static-k{max_k}", "adaptive"]
    check_policies(order, max_k, draft_cost)
    report: dict[str, Any] = {
        "engine": engine_url,
        "max_k": max_k,
        "phases": [p.__dict__ for p in phases],
        "warm_up_s": warm_up_s,
        "cost_prior": cost_prior,
        "method": method,
        "draft_cost": draft_cost,
        "policies": {},
        "timeline": {},
    }
    progress = Progress(len(order) * len(phases), "bench")
    if warm_up_s > 0:
        warm = Phase("warm-up", warm_up_s, 8, 0.5)
        report["warm_up_requests"] = len(asyncio.run(_phase(engine_url, warm, 0, tokens_per_request, served_model)))
    for n, policy in enumerate(order):
        url = f"http://127.0.0.1:{port + n}"
        # With `record`, each policy's gateway writes the workload record (runtime/recorder.py) to RECORD-POLICY.jsonl.
        recorded = record.with_name(f"{record.name}-{policy}.jsonl") if record is not None else None
        server, thread = _start_gateway(
            engine_url,
            served_model,
            max_k,
            port + n,
            ADAPTIVE.get(policy),
            cost_prior,
            recorded,
            method,
            draft_cost if policy in DECLARES_DRAFT_COST else None,
        )
        try:
            if policy not in ADAPTIVE:
                with httpx.Client(timeout=10) as admin:
                    for route in ("code", "chat"):
                        pin = {"k": int(policy.removeprefix("static-k"))}
                        admin.put(f"{url}/admin/routes/{route}/k", json=pin).raise_for_status()
            rows, timeline = _policy_phases(url, policy, phases, tokens_per_request, served_model, progress)
        finally:
            server.should_exit = True
            thread.join(timeout=30)
        report["policies"][policy] = rows
        report["timeline"][policy] = timeline
    report["verdict"] = verdict(report["policies"])
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1) + "\n")
    return report


def _policy_phases(
    url: str, policy: str, phases: tuple[Phase, ...], tokens: int, model: str, progress: Progress
) -> tuple[dict[str, Any], list[list[Any]]]:
    rows: dict[str, Any] = {}
    timeline: list[list[Any]] = []
    offset = 0.0
    for i, phase in enumerate(phases):
        results = asyncio.run(_phase(url, phase, i + 1, tokens, model))
        rows[phase.name] = _summary(results, phase.seconds, tokens)
        # One row per request (start offset in the policy's run, TPOT, k, route) for the plots.
        timeline += [
            [round(offset + r["t_s"], 3), round(1000 * r["tpot_s"], 3), r["k"], r["route"]]
            for r in results
            if "tpot_s" in r
        ]
        offset += phase.seconds
        progress.advance(f"{policy} {phase.name}: mean TPOT {rows[phase.name]['mean_tpot_ms']} ms")
    return rows, timeline


def check_policies(policies: list[str], max_k: int, draft_cost: float | None = None) -> None:
    """Refuse unknown policy names, and a policy that declares a drafting cost without one, before any phase runs (a
    bench takes minutes)."""
    for policy in policies:
        if policy in DECLARES_DRAFT_COST and draft_cost is None:
            raise ValueError(f"policy {policy!r} declares the measured drafting cost: give --draft-cost")
        k = policy.removeprefix("static-k")
        if policy not in ADAPTIVE and not (k != policy and k.isdigit() and int(k) <= max_k):
            raise ValueError(
                f"unknown policy {policy!r}: use {', '.join(ADAPTIVE)} or 'static-kN' with N from 0 to {max_k}"
            )


def _overall(rows: dict[str, Any]) -> float | None:
    done = [r for r in rows.values() if r["mean_tpot_ms"] is not None]
    total = sum(r["requests"] for r in done)
    return round(sum(r["mean_tpot_ms"] * r["requests"] for r in done) / total, 3) if total else None


def verdict(policies: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Mean TPOT over the run per policy; per phase, the fastest policy and each policy's TPOT over the fastest's;
    and, when adaptive ran beside static policies, adaptive over the best static one (naming those compared)."""
    phases = list(next(iter(policies.values()), {}))
    best: dict[str, str | None] = {}
    ratio: dict[str, dict[str, float | None]] = {name: {} for name in policies}
    for phase in phases:
        figures = {name: rows[phase]["mean_tpot_ms"] for name, rows in policies.items() if phase in rows}
        known = {name: v for name, v in figures.items() if v is not None}
        fastest = min(known, key=lambda name: known[name]) if known else None
        best[phase] = fastest
        for name, value in figures.items():
            ratio[name][phase] = round(value / known[fastest], 3) if fastest and value is not None else None
    out: dict[str, Any] = {
        "overall_mean_tpot_ms": {name: _overall(rows) for name, rows in policies.items()},
        "fastest_per_phase": best,
        "tpot_over_fastest_per_phase": ratio,
    }
    statics = sorted(name for name in policies if name.startswith("static-k"))
    if "adaptive" in policies and statics:
        per_phase: dict[str, float | None] = {}
        for phase, row in policies["adaptive"].items():
            static_figures = [policies[s][phase]["mean_tpot_ms"] for s in statics if phase in policies[s]]
            known_static = [f for f in static_figures if f is not None]
            mine = row["mean_tpot_ms"]
            per_phase[phase] = round(mine / min(known_static), 3) if known_static and mine is not None else None
        out["adaptive_compared_with"] = statics
        out["adaptive_over_best_static_tpot_per_phase"] = per_phase
    return out
