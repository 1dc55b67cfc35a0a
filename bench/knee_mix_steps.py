"""What a step costs on the knee testbed by route and k, from the engine's own counters (issue 16).

The simulator and the controller model a step's time as one function of the batch and the drafts verified per
request (controllers/cost_model.py), fitted or calibrated on copy-heavy code, whose drafts are all accepted. Against
the phased bench the simulator was most wrong for chat at k > 0 (bench/sim_vs_knee.py): 3x too slow at 8 clients.
This measures whether a step with the same batch and the same drafts costs the same when the drafts are rejected.

For each workload (`code`: `specgate bench`'s copy-heavy code at temperature 0, all drafts accepted; `chat`: its
random words at temperature 1.5, almost none) and each k, B clients in a closed loop straight to the engine for
`--seconds` (after a warm-up), the engine's counters read before and after: step time = inter-token latency sum /
its count (one sample per running request per step), batch = request-steps / iterations, drafts and accepted
drafts per request-step, and tokens/s. Rounds alternate the order.

    python bench/knee_mix_steps.py [--clients 8] [--ks 0,4] [--seconds 20] [--rounds 2] [--out FILE]

With several client counts (`--clients 1,2,4,8,16,32 --routes code --ks 0,2,4`) it is a calibration, two fits
printed and written with the readings: the controller's step-time model (bench/calibrate_cpu_step.py's `fit`, one
hinge) and `two_hinges`, T = t0 + t1 x + t2 max(0, x - knee2) with x = B (1 + c kbar) (+ the prompt tokens
computed per step, for `two_hinges_prompts_apart`: the simulator's `knee-counters` profile, which computes prompts
in the step they join). This engine's step is convex in the tokens it computes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from calibrate_cpu_step import fit
from prometheus_client.parser import text_string_to_metric_families
from specgate.backends.launcher import EngineProcess, EngineSpec
from specgate.backends.testbed import DRAFTER_DIR, ensure_knee_model
from specgate.backends.vllm_metrics import EngineSnapshot, parse_vllm_metrics
from specgate.offline.loadgen import request_body

MODEL = "specgate-knee"


async def _client(http: httpx.AsyncClient, url: str, route: str, k: int, tokens: int, until: float, seed: int) -> None:
    rng = random.Random(seed)
    while time.monotonic() < until:
        body = request_body(route, rng, tokens, MODEL)
        body.update(stream=False, ignore_eos=True, vllm_xargs={"num_speculative_tokens": k})
        r = await http.post(f"{url}/v1/completions", json=body)
        r.raise_for_status()


async def _snapshot(http: httpx.AsyncClient, url: str) -> tuple[EngineSnapshot, float]:
    """The engine's counters, and its prompt tokens computed so far (the prefill work inside the steps)."""
    text = (await http.get(f"{url}/metrics")).text
    prompt = sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "vllm:prompt_tokens_total"
    )
    return parse_vllm_metrics(text), prompt


async def _run(url: str, route: str, k: int, batch: int, seconds: float, warm_s: float, tokens: int) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=300) as http:
        start = time.monotonic()
        clients = [
            asyncio.create_task(_client(http, url, route, k, tokens, start + warm_s + seconds, i)) for i in range(batch)
        ]
        await asyncio.sleep(warm_s)
        (before, prompt0), t0 = await _snapshot(http, url), time.monotonic()
        await asyncio.sleep(seconds)
        (after, prompt1), t1 = await _snapshot(http, url), time.monotonic()
        await asyncio.gather(*clients)

    def delta(name: str) -> float:
        return float(getattr(after, name) or 0.0) - float(getattr(before, name) or 0.0)

    steps, request_steps = delta("iterations"), delta("itl_count")
    drafts, accepted = delta("draft_tokens"), delta("accepted_tokens")
    return {
        "route": route,
        "k": k,
        "clients": batch,
        "step_ms": round(1000 * delta("itl_sum") / max(request_steps, 1.0), 2),
        "batch": round(request_steps / max(steps, 1.0), 2),
        "drafts_per_request_step": round(drafts / max(request_steps, 1.0), 3),
        "accepted_per_request_step": round(accepted / max(request_steps, 1.0), 3),
        "acceptance": round(accepted / drafts, 3) if drafts else None,
        "tokens_per_s": round((request_steps + accepted) / (t1 - t0), 1),
        "prompt_tokens_per_step": round((prompt1 - prompt0) / max(steps, 1.0), 2),
    }


