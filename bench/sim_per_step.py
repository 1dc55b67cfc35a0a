"""Per-step control in the simulator: specgate's per-route schedules applied per step (`specgate`, what the gateway
runs on pools with the plugin) and per dispatch (`specgate-per-dispatch`, pools without it) against vLLM's
batch tables (applied per step, as vLLM does), every static k, and the per-step oracle, on every committed scenario,
over several seeds (the simulator is deterministic per seed). A simulator run, not an engine.

    python bench/sim_per_step.py --seeds 3 --out bench/results/sim-per-step.json

Prints mean TPOT per scenario and policy as median [min-max] over the seeds, and each policy's ratio to the best
baseline (best static k, vLLM tables) of the same seed. `vllm-table-hindsight` is the batch table found for the
scenario by `python -m specgate.offline.hindsight` (bench/results/hindsight-tables.json: searched on the scenario's
first seed, so on that seed it is the best in hindsight, on the others tuned on the same traffic's distribution).
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import fields, replace
from pathlib import Path

import yaml
from specgate.controllers.controller import ControllerSettings
from specgate.offline.simulator import (
    AdaptiveSchedule,
    BatchTable,
    Policy,
    Scenario,
    make_policy,
    run,
    scenario_from_dict,
)

TABLES = ["vllm-batch-table", "vllm-dsd-docs"]
HINDSIGHT = Path("bench/results/hindsight-tables.json")
METRICS = ("mean_tpot_ms", "p99_tpot_ms")


def seeded(base: Scenario, seed: int) -> Scenario:
    """Seed number `seed` of a scenario, as this benchmark numbers them (bench/sim_timeline.py and
    bench/shape_fit_scan.py replay the same runs)."""
    return replace(base, seed=base.seed + 1000 * seed)


def scenario_at(name: str, seed: int) -> Scenario:
    """bench/scenarios/NAME.yaml at seed number `seed`."""
    path = Path(__file__).resolve().parent / "scenarios" / f"{name}.yaml"
    return seeded(scenario_from_dict(yaml.safe_load(path.read_text())), seed)


def policy(
    name: str,
    scenario: Scenario,
    hindsight: dict[str, list[list[int]]],
    variants: dict[str, dict[str, object]] | None = None,
) -> Policy:
    if name == "vllm-table-hindsight":
        return BatchTable(0, name, tuple((int(hi), int(k)) for hi, k in hindsight[scenario.name]))
    if variants and name in variants:
        given = dict(variants[name])
        explore = str(given.pop("explore", "request"))
        settings = replace(ControllerSettings(), **given)  # type: ignore[arg-type]  # checked by dataclass
        return AdaptiveSchedule(scenario, settings=settings, name=name, explore=explore)
    return make_policy(name, scenario)


def variant(text: str) -> tuple[str, dict[str, object]]:
    """NAME=JSON: the per-step specgate policy with these controller settings (ControllerSettings fields)."""
    name, _, settings = text.partition("=")
    try:
        parsed = json.loads(settings)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not NAME=JSON: {text!r} ({exc})") from None
    known = {f.name for f in fields(ControllerSettings)} | {"explore"}
    unknown = set(parsed) - known if isinstance(parsed, dict) else {"?"}
    if isinstance(parsed, dict) and parsed.get("explore", "request") not in EXPLORE_MODES:
        unknown = {"explore"}
    if not name or unknown:
        raise argparse.ArgumentTypeError(f"not NAME=JSON of controller settings: {text!r}")
    return f"specgate[{name}]", parsed


OURS = ["specgate", "specgate-per-dispatch", "oracle-per-step"]
EXPLORE_MODES = ("request", "step", "shared-step")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="bench/scenarios")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--only", help="run only the scenario files whose name contains this")
    ap.add_argument("--out")
    ap.add_argument(
        "--variant",
        type=variant,
        action="append",
        default=[],
        help="NAME=JSON: also run specgate per step with these controller settings, as specgate[NAME] "
        '(e.g. z0=\'{"z": 0}\'); an "explore" key spreads exploration differently: request (the gateway\'s), '
        "step, shared-step (offline/simulator.py AdaptiveSchedule)",
    )
    args = ap.parse_args()
    variants = dict(args.variant)
    found = json.loads(HINDSIGHT.read_text()) if HINDSIGHT.exists() else {}
    hindsight = {name: entry["table"] for name, entry in found.items()}
    report: dict[str, dict[str, list[dict[str, object]]]] = {}
    for path in sorted(Path(args.scenarios).glob("*.yaml")):
        if args.only and args.only not in path.stem:
            continue
        base = scenario_from_dict(yaml.safe_load(path.read_text()))
        tables = [*TABLES, *(["vllm-table-hindsight"] if base.name in hindsight else [])]
        baselines = [*(f"static-k{k}" for k in range(base.max_k + 1)), *tables]
        policies = [*baselines, *OURS, *variants]
        runs: dict[str, list[dict[str, object]]] = {p: [] for p in policies}
        ratios: dict[str, dict[str, list[float]]] = {m: {p: [] for p in policies} for m in METRICS}
        for seed in range(args.seeds):
            scenario = seeded(base, seed)
            order = policies if seed % 2 == 0 else policies[::-1]
            got = {p: run(scenario, policy(p, scenario, hindsight, variants)).summary() for p in order}
            for m in METRICS:
                best = min(float(v[m]) for p, v in got.items() if p in baselines and v[m] is not None)
                for p in policies:
                    if got[p][m] is not None:
                        ratios[m][p].append(float(got[p][m]) / best)
            for p in policies:
                runs[p].append(got[p])
        report[base.name] = runs
        print(
            f"\n{base.name}: median [min-max] over {args.seeds} seeds of mean TPOT (ms) and its ratio to the best "
            "baseline of the same seed; p99 TPOT ratio to the best baseline's p99"
        )
        for p in policies:
            vals = [float(r["mean_tpot_ms"]) for r in runs[p] if r["mean_tpot_ms"] is not None]
            mean, p99 = ratios["mean_tpot_ms"][p], ratios["p99_tpot_ms"][p]
            print(
                f"  {p:22s} {statistics.median(vals):8.2f} [{min(vals):.2f}-{max(vals):.2f}]"
                f"   x{statistics.median(mean):.3f} [{min(mean):.3f}-{max(mean):.3f}]"
                f"   p99 x{statistics.median(p99):.3f} [{min(p99):.3f}-{max(p99):.3f}]",
                flush=True,
            )
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
