"""Per-route acceptance per draft position of a testbed's drafters, measured on the real engine (issue 16).

For each drafter it starts the knee engine (plugin on, per-request metrics on), sends every route's requests one at
a time straight to the engine (no gateway, no load: acceptance, not speed), and reads each answer's
`metrics.speculative_decoding`. Position i's acceptance is P(draft i accepted | drafts 1..i-1 accepted), from the
steps' histogram of accepted drafts; E[L] is the mean tokens a verify step writes (accepted + 1).

Routes: `code` and `chat` are `specgate bench`'s (offline/loadgen.py: a copy-heavy code prompt at temperature 0;
random words at temperature 1.5); `new-code` is the start of new functions at temperature 0 (nothing to copy);
`prose` is English requests at temperature 0.8, as chat clients send them. vLLM drafts greedily
(`draft_sample_method: greedy`, its default) and treats the draft as one-hot in rejection sampling, so under
sampling a draft is accepted with the target's probability of the drafted token.

    python bench/drafter_acceptance.py [--requests 12] [--tokens 64] [--out bench/results/drafter-acceptance.json]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import httpx
from specgate.backends.launcher import EngineProcess, EngineSpec
from specgate.backends.testbed import DRAFTER_DIR, TINY_MODEL_DIR, ensure_knee_model
from specgate.backends.vllm_response import parse_spec_metrics
from specgate.offline.loadgen import request_body

NEW_CODE = (
    "def parse_header(line):\n    ",
    "class LRUCache:\n    def __init__(self, size):\n        ",
    "for key, value in sorted(items.items()):\n    ",
    "def read_config(path):\n    with open(path) as f:\n        ",
    "import json\n\n\ndef load(name):\n    ",
    "class Parser(object):\n    def feed(self, data):\n        ",
)
PROSE = (
    "What is the capital of France, and why is it famous?",
    "Please summarise the following meeting notes in three bullet points: the budget was approved.",
    "Translate to German: the weather is nice today and we are going for a walk.",
    "Write a short, friendly reply thanking a customer for their order.",
    "Explain in two sentences why the sky looks blue in the afternoon.",
    "List three things to pack for a weekend trip to the mountains.",
)
# name -> (speculation, drafter directory or None)
DRAFTERS = {
    "ngram": ("ngram", None),
    "draft_model (trained drafter)": ("draft_model", DRAFTER_DIR),
    "draft_model (the tiny model itself)": ("draft_model", TINY_MODEL_DIR),
}


def _bodies(route: str, n: int, tokens: int, model: str) -> list[dict[str, Any]]:
    rng = random.Random(7)
    if route == "prose":
        bodies = [
            {"model": model, "prompt": PROSE[i % len(PROSE)], "max_tokens": tokens, "temperature": 0.8, "seed": i}
            for i in range(n)
        ]
    elif route == "new-code":
        bodies = [
            {"model": model, "prompt": NEW_CODE[i % len(NEW_CODE)], "max_tokens": tokens, "temperature": 0}
            for i in range(n)
        ]
    else:
        bodies = [request_body(route, rng, tokens, model) for _ in range(n)]
    for body in bodies:
        body.update(stream=False, ignore_eos=True)
    return bodies


def _positions(hist: list[int]) -> list[float | None]:
    """P(draft i accepted | 1..i-1 accepted), i = 1..k, from steps with j accepted (j = 0..k)."""
    out: list[float | None] = []
    for i in range(1, len(hist)):
        reached = sum(hist[i - 1 :])
        out.append(round(sum(hist[i:]) / reached, 3) if reached else None)
    return out


def measure(url: str, model: str, n: int, tokens: int) -> dict[str, Any]:
    routes: dict[str, Any] = {}
    with httpx.Client(timeout=120) as http:
        for route in ("code", "new-code", "chat", "prose"):
            hist: list[int] = []
            drafted = accepted = 0
            per_request: list[float] = []
            for body in _bodies(route, n, tokens, model):
                r = http.post(f"{url}/v1/completions", json=body)
                r.raise_for_status()
                spec = parse_spec_metrics(r.json())
                if spec is None or not spec.verify_steps or not spec.histogram:
                    continue
                hist = [a + b for a, b in zip(hist or [0] * len(spec.histogram), spec.histogram, strict=True)]
                drafted += spec.draft_tokens
                accepted += spec.accepted_tokens
                per_request.append(spec.accepted_tokens / spec.draft_tokens if spec.draft_tokens else 0.0)
            steps = sum(hist)
            routes[route] = {
                "requests": len(per_request),
                "steps": steps,
                "acceptance_per_position": _positions(hist),
                "acceptance_rate": round(accepted / drafted, 3) if drafted else None,
                "tokens_per_step": round(1 + sum(j * c for j, c in enumerate(hist)) / steps, 2) if steps else None,
                "per_request_acceptance_min_max": [round(min(per_request), 3), round(max(per_request), 3)]
                if per_request
                else None,
            }
    return routes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=12, help="per route and drafter")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--port", type=int, default=18720)
    ap.add_argument("--out", type=Path, default=Path("bench/results/drafter-acceptance.json"))
    args = ap.parse_args()
    target = ensure_knee_model()
    results: dict[str, Any] = {}
    for name, (speculation, drafter) in DRAFTERS.items():
        spec = EngineSpec(
            model_dir=target,
            served_name="specgate-knee",
            port=args.port,
            speculation=speculation,
            draft_model_dir=drafter,
            max_k=args.k,
        )
        engine = EngineProcess(spec, Path(tempfile.mkdtemp(prefix="specgate-drafter-")) / "engine.log")
        engine.start()
        try:
            engine.wait_healthy()
            results[name] = measure(spec.url, spec.served_name, args.requests, args.tokens)
        finally:
            engine.stop()
        print(json.dumps({name: results[name]}), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"k": args.k, "tokens": args.tokens, "drafters": results}, indent=2) + "\n")
    print("\n| drafter | route | acceptance per position 1..k | acceptance | tokens per step | per request min-max |")
    print("| --- | --- | --- | ---: | ---: | --- |")
    for name, routes in results.items():
        for route, row in routes.items():
            print(
                f"| {name} | {route} | {row['acceptance_per_position']} | {row['acceptance_rate']} | "
                f"{row['tokens_per_step']} | {row['per_request_acceptance_min_max']} |"
            )


if __name__ == "__main__":
    main()