def two_hinges(rows: list[dict[str, Any]], prompt_cost: float = 0.0) -> dict[str, float]:
    """T = t0 + t1 x + t2 max(0, x - knee2), x = B (1 + c kbar) + prompt_cost P (P: prompt tokens computed per step):
    weighted least squares (relative errors) for t0, t1, t2 >= 0 at each (c, knee2) of a grid; the smallest relative
    RMS error wins. prompt_cost 0 folds the calibration workload's prefill into the other terms; 1 prices a prompt
    token as a decoded one (as the simulator does with prompts computed in the step they join)."""
    b = np.array([r["batch"] for r in rows], dtype=float)
    kbar = np.array([r["drafts_per_request_step"] for r in rows], dtype=float)
    prompts = np.array([r["prompt_tokens_per_step"] for r in rows], dtype=float)
    y = np.array([r["step_ms"] for r in rows], dtype=float) / 1000.0
    w = 1.0 / y
    best: dict[str, float] | None = None
    for c in np.arange(0.5, 1.5001, 0.05):
        x = b * (1 + c * kbar) + prompt_cost * prompts
        for knee in np.arange(10.0, 200.0, 5.0):
            cols = np.column_stack([np.ones_like(y), x, np.maximum(0.0, x - knee)])
            coef, *_ = np.linalg.lstsq(cols * w[:, None], y * w, rcond=None)
            if (coef < 0).any():
                continue
            rel = (cols @ coef - y) / y
            err = float(np.sqrt(np.mean(rel * rel)))
            if best is None or err < best["rel_rms_error"]:
                t0, t1, t2 = (float(v) for v in coef)
                best = {"t0_s": t0, "t1_s": t1, "t2_s": t2, "draft_cost": float(c), "knee2_tokens": float(knee)}
                best |= {"prompt_cost": prompt_cost, "rel_rms_error": err}
    assert best is not None
    return {key: round(value, 6) for key, value in best.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", default="8", help="client counts, comma-separated")
    ap.add_argument("--ks", default="0,4")
    ap.add_argument("--routes", default="code,chat")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warm", type=float, default=6.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--port", type=int, default=18730)
    ap.add_argument("--engine", help="URL of a running knee engine with the trained drafter (else one is started)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    cells = [
        (route, int(k), int(b))
        for b in args.clients.split(",")
        for route in args.routes.split(",")
        for k in args.ks.split(",")
    ]
    engine = None
    url = args.engine
    if url is None:
        spec = EngineSpec(
            model_dir=ensure_knee_model(),
            served_name=MODEL,
            port=args.port,
            speculation="draft_model",
            draft_model_dir=DRAFTER_DIR,
            max_k=max(k for _, k, _ in cells),
        )
        engine = EngineProcess(spec, Path(tempfile.mkdtemp(prefix="specgate-knee-steps-")) / "engine.log")
        engine.start()
        engine.wait_healthy()
        url = spec.url
    rows = []
    try:
        for n in range(args.rounds):
            for route, k, clients in cells if n % 2 == 0 else cells[::-1]:
                row = asyncio.run(_run(url, route, k, clients, args.seconds, args.warm, args.tokens))
                rows.append({"round": n, **row})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        if engine is not None:
            engine.stop()
    points = [
        {"batch": r["batch"], "k": r["k"], "kbar": r["drafts_per_request_step"], "step_ms": r["step_ms"]} for r in rows
    ]
    several = len({r["clients"] for r in rows}) > 1
    fits = {
        "fit": fit(points) if several else None,
        "two_hinges": two_hinges(rows) if several else None,
        "two_hinges_prompts_apart": two_hinges(rows, prompt_cost=1.0) if several else None,
    }
    print(json.dumps(fits))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"rows": rows, **fits}, indent=2) + "\n")


if __name__ == "__main__":
    main()
