"""The simulator against the real knee engine (issue 16): the same phases, policies and drafter, predicted beside
measured.

One simulator scenario is built from `specgate bench`'s phases as the engine runs recorded them (closed loop: each
phase's clients and code share, 64-token answers, prompts computed in the step they join), the per-route acceptance
by draft position measured on the engine (bench/drafter_acceptance.py) and a step profile of the knee engine
(`--profile`: `knee-counters`, from its step counters, bench/knee_mix_steps.py; or `knee`, the end-to-end
calibration), with the
gateway's controller settings of the bench. Each policy runs over `--seeds`; beside it, the engine's runs
(bench/knee_runs.sh: static k, adaptive, and vLLM's own batch-size table). Per phase: each policy's mean TPOT
(end-to-end time over tokens, what the bench measures) predicted / measured, and whether the simulator ranks the
policies as the engine did.

    python bench/sim_vs_knee.py --runs bench/results/knee-drafter --table 1-4:4,5-2048:0 [--seeds 3]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path
from typing import Any

from specgate.backends.launcher import parse_k_per_batch_size
from specgate.backends.testbed import TINY_MODEL_DIR
from specgate.controllers.controller import ControllerSettings
from specgate.offline.loadgen import CODE_PROMPT, WORDS
from specgate.offline.simulator import AdaptiveSchedule, BatchTable, Policy, RouteScenario, Scenario, StaticK, run
from tokenizers import Tokenizer

ENGINE_POLICIES = ("static-k0", "static-k2", "static-k4", "adaptive", "vllm-table")


def _engine(runs: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, list[float]]]]:
    """The phases and, per policy and phase, the mean TPOT (ms) of every repetition."""
    out: dict[str, dict[str, list[float]]] = {}
    phases: list[dict[str, Any]] = []
    for path in sorted(runs.glob("rep*.json")):
        report = json.loads(path.read_text())
        phases = report["phases"]
        for policy, rows in report["policies"].items():
            name = "vllm-table" if path.stem.endswith("-table") else policy
            for phase, row in rows.items():
                if isinstance(row, dict) and row.get("mean_tpot_ms") is not None:
                    out.setdefault(name, {}).setdefault(phase, []).append(float(row["mean_tpot_ms"]))
    return phases, out


def _alphas(acceptance: Path, drafter: str, route: str) -> tuple[float, ...]:
    row = json.loads(acceptance.read_text())["drafters"][drafter][route]["acceptance_per_position"]
    return tuple(0.0 if a is None else float(a) for a in row)


def scenario(
    phases: list[dict[str, Any]], acceptance: Path, drafter: str, tokens: int, seed: int, profile: str = "knee-counters"
) -> Scenario:
    ends = list(itertools.accumulate(float(p["seconds"]) for p in phases))
    tok = Tokenizer.from_file(str(TINY_MODEL_DIR / "tokenizer.json"))
    chat_prompt = " ".join(WORDS[:16])  # 16 random words in the bench; their token count hardly varies
    prompt = round((len(tok.encode(CODE_PROMPT).ids) + len(tok.encode(chat_prompt).ids)) / 2)
    routes = tuple(
        RouteScenario(name, 0.5, ((0.0, a[0]),), float(tokens), None, a)
        for name, a in (("code", _alphas(acceptance, drafter, "code")), ("chat", _alphas(acceptance, drafter, "chat")))
    )
    return Scenario(
        "knee-bench-phases",
        ends[-1],
        ((ends[-1], 0.0),),
        routes,
        profile=profile,
        seed=seed,
        prompt_tokens=prompt,
        users=tuple((end, int(p["concurrency"])) for end, p in zip(ends, phases, strict=True)),
        fixed_output=True,
        prefill_in_step=True,
        method="draft_model",
        share_phases=tuple(
            (end, (float(p["code_share"]), 1 - float(p["code_share"]))) for end, p in zip(ends, phases, strict=True)
        ),
    )


def _policy(name: str, sc: Scenario, table: tuple[tuple[int, int], ...]) -> Policy:
    if name == "adaptive":
        # The bench's gateway settings (offline/loadgen.py).
        return AdaptiveSchedule(sc, settings=ControllerSettings(half_life_s=20.0, min_dwell_s=3.0))
    if name == "vllm-table":
        return BatchTable(0, "vllm-table", table)
    return StaticK(int(name.removeprefix("static-k")))


def _per_phase(result_tpots: list[tuple[float, float]], phases: list[dict[str, Any]]) -> dict[str, float | None]:
    """Mean end-to-end TPOT (ms) of the requests that finished in each phase."""
    ends = list(itertools.accumulate(float(p["seconds"]) for p in phases))
    out: dict[str, float | None] = {}
    for n, p in enumerate(phases):
        lo = ends[n - 1] if n else 0.0
        mine = [tpot for at, tpot in result_tpots if lo <= at < ends[n]]
        out[p["name"]] = round(1000 * statistics.fmean(mine), 3) if mine else None
    return out


def _ranks(values: dict[str, float]) -> list[str]:
    return sorted(values, key=values.__getitem__)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=Path("bench/results/knee-drafter"))
    ap.add_argument("--acceptance", type=Path, default=Path("bench/results/drafter-acceptance.json"))
    ap.add_argument("--drafter", default="draft_model (trained drafter)")
    ap.add_argument("--table", default="1-4:4,5-2048:0", help="the engine's batch-size table in those runs")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument(
        "--profile",
        default="knee-counters",
        choices=["knee", "knee-counters"],
        help="the simulator's step profile: the engine's counters (default) or the end-to-end calibration",
    )
    ap.add_argument("--out", type=Path, default=Path("bench/results/sim-vs-knee.json"))
    args = ap.parse_args()
    phases, measured = _engine(args.runs)
    table = tuple((hi, k) for _, hi, k in parse_k_per_batch_size(args.table))
    predicted: dict[str, dict[str, list[float]]] = {}
    for seed in range(1, args.seeds + 1):
        sc = scenario(phases, args.acceptance, args.drafter, args.tokens, seed, args.profile)
        for name in ENGINE_POLICIES:
            result = run(sc, _policy(name, sc, table), tick_s=1.0)
            for phase, value in _per_phase(result.e2e_finished, phases).items():
                if value is not None:
                    predicted.setdefault(name, {}).setdefault(phase, []).append(value)
    rows: list[dict[str, Any]] = []
    agree: dict[str, Any] = {}
    for p in phases:
        phase = p["name"]
        sim = {n: statistics.median(predicted[n][phase]) for n in ENGINE_POLICIES if phase in predicted.get(n, {})}
        eng = {n: statistics.median(measured[n][phase]) for n in ENGINE_POLICIES if phase in measured.get(n, {})}
        both = [n for n in ENGINE_POLICIES if n in sim and n in eng]
        order_sim = _ranks({n: sim[n] for n in both})
        order_eng = _ranks({n: eng[n] for n in both})
        pairs = list(itertools.combinations(both, 2))
        concordant = sum((sim[a] < sim[b]) == (eng[a] < eng[b]) for a, b in pairs)
        agree[phase] = {
            "best_simulated": order_sim[0],
            "best_measured": order_eng[0],
            "pairs_ordered_alike": f"{concordant}/{len(pairs)}",
            "order_simulated": order_sim,
            "order_measured": order_eng,
        }
        for n in both:
            rows.append(
                {
                    "phase": phase,
                    "policy": n,
                    "simulated_ms": round(sim[n], 2),
                    "measured_ms": round(eng[n], 2),
                    "measured_range_ms": [round(min(measured[n][phase]), 2), round(max(measured[n][phase]), 2)],
                    "simulated_over_measured": round(sim[n] / eng[n], 3),
                }
            )
    args.out.write_text(json.dumps({"rows": rows, "ranking": agree, "table": args.table}, indent=1) + "\n")
    print("| phase | policy | simulated mean TPOT ms | measured ms, median [min-max] | simulated / measured |")
    print("| --- | --- | ---: | ---: | ---: |")
    for r in rows:
        lo, hi = r["measured_range_ms"]
        print(
            f"| {r['phase']} | {r['policy']} | {r['simulated_ms']} | {r['measured_ms']} [{lo}-{hi}] | "
            f"{r['simulated_over_measured']} |"
        )
    for phase, a in agree.items():
        print(
            f"{phase}: best simulated {a['best_simulated']}, measured {a['best_measured']}; "
            f"pairs ordered alike {a['pairs_ordered_alike']}"
        )


if __name__ == "__main__":
    main()
