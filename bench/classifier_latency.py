"""Benchmark: time to classify one request with the bundled model (p50 / p99), on this machine.

A prompt of about 2,000 tokens (~8,000 characters of standard-library source), the held-out template set's prompts
and the hand-written realistic set's; the classifier reads a bounded head and tail, so longer prompts cost the
same. Several rounds, reported as the median of the rounds' percentiles and the worst round (the machine is shared).
With `--baseline MODEL.npz` the same rounds also time that model, the two alternating order round by round, and the
ratios (this model / baseline) of the medians are printed. With `--baseline-code REV` the baseline is the same model
file read by the classifier code of git revision REV (`controllers/classifier.py` as it was then), to time a change of
the code alone.

    python bench/classifier_latency.py [--repeat 20000] [--baseline old-model.npz] [--baseline-code REV]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sysconfig
import time
from pathlib import Path
from types import ModuleType

import numpy as np
from code_at import module_at
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


def classifier_at(rev: str) -> ModuleType:
    """The classifier module as it was at git revision `rev`, imported under a name of its own, with the pattern
    prefilter of that revision where it had one."""
    try:
        module_at(rev, "controllers/pattern_prefilter.py", "pattern_prefilter_at_rev")
    except subprocess.CalledProcessError:  # older than the prefilter
        return module_at(rev, "controllers/classifier.py", "classifier_at_rev")
    rewrite = {"specgate.controllers.pattern_prefilter import": "pattern_prefilter_at_rev import"}
    return module_at(rev, "controllers/classifier.py", "classifier_at_rev", rewrite)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20000, help="classifications per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", default=str(BUNDLED_MODEL), help="model to time (default: the bundled one)")
    parser.add_argument("--baseline", help="a second model timed in the same rounds, for ratios")
    parser.add_argument("--baseline-code", metavar="REV", help="baseline: the same model read by the code of REV")
    args = parser.parse_args()
    models = {"model": load_model(args.model)}
    if args.baseline:
        models["baseline"] = load_model(args.baseline)
    elif args.baseline_code:
        old = classifier_at(args.baseline_code)
        models["baseline"] = old.ClassifierModel.from_arrays(models["model"].to_arrays())
        same = [models["baseline"].predict(b)[0] == models["model"].predict(b)[0] for b in ("def f(x): pass", "hi")]
        assert all(same), "the two codes label the same text differently"
    source = (Path(sysconfig.get_paths()["stdlib"]) / "argparse.py").read_text()[:8000]
    long_prompt = [{"messages": [{"role": "user", "content": "Refactor this module:\n" + source}]}]
    held_out = [json.loads(line) for line in HELD_OUT_DATA.read_text().splitlines()]
    realistic = [json.loads(line) for line in (HELD_OUT_DATA.parent / "realistic.jsonl").read_text().splitlines()]
    for m in models.values():
        measure(m, long_prompt, 500)  # warm-up
    results: dict[str, dict] = {name: {} for name in models}
    sets = (("2k-token prompt", long_prompt), ("held-out prompts", held_out), ("realistic prompts", realistic))
    for set_name, bodies in sets:
        rounds: dict[str, list[np.ndarray]] = {name: [] for name in models}
        for r in range(args.rounds):
            order = list(models) if r % 2 == 0 else list(reversed(models))
            for name in order:
                rounds[name].append(measure(models[name], bodies, args.repeat) * 1e6)
        for name, times in rounds.items():
            p50 = [float(np.percentile(t, 50)) for t in times]
            p99 = [float(np.percentile(t, 99)) for t in times]
            results[name][set_name] = {
                "p50_us_median": round(float(np.median(p50)), 1),
                "p99_us_median": round(float(np.median(p99)), 1),
                "p99_us_worst_round": round(max(p99), 1),
                "rounds": args.rounds,
                "per_round": args.repeat,
            }
    report: dict[str, object] = {"results": results["model"]}
    if "baseline" in models:
        report["baseline"] = results["baseline"]
        report["ratio_to_baseline"] = {
            set_name: {
                q: round(row[q] / results["baseline"][set_name][q], 2) for q in ("p50_us_median", "p99_us_median")
            }
            for set_name, row in results["model"].items()
        }
    print(
        json.dumps(
            {
                "machine": f"{platform.machine()}, {platform.python_version()}, numpy {np.__version__}",
                **report,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
