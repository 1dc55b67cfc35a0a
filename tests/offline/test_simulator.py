from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from specgate.offline.simulator import all_policies, make_policy, run, scenario_from_dict

SCENARIOS = Path(__file__).resolve().parents[2] / "bench" / "scenarios"


def small(name: str, **over: object) -> object:
    data = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    data.update({"duration_s": 60, **over})
    return scenario_from_dict(data)


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_committed_scenarios_load(path: Path) -> None:
    s = scenario_from_dict(yaml.safe_load(path.read_text()))
    assert s.duration_s > 0 and s.routes
    assert {p for p in all_policies(s)} >= {"specgate", "oracle", "static-k0"}


def test_speculation_helps_at_low_load_and_hurts_at_high_load() -> None:
    low = small("low-load")
    k0 = run(low, make_policy("static-k0", low)).summary()
    k4 = run(low, make_policy("static-k4", low)).summary()
    assert k4["mean_tpot_ms"] < 0.7 * k0["mean_tpot_ms"]
    high = small("high-load")
    h0 = run(high, make_policy("static-k0", high)).summary()
    h4 = run(high, make_policy("static-k4", high)).summary()
    assert h4["goodput_tok_per_busy_s"] < h0["goodput_tok_per_busy_s"]


def test_runs_the_same_controller_and_is_deterministic() -> None:
    s = small("acceptance-drift")
    a = run(s, make_policy("specgate", s))
    b = run(s, make_policy("specgate", s))
    assert a.summary() == b.summary() and a.k_trace == b.k_trace
    assert a.finished > 100


def test_unknown_policy() -> None:
    with pytest.raises(ValueError):
        make_policy("nope", small("low-load"))
