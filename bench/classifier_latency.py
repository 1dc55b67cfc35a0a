"""Benchmark: time to classify one request with the bundled model (p50 / p99), on this machine.

A prompt of about 2,000 tokens (~8,000 characters of standard-library source) and the held-out set's
own prompts; the classifier reads a bounded head and tail, so longer prompts cost the same. Several
rounds, reported as the median of the rounds' percentiles and the worst round (the machine is shared).

    python bench/classifier_latency.py [--repeat 20000]
"""

from __future__ import annotations

import argparse
import json
import platform
import sysconfig
import time
from pathlib import Path

import numpy as np
from specgate.controllers.classifier import classification_text
from specgate.runtime.classifier_files import BUNDLED_MODEL, HELD_OUT_DATA, load_model


def measure(model, bodies: list[dict], repeat: int) -> np.ndarray:  # type: ignore[no-untyped-def]  # model: ClassifierModel, imported lazily
    times = np.empty(repeat)
    for i in range(repeat):
        body = bodies[i % len(bodies)]
        start = time.perf_counter()
        model.predict(classification_text(body))
        times[i] = time.perf_counter() - start
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20000, help="classifications per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    model = load_model(BUNDLED_MODEL)
    source = (Path(sysconfig.get_paths()["stdlib"]) / "argparse.py").read_text()[:8000]
    long_prompt = [{"messages": [{"role": "user", "content": "Refactor this module:\n" + source}]}]
    held_out = [json.loads(line) for line in HELD_OUT_DATA.read_text().splitlines()]
    measure(model, long_prompt, 500)  # warm-up
    results = {}
    for name, bodies in (("2k-token prompt", long_prompt), ("held-out prompts", held_out)):
        rounds = [measure(model, bodies, args.repeat) * 1e6 for _ in range(args.rounds)]
        p50 = [float(np.percentile(t, 50)) for t in rounds]
        p99 = [float(np.percentile(t, 99)) for t in rounds]
        results[name] = {
            "p50_us_median": round(float(np.median(p50)), 1),
            "p99_us_median": round(float(np.median(p99)), 1),
            "p99_us_worst_round": round(max(p99), 1),
            "rounds": args.rounds,
            "per_round": args.repeat,
        }
    print(
        json.dumps(
            {
                "machine": f"{platform.machine()}, {platform.python_version()}, numpy {np.__version__}",
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
