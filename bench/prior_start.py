"""A route's start from its pool's acceptance (controller.prior_weight) against a start from nothing, in the simulator.

Per committed scenario and seed (order alternated): `specgate-prior` (prior_weight 20), `specgate-no-prior`
(prior_weight 0, as shipped: k = 0 until exploration has measured the route), and the static k baselines; printed as
median [min-max] over seeds of mean and p99 TPOT over the best static k of the same seed.

    python bench/prior_start.py [--seeds 3] [--only NAME]
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace
from pathlib import Path

import yaml
from specgate.controllers.controller import ControllerSettings
from specgate.offline.simulator import AdaptiveSchedule, Policy, Scenario, make_policy, run, scenario_from_dict


def policy(name: str, scenario: Scenario) -> Policy:
    if name == "specgate-prior":
        return AdaptiveSchedule(scenario, ControllerSettings(prior_weight=20.0), name=name)
    if name == "specgate-no-prior":
        return AdaptiveSchedule(scenario, ControllerSettings(prior_weight=0.0), name=name)
    return make_policy(name, scenario)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--only")
    args = ap.parse_args()
    for path in sorted((Path(__file__).parent / "scenarios").glob("*.yaml")):
        if args.only and args.only not in path.stem:
            continue
        base = scenario_from_dict(yaml.safe_load(path.read_text()))
        statics = [f"static-k{k}" for k in range(base.max_k + 1)]
        names = ["specgate-prior", "specgate-no-prior", *statics]
        ratios: dict[str, dict[str, list[float]]] = {n: {"mean": [], "p99": []} for n in names[:2]}
        for seed in range(args.seeds):
            scenario = replace(base, seed=base.seed + 1000 * seed)
            got = {n: run(scenario, policy(n, scenario)).summary() for n in (names if seed % 2 == 0 else names[::-1])}
            for key, metric in (("mean", "mean_tpot_ms"), ("p99", "p99_tpot_ms")):
                best = min(float(got[s][metric]) for s in statics)
                for n in names[:2]:
                    ratios[n][key].append(float(got[n][metric]) / best)
        cells = []
        for n in names[:2]:
            m, p = ratios[n]["mean"], ratios[n]["p99"]
            cells.append(
                f"{n} mean x{statistics.median(m):.3f} [{min(m):.3f}-{max(m):.3f}] "
                f"p99 x{statistics.median(p):.3f} [{min(p):.3f}-{max(p):.3f}]"
            )
        print(f"{base.name:16s} " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
