"""Control-loop cost: one controller tick for R routes over P pools (issue 15 asks <= 5 ms for 100 x 10); a tick
computes every pool's route schedules. Also the admin view of every pool (`/admin/pools/{pool}/schedules`: fresh
schedules and the route-blind vLLM table, computed on request). Pure CPU, no engine.

    python bench/tick_cost.py --routes 100 --pools 10 --repeat 60 [--baseline-code REV] [--evidence 1]
        [--max-num-seqs N] [--objective tpot|goodput] [--warmup 3]

Before each tick (untimed) every route gets `--evidence` finished requests, as on a busy gateway: each tick then
works on fresh estimates and refits the pools' step times. Prints the median and the 10th-90th percentile of each,
over `--repeat` ticks after `--warmup` untimed ones (3; ~250 fill every pool's step-time window at one request
per route per tick, the steady state of a long-running gateway, where each fit also folds out evicted samples); for
the tick, its wall time and the process's CPU time during it. With
`--baseline-code REV` the controller, schedule solver and step-time model of git revision REV run beside today's on
the same inputs, taking turns tick by tick (order swapped each tick), and the ratio of the medians is printed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import time
from types import ModuleType

from code_at import ROOT, module_at
from specgate.controllers import controller
from specgate.controllers.observations import Observation, SpecStats


def controller_at(rev: str) -> ModuleType:
    """controllers/controller.py as it was at `rev`, using that revision's schedule solver (with its joint solver,
    where it has one) and step-time model."""
    solver = {}
    found = subprocess.run(["git", "cat-file", "-e", f"{rev}:controllers/joint_k.py"], cwd=ROOT, check=False)
    if found.returncode == 0:
        module_at(rev, "controllers/joint_k.py", "joint_k_at_rev")
        solver = {"from specgate.controllers.joint_k import": "from joint_k_at_rev import"}
    module_at(rev, "controllers/schedule.py", "schedule_at_rev", solver)
    module_at(rev, "controllers/cost_model.py", "cost_model_at_rev")
    rewrite = {
        "from specgate.controllers.schedule import": "from schedule_at_rev import",
        "from specgate.controllers.cost_model import": "from cost_model_at_rev import",
    }
    return module_at(rev, "controllers/controller.py", "controller_at_rev", rewrite)


def _controller(
    routes: int,
    pools: int,
    rng: random.Random,
    code: ModuleType = controller,
    max_num_seqs: int | None = None,
    objective: str | None = None,
) -> tuple[controller.SpeculationController, list[float]]:
    """A controller of `routes` routes over `pools` pools, and each route's acceptance (what `_observe` draws its
    answers from), with 20 answers per route observed. `max_num_seqs`: every pool's; `objective`: the controller's
    (a revision without the field runs without it)."""
    full = {"max_num_seqs": max_num_seqs} if max_num_seqs and hasattr(code.PoolSpec("p", 4), "max_num_seqs") else {}
    pool_specs = [code.PoolSpec(f"p{i}", 4, "gpu", **full) for i in range(pools)]
    route_specs = [code.RouteSpec(f"r{i}", f"p{i % pools}", 0, 4) for i in range(routes)]
    chosen = {"objective": objective} if objective and hasattr(code.ControllerSettings(), "objective") else {}
    ctl = code.SpeculationController(code.ControllerSettings(min_dwell_s=0.0, **chosen), route_specs, pool_specs)
    alphas = [rng.uniform(0.2, 0.9) for _ in range(routes)]
    _observe(ctl, alphas, pools, rng, 1.0, 20)
    return ctl, alphas


def _observe(
    ctl: controller.SpeculationController,
    alphas: list[float],
    pools: int,
    rng: random.Random,
    now: float,
    per_route: int,
) -> None:
    """`per_route` finished requests of every route (40 verify steps each at k = 4, route i accepting each draft with
    probability alphas[i]): between two ticks of a busy gateway every route has some, so each tick works on fresh
    evidence (without any, routes go stale after `stale_after_s` and a tick stops solving: a longer run would time
    the wrong thing)."""
    for i, alpha in enumerate(alphas):
        for _ in range(per_route):
            hist = [0] * 5
            for _ in range(40):
                j = 0
                while j < 4 and rng.random() < alpha:
                    j += 1
                hist[j] += 1
            accepted = sum(j * n for j, n in enumerate(hist))
            spec = SpecStats(160, accepted, 40, tuple(hist))
            obs = Observation(
                f"r{i}",
                f"p{i % pools}",
                "e",
                4,
                "engine",
                spec,
                10,
                40 + accepted,
                0.01,
                0.4,
                rng.uniform(1, 64),
                True,
                0.5,
            )
            ctl.observe(obs, now)


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routes", type=int, default=100)
    ap.add_argument("--pools", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--baseline-code", metavar="REV", help="also time the controller of git revision REV, in turns")
    ap.add_argument(
        "--max-num-seqs",
        type=int,
        help="every pool's engines' max_num_seqs (speculation.max_num_seqs): under the goodput objective its batch "
        "size is solved for the TPOT too (default: unset, as in the config)",
    )
    ap.add_argument(
        "--objective",
        choices=["tpot", "goodput"],
        help="the controller's objective (controller.objective; default: the controller's own)",
    )
    ap.add_argument(
        "--evidence",
        type=int,
        default=1,
        help="finished requests per route before each tick (0: none, so fits stay cached and routes go stale after "
        "stale_after_s: keep --repeat under ~25 then)",
    )
    ap.add_argument(
        "--warmup",
        type=int,
        default=3,
        help="untimed ticks first (about 250 fill every pool's step-time window: the steady state)",
    )
    args = ap.parse_args()
    codes = {"today": controller}
    if args.baseline_code:
        codes[f"at {args.baseline_code}"] = controller_at(args.baseline_code)
    # The same routes and evidence for each code (same seed), the same loads tick by tick.
    made = {
        name: _controller(args.routes, args.pools, random.Random(1), code, args.max_num_seqs, args.objective)
        for name, code in codes.items()
    }
    controllers = {name: ctl for name, (ctl, _) in made.items()}
    alphas = made["today"][1]  # the same for every code (same seed)
    evidence = {name: random.Random(3) for name in codes}
    loads = random.Random(2)
    ticks: dict[str, list[float]] = {name: [] for name in codes}
    # CPU time of the process beside the wall time: on this shared machine another process's burst lands in the wall
    # time of whatever tick it interrupts; the CPU time is what the tick itself cost (numpy runs the tick's arrays on
    # one thread, so on an idle machine the two agree).
    cpu: dict[str, list[float]] = {name: [] for name in codes}
    views: dict[str, list[float]] = {name: [] for name in codes}
    now = 2.0
    for i in range(args.repeat + args.warmup):
        batches = {f"p{p}": loads.uniform(1, 64) for p in range(args.pools)}
        order = list(controllers.items())
        for name, ctl in order if i % 2 == 0 else order[::-1]:
            _observe(ctl, alphas, args.pools, evidence[name], now - 1.0, args.evidence)
            started, started_cpu = time.perf_counter(), time.process_time()
            ctl.tick(now, batches)
            mid, mid_cpu = time.perf_counter(), time.process_time()
            for p in range(args.pools):
                ctl.schedules(f"p{p}")
            done = time.perf_counter()
            if i >= args.warmup:
                ticks[name].append(1000 * (mid - started))
                cpu[name].append(1000 * (mid_cpu - started_cpu))
                views[name].append(1000 * (done - mid))
        now += 2.0
    for name in codes:
        timed = (
            ("tick", ticks[name]),
            ("tick, CPU time", cpu[name]),
            ("admin schedules view of every pool", views[name]),
        )
        for what, values in timed:
            print(
                f"{name}: {args.routes} routes x {args.pools} pools, {what}: median {statistics.median(values):.2f} "
                f"ms [p10 {_pct(values, 0.1):.2f} - p90 {_pct(values, 0.9):.2f}] over {len(values)}"
            )
    if len(codes) > 1:
        (today, base) = (statistics.median(ticks[name]) for name in codes)
        print(f"tick today / at {args.baseline_code}: {today / base:.2f}")
        (today, base) = (statistics.median(cpu[name]) for name in codes)
        print(f"tick CPU time today / at {args.baseline_code}: {today / base:.2f}")


if __name__ == "__main__":
    main()
