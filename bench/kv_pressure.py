"""KV pressure in the simulator: what capping k under a full KV cache buys or costs (docs/controller.md).

Policies, on each KV-bound scenario, over seeds with the order alternated: `specgate` (as shipped: the KV rule off),
`specgate-kv-cap` (`controller.kv_cap: true`: k capped where the running requests' drafts would take more than
`kv_draft_share` of the cache), `specgate-off-when-full` (a blanket rule: k = 0 whenever the cache is full or
preempts, i.e. a draft share of 0), and static k = 0 and k = max.

    python bench/kv_pressure.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace
from pathlib import Path

import yaml
from specgate.controllers.controller import ControllerSettings
from specgate.offline.simulator import AdaptiveSchedule, Policy, Scenario, make_policy, run, scenario_from_dict

SCENARIO = Path(__file__).parent / "scenarios" / "kv-pressure.yaml"


def policy(name: str, scenario: Scenario) -> Policy:
    if name == "specgate-kv-cap":
        return AdaptiveSchedule(scenario, ControllerSettings(kv_cap=True), name=name)
    if name == "specgate-off-when-full":
        return AdaptiveSchedule(scenario, ControllerSettings(kv_cap=True, kv_draft_share=0.0), name=name)
    return make_policy(name, scenario)


def scenarios() -> list[Scenario]:
    base = scenario_from_dict(yaml.safe_load(SCENARIO.read_text()))
    # The same load with short contexts and many running requests: there the drafts' slots are a real share.
    short = replace(base, name="kv-pressure-short-context", prompt_tokens=24, kv_tokens=640)
    return [base, replace(short, routes=tuple(replace(r, mean_output=48) for r in short.routes))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    names = ["specgate", "specgate-kv-cap", "specgate-off-when-full", "static-k0", "static-k4"]
    for base in scenarios():
        got: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        for seed in range(args.seeds):
            scenario = replace(base, seed=base.seed + 1000 * seed)
            for name in names if seed % 2 == 0 else names[::-1]:
                got[name].append(run(scenario, policy(name, scenario)).summary())
        print(f"\n{base.name}: median [min-max] over {args.seeds} seeds")
        for name in names:
            cols = []
            for key in ("mean_tpot_ms", "p99_tpot_ms", "finished", "preemptions"):
                vals = [float(s[key]) for s in got[name]]
                cols.append(f"{key} {statistics.median(vals):g} [{min(vals):g}-{max(vals):g}]")
            print(f"  {name:24s} " + "  ".join(cols), flush=True)


if __name__ == "__main__":
    main()
