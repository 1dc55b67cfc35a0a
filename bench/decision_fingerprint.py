"""Whether a change to the controller left its decisions exactly as they were: runs of the controller on fixed
inputs (both objectives, pools with and without `max_num_seqs`, routes with and without SLOs, pins and bounds, dwell
on and off, and one run long enough to fill and evict every step-time window), each hashed over every decision
table, every route's expected speed-up, the decision log and the step-time fits. For refactors meant to change
nothing (the tick's cost, docs/controller.md session 32): compare against the code of another revision.

    python bench/decision_fingerprint.py [--baseline-code REV]

Exits 1 when a run's hash differs from REV's. REV's controller, schedule solver, joint solver and step-time model are
loaded beside today's (bench/tick_cost.py's `controller_at`); the estimator and policy are today's for both.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
from types import ModuleType

from specgate.controllers import controller
from specgate.controllers.decisions import DecisionTable
from tick_cost import _observe, controller_at

# (objective, max_num_seqs: one for every pool or "mix", SLOs on some routes, seed)
RUNS = [
    (objective, seqs, slo, seed)
    for objective in ("tpot", "goodput")
    for seqs in (None, 64, "mix")
    for slo in (False, True)
    for seed in (1, 2, 3)
]
_MIX = [None, 1, 64, 200]


def _short(code: ModuleType, objective: str, seqs: int | str | None, slo: bool, seed: int) -> str:
    """40 ticks of 30 routes over 4 pools of different max k, some routes pinned or bounded."""
    rng = random.Random(seed)
    pools = [
        code.PoolSpec(f"p{i}", 4 + i % 3, "gpu", max_num_seqs=_MIX[i % 4] if seqs == "mix" else seqs) for i in range(4)
    ]
    routes = [
        code.RouteSpec(
            f"r{i}",
            f"p{i % 4}",
            i % 2,
            3 + i % 4,
            None if i % 7 else 2,
            (0.02 + 0.01 * (i % 3)) if slo and i % 3 == 0 else None,
        )
        for i in range(30)
    ]
    settings = code.ControllerSettings(min_dwell_s=0.0 if seed % 2 else 4.0, objective=objective)
    ctl = code.SpeculationController(settings, routes, pools)
    alphas = [rng.uniform(0.1, 0.95) for _ in routes]
    _observe(ctl, alphas, 4, rng, 1.0, 5)
    digest = hashlib.sha256()
    now = 2.0
    for _ in range(40):
        _observe(ctl, alphas, 4, rng, now, rng.choice([0, 1, 2]))
        loads = {f"p{p}": None if rng.random() < 0.05 else rng.uniform(1, 300) for p in range(4)}
        _hash_tick(digest, ctl, ctl.tick(now, loads))
        now += 2.0
    digest.update(
        repr(
            [(r.route, r.old_k, r.new_k, r.reason, sorted((k, str(v)) for k, v in r.inputs.items())) for r in ctl.log]
        ).encode()
    )
    return digest.hexdigest()[:16]


def _long(code: ModuleType) -> str:
    """350 ticks of 40 routes over 4 pools, one to three finished requests per route each: every pool's step-time
    window fills and evicts."""
    rng = random.Random(7)
    pools = [code.PoolSpec(f"p{i}", 4, "gpu") for i in range(4)]
    routes = [code.RouteSpec(f"r{i}", f"p{i % 4}", 0, 4) for i in range(40)]
    ctl = code.SpeculationController(code.ControllerSettings(min_dwell_s=0.0), routes, pools)
    alphas = [rng.uniform(0.2, 0.9) for _ in routes]
    _observe(ctl, alphas, 4, rng, 1.0, 20)
    digest = hashlib.sha256()
    now = 2.0
    for i in range(350):
        _observe(ctl, alphas, 4, rng, now, 1 + i % 3)
        _hash_tick(digest, ctl, ctl.tick(now, {f"p{p}": rng.uniform(1, 200) for p in range(4)}))
        for pool in pools:
            model = ctl.cost_model(pool.name)
            digest.update(repr((model.coefficients(), model.reshapes)).encode())
        now += 2.0
    return digest.hexdigest()[:16]


def _hash_tick(digest: hashlib._Hash, ctl: controller.SpeculationController, table: DecisionTable | None) -> None:
    if table is not None:
        routes = table.routes
        digest.update(
            repr(
                sorted(
                    (name, d.k, d.schedule, d.explore_k, round(d.explore_share, 12), d.explore_until)
                    for name, d in routes.items()
                )
            ).encode()
        )
    for name in ctl.route_names():
        digest.update(repr((name, round(ctl._routes[name].speedup, 9))).encode())


def fingerprints(code: ModuleType) -> dict[str, str]:
    out = {f"{o}/{s}/{'slo' if slo else 'no-slo'}/{seed}": _short(code, o, s, slo, seed) for o, s, slo, seed in RUNS}
    out["long"] = _long(code)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-code", metavar="REV", help="compare with the controller of git revision REV")
    args = ap.parse_args()
    today = fingerprints(controller)
    if not args.baseline_code:
        for name, digest in today.items():
            print(f"{name}: {digest}")
        return
    before = fingerprints(controller_at(args.baseline_code))
    differ = [name for name in today if today[name] != before[name]]
    for name in today:
        print(f"{name}: {today[name]} {'==' if name not in differ else '!='} {before[name]}")
    print(f"{len(today) - len(differ)} of {len(today)} runs identical to {args.baseline_code}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
