"""The best batch-size table in hindsight: the strongest route-blind baseline a scenario allows (a simulator run).

vLLM's dynamic speculative decoding applies one table `batch size -> k` to every request at every step. Which table
is best depends on the workload; an operator could at most have tuned it on the traffic after the fact. This finds
that table by coordinate descent on the simulator's own result: the batch axis is cut into buckets at the sizes
vLLM's docs use, each bucket's k is tried at every value with the others held, the best kept, until a full pass
changes nothing (at most `passes`). It starts from the best static k, so it is never worse than that.

    python -m specgate.offline.hindsight bench/scenarios/bursts.yaml
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import yaml
from specgate.offline.simulator import BatchTable, Scenario, StaticK, run, scenario_from_dict

__all__ = ["BUCKETS", "hindsight_table"]

# Largest batch size of each bucket (the last is open-ended).
BUCKETS: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 10**9)

Table = tuple[tuple[int, int], ...]


def _score(scenario: Scenario, table: Table, seeds: Sequence[int]) -> float:
    total = 0.0
    for seed in seeds:
        got = run(replace(scenario, seed=seed), BatchTable(0, "vllm-table-hindsight", table)).summary()
        total += got["mean_tpot_ms"] if got["mean_tpot_ms"] is not None else float("inf")
    return total / len(seeds)


def _table(ks: Sequence[int]) -> Table:
    return tuple(zip(BUCKETS, ks, strict=True))


def hindsight_table(scenario: Scenario, seeds: Sequence[int], passes: int = 2) -> tuple[Table, float, int]:
    """(table, its mean TPOT in ms averaged over `seeds`, simulator runs spent)."""
    runs = 0
    static = []
    for k in range(scenario.max_k + 1):
        static.append(
            sum(run(replace(scenario, seed=s), StaticK(k)).summary()["mean_tpot_ms"] or float("inf") for s in seeds)
            / len(seeds)
        )
        runs += len(seeds)
    best_k = min(range(len(static)), key=static.__getitem__)
    ks = [best_k] * len(BUCKETS)
    best = static[best_k]
    for _ in range(passes):
        moved = False
        for i in range(len(BUCKETS)):
            for k in range(scenario.max_k + 1):
                if k == ks[i]:
                    continue
                trial = [*ks[:i], k, *ks[i + 1 :]]
                got = _score(scenario, _table(trial), seeds)
                runs += len(seeds)
                if got < best:
                    ks, best, moved = trial, got, True
        if not moved:
            break
    return _table(ks), best, runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="+", help="scenario YAML files")
    ap.add_argument("--seeds", type=int, default=1, help="search on this many seeds of each scenario")
    ap.add_argument("--out", help="write {scenario: {table, mean_tpot_ms, seeds, runs}} here (merged if present)")
    args = ap.parse_args()
    found: dict[str, object] = {}
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        found = json.loads(out.read_text())
    for path in args.scenario:
        scenario = scenario_from_dict(yaml.safe_load(Path(path).read_text()))
        seeds = [scenario.seed + 1000 * i for i in range(args.seeds)]
        table, tpot, runs = hindsight_table(scenario, seeds)
        found[scenario.name] = {
            "table": [list(row) for row in table],
            "mean_tpot_ms": round(tpot, 3),
            "seeds": seeds,
            "runs": runs,
        }
        print(f"{scenario.name}: {table} mean TPOT {tpot:.2f} ms ({runs} runs)", flush=True)
        if out is not None:
            out.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
