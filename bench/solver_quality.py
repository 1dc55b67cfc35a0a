"""How good the joint k solver's answers are: random pools (1-10 routes, spread acceptance and shares, proposal rates,
bounds and pins, TPOT SLOs on some), each engine kind's step-time prior and drafter, at every batch size of the
schedule grid, half of them with random schedules in force as a start. Pure CPU, no engine.

    python bench/solver_quality.py --trials 150 --seed 0 [--baseline-code REV]

Prints, for today's `joint_optima` (and REV's, run on the same problems): cells where exhaustive search (pools of up
to 4 routes, every third batch size) finds better (fewer SLO violations, then more goodput), and with a baseline the
cells where today's answer is better, worse or the same, with the worst ratios; and the time each took.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from collections.abc import Mapping, Sequence
from types import ModuleType

from code_at import module_at
from specgate.controllers import schedule
from specgate.controllers.cost_model import StepCostModel, stacked_predictor
from specgate.controllers.policy import Assignment, RouteState, StepTime, evaluate


def _lengths(alpha: float, q: float, k_max: int) -> tuple[float, ...]:
    return tuple(1 + q * (sum(alpha**i for i in range(k + 1)) - 1) for k in range(k_max + 1))


def _pool(rng: random.Random, size: int, slo: bool) -> list[RouteState]:
    routes = []
    for i in range(size):
        k_max, k_min = rng.choice([4, 4, 4, 3, 5, 7]), rng.choice([0, 0, 0, 0, 1])
        if rng.random() < 0.1:
            k_min = k_max = 2  # pinned
        alpha, q = rng.uniform(0.05, 0.95), rng.choice([1.0, 1.0, rng.uniform(0.05, 1)])
        target = rng.uniform(0.002, 0.03) if slo and rng.random() < 0.5 else None
        routes.append(RouteState(f"r{i}", rng.uniform(0.01, 1), k_min, k_max, _lengths(alpha, q, k_max), target, q))
    return routes


def _better(a: Assignment, b: Assignment) -> bool:
    if abs(a.slo_violation - b.slo_violation) > 1e-9:
        return a.slo_violation < b.slo_violation
    return a.goodput > b.goodput * (1 + 1e-9)


def _exhaustive(routes: Sequence[RouteState], batch: float, step: StepTime) -> Assignment:
    best: Assignment | None = None
    for ks in itertools.product(*[range(r.k_min, r.k_max + 1) for r in routes]):
        a = evaluate(routes, dict(zip([r.name for r in routes], ks, strict=True)), batch, step)
        best = a if best is None or _better(a, best) else best
    assert best is not None
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=150, help="problem sets (1, 3 or 10 pools each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--baseline-code", metavar="REV", help="also solve with controllers/schedule.py of git REV")
    args = ap.parse_args()
    codes: dict[str, ModuleType] = {"today": schedule}
    if args.baseline_code:
        codes[args.baseline_code] = module_at(args.baseline_code, "controllers/schedule.py", "schedule_at_rev")
    rng = random.Random(args.seed)
    grid = [float(b) for b in schedule.BATCH_GRID]
    seconds = dict.fromkeys(codes, 0.0)
    misses = dict.fromkeys(codes, 0)
    searched = 0
    verdicts = {"better": 0, "worse": 0, "same": 0}
    worst: list[float] = []
    for _ in range(args.trials):
        slo = rng.random() < 0.3
        models = [
            StepCostModel(
                rng.choice(["gpu", "cpu", "knee"]), method=rng.choice([None, "draft_model", "eagle3", "dflash"])
            )
            for _ in range(rng.choice([1, 3, 10]))
        ]
        problems = [schedule.PoolProblem(_pool(rng, rng.choice([1, 2, 3, 4, 5, 10]), slo), m.predict) for m in models]
        starts: list[list[Mapping[str, int]] | None] = [None] * len(problems)
        if rng.random() < 0.5:
            starts = [[{r.name: rng.randint(r.k_min, r.k_max) for r in pr.routes} for _ in grid] for pr in problems]
        step = stacked_predictor(models)
        answers = {}
        for name, code in codes.items():
            started = time.perf_counter()
            answers[name] = code.joint_optima(problems, grid, starts, step)
            seconds[name] += time.perf_counter() - started
        for i, (pr, model) in enumerate(zip(problems, models, strict=True)):
            for j, b in enumerate(grid):
                got = {name: evaluate(pr.routes, a[i][j], b, model.predict) for name, a in answers.items()}
                if args.baseline_code:
                    new, old = got["today"], got[args.baseline_code]
                    verdict = "better" if _better(new, old) else "worse" if _better(old, new) else "same"
                    verdicts[verdict] += 1
                    if verdict == "worse" and abs(new.slo_violation - old.slo_violation) <= 1e-9:
                        worst.append(new.goodput / old.goodput)
                if len(pr.routes) <= 4 and j % 3 == 0:
                    searched += 1
                    best = _exhaustive(pr.routes, b, model.predict)
                    for name in codes:
                        misses[name] += _better(best, got[name])
    for name in codes:
        print(f"{name}: exhaustive search better in {misses[name]} of {searched} cells; {seconds[name]:.2f} s in all")
    if args.baseline_code:
        cells = sum(verdicts.values())
        print(
            f"today against {args.baseline_code}, {cells} cells: better {verdicts['better']}, worse {verdicts['worse']}"
            f", same {verdicts['same']}; worst goodput ratios where as many SLO violations: "
            f"{[round(r, 3) for r in sorted(worst)[:5]]}"
        )


if __name__ == "__main__":
    main()
