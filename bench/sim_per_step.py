"""Per-step control in the simulator: specgate's per-route schedules against the per-dispatch controller, vLLM's
batch tables (applied per step, as vLLM does), every static k, and the per-step oracle, on every committed scenario,
over several seeds (the simulator is deterministic per seed). A simulator run, not an engine.

    python bench/sim_per_step.py --seeds 3 --out bench/results/sim-per-step.json

Prints mean TPOT per scenario and policy as median [min-max] over the seeds, and each policy's ratio to the best
baseline (best static k, vLLM tables) of the same seed.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace
from pathlib import Path

import yaml
from specgate.offline.simulator import make_policy, run, scenario_from_dict

TABLES = ["vllm-batch-table", "vllm-dsd-docs"]
OURS = ["specgate", "specgate-schedule", "oracle-per-step"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="bench/scenarios")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--only", help="run only the scenario files whose name contains this")
    ap.add_argument("--out")
    args = ap.parse_args()
    report: dict[str, dict[str, list[float | None]]] = {}
    for path in sorted(Path(args.scenarios).glob("*.yaml")):
        if args.only and args.only not in path.stem:
            continue
        base = scenario_from_dict(yaml.safe_load(path.read_text()))
        baselines = [*(f"static-k{k}" for k in range(base.max_k + 1)), *TABLES]
        policies = [*baselines, *OURS]
        rows: dict[str, list[float | None]] = {p: [] for p in policies}
        ratios: dict[str, list[float]] = {p: [] for p in policies}
        for seed in range(args.seeds):
            scenario = replace(base, seed=base.seed + 1000 * seed)
            order = policies if seed % 2 == 0 else policies[::-1]
            got = {p: run(scenario, make_policy(p, scenario)).summary()["mean_tpot_ms"] for p in order}
            best = min(v for p, v in got.items() if p in baselines and v is not None)
            for p in policies:
                rows[p].append(got[p])
                if got[p] is not None:
                    ratios[p].append(got[p] / best)
        report[base.name] = rows
        print(f"\n{base.name}: mean TPOT ms, median [min-max] over {args.seeds} seeds; ratio to the best baseline")
        for p in policies:
            vals = [v for v in rows[p] if v is not None]
            r = ratios[p]
            print(
                f"  {p:18s} {statistics.median(vals):8.2f} [{min(vals):.2f}-{max(vals):.2f}]"
                f"   x{statistics.median(r):.3f} [{min(r):.3f}-{max(r):.3f}]",
                flush=True,
            )
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
