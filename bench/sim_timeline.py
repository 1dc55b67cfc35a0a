"""Where in a simulated scenario specgate gains or loses against a baseline: its schedules and its step-time shape
every few seconds, then the mean TPOT per 10 s of specgate beside the baseline's (same seed, same traffic), and both
runs' mean TPOT. For reading a loss in bench/sim_per_step.py's tables (docs/controller.md, session 32).

    python bench/sim_timeline.py --scenario gpu-published --seed 1 [--baseline vllm-table-hindsight] [--every 6]
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from sim_per_step import HINDSIGHT, policy, scenario_at
from specgate.offline import simulator as sim


def _per_10_s(result: sim.SimResult) -> dict[int, float]:
    """Mean TPOT (ms) of the requests finished in each 10 s."""
    bins: dict[int, list[float]] = collections.defaultdict(list)
    for at, _, tpot in result.timeline:
        if tpot is not None:
            bins[int(at // 10)].append(tpot)
    return {b: 1000 * sum(v) / len(v) for b, v in bins.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="gpu-published")
    ap.add_argument(
        "--seed", type=int, default=0, help="numbered as bench/sim_per_step.py does (scenario seed + 1000 x)"
    )
    ap.add_argument("--baseline", default="vllm-table-hindsight", help="any policy of bench/sim_per_step.py")
    ap.add_argument("--every", type=float, default=6.0, help="seconds between two printed schedules")
    args = ap.parse_args()
    scenario = scenario_at(args.scenario, args.seed)
    tables = json.loads((Path(__file__).resolve().parent.parent / HINDSIGHT).read_text())
    hindsight = {name: entry["table"] for name, entry in tables.items()}
    ours = sim.make_policy("specgate", scenario)
    assert isinstance(ours, sim.AdaptiveSchedule)
    ticked = ours.on_tick
    next_print = [0.0]

    def on_tick(now: float, batch: float) -> None:
        ticked(now, batch)
        if now < next_print[0]:
            return
        next_print[0] = now + args.every
        model = ours.ctl.cost_model("sim")
        routes = ours.ctl.table().routes
        shown = " ".join(f"{name}:{','.join(f'{lo}:{k}' for lo, k in d.schedule or ())}" for name, d in routes.items())
        print(f"t={now:.0f} batch={batch:.0f} c={model.draft_cost:g} knee={model.knee:g} {shown}")

    ours.on_tick = on_tick  # type: ignore[method-assign]
    mine = sim.run(scenario, ours)
    theirs = sim.run(scenario, policy(args.baseline, scenario, hindsight))
    a, b = _per_10_s(mine), _per_10_s(theirs)
    print("mean TPOT (ms) per 10 s, specgate / " + args.baseline + ":")
    print(" ".join(f"{10 * t}:{a[t]:.1f}/{b.get(t, float('nan')):.1f}" for t in sorted(a)))
    print(
        f"specgate {mine.summary()['mean_tpot_ms']:.3f} ms, {args.baseline} {theirs.summary()['mean_tpot_ms']:.3f} ms"
    )


if __name__ == "__main__":
    main()
