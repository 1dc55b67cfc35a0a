"""The hindsight-best batch table: never worse than the best static k it starts from, a valid vLLM table."""

from __future__ import annotations

from specgate.offline.hindsight import BUCKETS, hindsight_table
from specgate.offline.simulator import BatchTable, StaticK, run, scenario_from_dict


def test_hindsight_table_beats_or_ties_every_static_k_on_its_own_traffic() -> None:
    # Load that swings across the knee: low (speculation pays), high (it does not).
    scenario = scenario_from_dict(
        {
            "name": "swing",
            "duration_s": 45,
            "seed": 5,
            "arrivals": [[30, 2.0], [45, 80.0]],
            "routes": [{"name": "r", "share": 1.0, "alpha": 0.8, "mean_output": 80}],
        }
    )
    table, tpot, runs = hindsight_table(scenario, [scenario.seed], passes=1)
    assert [hi for hi, _ in table] == list(BUCKETS) and all(0 <= k <= scenario.max_k for _, k in table)
    assert runs > scenario.max_k + 1
    statics = [run(scenario, StaticK(k)).summary()["mean_tpot_ms"] for k in range(scenario.max_k + 1)]
    assert tpot <= min(v for v in statics if v is not None) + 1e-9
    again = run(scenario, BatchTable(0, "vllm-table-hindsight", table)).summary()["mean_tpot_ms"]
    assert again == tpot  # deterministic per seed: the reported figure is the table's
    assert table[0][1] > table[-1][1]  # more drafts at small batches than past the knee
