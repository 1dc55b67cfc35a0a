"""`specgate advise` on a record whose truth is known: two routes drafting at k = 4, one accepting 90% per position
and one 5%. The advisor must find each route's acceptance (near the truth, mostly inside its intervals), rank k
accordingly, say which route should not speculate, and write its JSON and PNG. Real-engine data: docs/advisor.md."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from specgate.offline.advisor import advise, load_records, render, route_evidence

from tests.controllers.test_controller import hist

pytestmark = pytest.mark.slow

TRUTH = {"code": 0.9, "chat": 0.05}


def _records(seconds: int = 90, rate: float = 3.0) -> list[dict[str, Any]]:
    rng = random.Random(3)
    out = []
    t = 1_000.0
    while t < 1_000.0 + seconds:
        t += rng.expovariate(rate)
        route = rng.choice(sorted(TRUTH))
        out.append(
            {
                "v": 1,
                "t": t,
                "route": route,
                "pool": "p",
                "tenant": None,
                "k": 4,
                "scheduled": False,
                "prompt_tokens": 200,
                "completion_tokens": 120,
                "histogram": list(hist(TRUTH[route], 4, 40, rng)),
                "by_k": [],
            }
        )
    return out


def test_the_acceptance_it_finds_is_near_the_truth_and_its_intervals_mostly_hold_it() -> None:
    evidence = route_evidence(_records(), 4)
    held = checked = 0
    for route, alpha in TRUTH.items():
        ev = evidence[route]
        for position in range(1, 5):
            point, low, high = (ev.alpha(position, w) for w in ("point", "low", "high"))
            if ev.estimator.trials[position] < 30:
                continue
            assert point is not None and low is not None and high is not None
            assert abs(point - alpha) < 0.08, (route, position, point)
            checked += 1
            held += low <= alpha <= high
    # 90% intervals: most hold the truth (with this seed all six positions with 30 or more trials do).
    assert checked >= 6 and held >= checked - 2


def test_advice_ranks_k_and_names_the_route_that_should_not_speculate() -> None:
    # An EAGLE drafter on an H100 costs ~2 ms per step whatever k: 5% acceptance never pays that back.
    report = advise(_records(), "h100-llama8b-eagle", seeds=1)
    assert report["no_speculation"] == ["chat"]
    code = report["routes"]["code"]["expected_length"]["point"]
    assert code[4] > code[1] > code[0] == 1.0
    policies = report["policies"]
    assert all(v["runs"] == 3 for v in policies.values())  # low, point, high x 1 seed
    # The hindsight table is searched on the point estimate from the best static k: never worse there.
    best_static = min(policies[f"static-k{k}"]["mean_tpot_ms"] for k in range(5))
    assert policies["hindsight-table"]["mean_tpot_ms"] <= best_static * 1.05
    text = render(report)
    assert "recommended num_speculative_tokens_per_batch_size" in text and "chat" in text


def test_the_cli_writes_json_and_png_and_refuses_what_is_not_a_record(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _records(30)) + "\nnot json\n")
    records, skipped = load_records([path])
    assert skipped == 1 and len(records) > 50
    out = tmp_path / "advice"
    cmd = [sys.executable, "-m", "specgate", "advise", "--from", str(path), "--seeds", "1", "--out", str(out)]
    cmd += ["--engine-profile", "cpu"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "advice.json").read_text())["requests"] == len(records)
    assert (out / "advice.png").stat().st_size > 1000
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    refused = subprocess.run([*cmd[:5], str(empty)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "no records" in refused.stderr
