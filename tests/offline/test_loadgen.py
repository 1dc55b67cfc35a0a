"""The bench's verdict for any subset of policies (a run of one policy crashed it once), and policy names checked
before any phase runs."""

from __future__ import annotations

from typing import Any

import pytest
from specgate.offline.loadgen import check_policies, verdict


def rows(*tpots: float | None) -> dict[str, Any]:
    return {f"p{i}": {"mean_tpot_ms": t, "requests": 10} for i, t in enumerate(tpots, 1)}


def test_one_policy_alone() -> None:
    for name in ("adaptive", "static-k4"):
        out = verdict({name: rows(10.0, 20.0)})
        assert out["overall_mean_tpot_ms"] == {name: 15.0}
        assert out["fastest_per_phase"] == {"p1": name, "p2": name}
        assert "adaptive_over_best_static_tpot_per_phase" not in out


def test_adaptive_against_the_statics_that_ran() -> None:
    out = verdict({"static-k4": rows(8.0, 30.0), "adaptive": rows(10.0, 15.0), "static-k0": rows(20.0, 20.0)})
    assert out["adaptive_compared_with"] == ["static-k0", "static-k4"]
    assert out["adaptive_over_best_static_tpot_per_phase"] == {"p1": 1.25, "p2": 0.75}
    assert out["fastest_per_phase"] == {"p1": "static-k4", "p2": "adaptive"}
    assert out["tpot_over_fastest_per_phase"]["static-k0"] == {"p1": 2.5, "p2": 1.333}


def test_phases_without_answers_are_unknown() -> None:
    out = verdict({"adaptive": rows(None, 12.0), "static-k2": rows(None, None)})
    assert out["adaptive_over_best_static_tpot_per_phase"] == {"p1": None, "p2": None}
    assert out["fastest_per_phase"] == {"p1": None, "p2": "adaptive"}
    assert out["overall_mean_tpot_ms"] == {"adaptive": 12.0, "static-k2": None}


@pytest.mark.parametrize("bad", ["static-k9", "static", "static-kx", "k4", ""])
def test_unknown_policies_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="unknown policy"):
        check_policies(["adaptive", bad], max_k=4)
    check_policies(["adaptive", "static-k0", "static-k4"], max_k=4)


@pytest.mark.parametrize("warm_up_s", [0.0, 0.5])
def test_the_warm_up_loads_the_engine_directly_and_no_policy_counts_it(warm_up_s: float) -> None:
    """Against an OpenAI-compatible upstream that counts requests (tests/fault_upstream.py, not an engine): the
    warm-up's requests reach it without the gateway, and no policy's results include them."""
    from specgate.offline.loadgen import Phase, run_bench

    from tests.conftest import free_port
    from tests.fault_upstream import FaultUpstream

    upstream = FaultUpstream("ok")
    try:
        report = run_bench(
            upstream.url,
            "m",
            4,
            None,
            (Phase("p", 0.5, 2, 0.5),),
            port=free_port(),
            policies=["static-k0"],
            warm_up_s=warm_up_s,
        )
    finally:
        upstream.close()
    measured = report["policies"]["static-k0"]["p"]["requests"]
    assert measured > 0 and report["warm_up_s"] == warm_up_s
    warm = report.get("warm_up_requests", 0)
    assert (warm > 0) == bool(warm_up_s)
    # Every warm-up request reached the upstream; requests cut at the phase's end are not counted in `measured`.
    assert measured + warm <= upstream.hits <= measured + warm + 2


def test_adaptive_variants_are_known_policies() -> None:
    from specgate.offline.loadgen import ADAPTIVE

    check_policies(list(ADAPTIVE), 4, draft_cost=0.02)
    assert ADAPTIVE["adaptive"] == {}  # the controller as shipped
    with pytest.raises(ValueError, match="--draft-cost"):
        check_policies(["adaptive", "adaptive-draft-cost"], 4)
    with pytest.raises(ValueError, match="adaptive-prior"):
        check_policies(["adaptive-typo"], 4)


def test_phases_from_the_command_line() -> None:
    from specgate.offline.loadgen import Phase, parse_phases

    assert parse_phases("low:40:2:0.5, burst:15:32:0.5,after:30:2:0") == (
        Phase("low", 40.0, 2, 0.5),
        Phase("burst", 15.0, 32, 0.5),
        Phase("after", 30.0, 2, 0.0),
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("low:40:2", "NAME:SECONDS"),
        (":40:2:0.5", "NAME:SECONDS"),
        ("low:x:2:0.5", "numbers"),
        ("low:40:2.5:0.5", "integer"),
        ("low:0:2:0.5", "SECONDS > 0"),
        ("low:40:0:0.5", "CLIENTS >= 1"),
        ("low:40:2:1.5", "CODE_SHARE within"),
        ("a:1:1:0,a:1:1:0", "differ"),
    ],
)
def test_bad_phases_are_refused_before_anything_runs(
    spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from specgate.gateway.cli import main
    from specgate.offline.loadgen import parse_phases

    with pytest.raises(ValueError, match=message):
        parse_phases(spec)
    # The CLI says why and exits 2 before starting a gateway or sending a request (no engine listens there).
    assert main(["bench", "--engine", "http://127.0.0.1:9", "--phases", spec]) == 2
    assert "phase" in capsys.readouterr().err
