"""Control-loop cost: one controller tick for R routes over P pools (issue 15 asks <= 5 ms for 100 x 10); a tick
computes every pool's route schedules. Also the admin view of every pool (`/admin/pools/{pool}/schedules`: fresh
schedules and the route-blind vLLM table, computed on request). Pure CPU, no engine.

    python bench/tick_cost.py --routes 100 --pools 10 --repeat 30

Prints the median and the 10th-90th percentile of each, over `--repeat` ticks after a warm-up.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from specgate.controllers.controller import ControllerSettings, PoolSpec, RouteSpec, SpeculationController
from specgate.controllers.observations import Observation, SpecStats


def _controller(routes: int, pools: int, rng: random.Random) -> SpeculationController:
    pool_specs = [PoolSpec(f"p{i}", 4, "gpu") for i in range(pools)]
    route_specs = [RouteSpec(f"r{i}", f"p{i % pools}", 0, 4) for i in range(routes)]
    ctl = SpeculationController(ControllerSettings(min_dwell_s=0.0), route_specs, pool_specs)
    for i in range(routes):
        alpha = rng.uniform(0.2, 0.9)
        for _ in range(20):
            hist = [0] * 5
            for _ in range(40):
                j = 0
                while j < 4 and rng.random() < alpha:
                    j += 1
                hist[j] += 1
            accepted = sum(j * n for j, n in enumerate(hist))
            obs = Observation(
                f"r{i}",
                f"p{i % pools}",
                "e",
                4,
                "engine",
                SpecStats(160, accepted, 40, tuple(hist)),
                10,
                40 + accepted,
                0.01,
                0.4,
                rng.uniform(1, 64),
                True,
                0.5,
            )
            ctl.observe(obs, 1.0)
    return ctl


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routes", type=int, default=100)
    ap.add_argument("--pools", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    rng = random.Random(1)
    ctl = _controller(args.routes, args.pools, rng)
    ticks: list[float] = []
    schedules: list[float] = []
    now = 2.0
    for i in range(args.repeat + 3):
        batches = {f"p{p}": rng.uniform(1, 64) for p in range(args.pools)}
        started = time.perf_counter()
        ctl.tick(now, batches)
        mid = time.perf_counter()
        for p in range(args.pools):
            ctl.schedules(f"p{p}")
        done = time.perf_counter()
        if i >= 3:
            ticks.append(1000 * (mid - started))
            schedules.append(1000 * (done - mid))
        now += 2.0
    for name, values in (("tick", ticks), ("admin schedules view of every pool", schedules)):
        print(
            f"{args.routes} routes x {args.pools} pools, {name}: median {statistics.median(values):.2f} ms "
            f"[p10 {_pct(values, 0.1):.2f} - p90 {_pct(values, 0.9):.2f}] over {len(values)}"
        )


if __name__ == "__main__":
    main()
