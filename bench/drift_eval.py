"""Measure the drift detector on simulated traffic: false alarms per day and detection delay.

One window per minute (>= 200 verified draft positions each), acceptance drawn per window from a Beta around
the route's rate (overdispersed, like real traffic where requests are correlated).

    python bench/drift_eval.py [--days 20] [--routes 8]
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import replace

from specgate.controllers.drift import DriftDetector, DriftSettings
from specgate.runtime.settings import drift_settings

from specgate.config import DriftConfig


def settings(routes: int = 1) -> DriftSettings:
    """The gateway's defaults (`alerts.drift`), persistence included."""
    return replace(drift_settings(DriftConfig()), routes=routes)


def window(rng: random.Random, rate: float, n: int = 300, concentration: float = 300.0) -> tuple[int, int]:
    p = rng.betavariate(rate * concentration, (1 - rate) * concentration)
    return n, sum(rng.random() < p for _ in range(n))


def false_alarms_per_day(days: int, routes: int, seed: int = 1) -> float:
    rng = random.Random(seed)
    fired = 0
    for r in range(routes):
        d = DriftDetector(settings(routes))
        for minute in range(days * 1440):
            u = d.add(*window(rng, 0.7 - 0.05 * (r % 3)), None, 60.0 * minute)
            fired += bool(u and u.changed and u.state == "firing")
    return fired / days


def delay(drop_to: float, trials: int = 30, seed: int = 2, ramp: int = 0) -> dict[str, float]:
    rng = random.Random(seed)
    delays = []
    for _ in range(trials):
        d = DriftDetector(settings())
        for minute in range(-60, 0):
            d.add(*window(rng, 0.7), None, 60.0 * minute)
        for minute in range(1, 600):
            rate = 0.7 + (drop_to - 0.7) * min(1.0, minute / ramp) if ramp else drop_to
            u = d.add(*window(rng, rate), None, 60.0 * minute)
            if u and u.changed and u.state == "firing":
                delays.append(minute)
                break
        else:
            delays.append(float("inf"))
    found = sorted(x for x in delays if x != float("inf"))
    return {
        "detected": len(found) / trials,
        "median_minutes": found[len(found) // 2] if found else None,
        "max_minutes": found[-1] if found else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--days", type=int, default=20)
    parser.add_argument("--routes", type=int, default=8)
    args = parser.parse_args()
    print(
        json.dumps(
            {
                "false_alarms_per_day_all_routes": false_alarms_per_day(args.days, args.routes),
                "routes": args.routes,
                "days": args.days,
                "step_0.70_to_0.55": delay(0.55),
                "step_0.70_to_0.40": delay(0.40),
                "ramp_0.70_to_0.50_over_60min": delay(0.50, ramp=60),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
