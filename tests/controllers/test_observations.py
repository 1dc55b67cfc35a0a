from __future__ import annotations

from specgate.controllers.observations import Observation, ObservationSink, SpecStats


def obs(i: int) -> Observation:
    return Observation("r", "p", "e", 2, "engine", SpecStats(4, 2, 2, (0, 2, 0)), 5, 10 + i, None, 0.9, 1.0, False)


def test_sink_is_bounded_and_counts_drops() -> None:
    sink = ObservationSink(capacity=3)
    for i in range(5):
        sink.put(obs(i))
    assert len(sink) == 3 and sink.dropped == 2 and sink.total == 5
    assert [o.completion_tokens for o in sink.drain()] == [12, 13, 14]
    assert len(sink) == 0


def test_derived_numbers() -> None:
    o = obs(0)
    assert o.spec is not None and o.spec.mean_acceptance_length == 2.0
    assert o.tpot_s == 0.1
    assert SpecStats(0, 0, 0).mean_acceptance_length == 1.0
