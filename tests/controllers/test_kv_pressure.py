"""KV pressure as a cap on k, only where the running requests' drafts are a material part of the cache."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.kv_pressure import KvPressure, KvReading


def full(running: float, preemptions: float = 0.0, capacity: float | None = 4096.0) -> KvReading:
    return KvReading(0.97, preemptions, capacity, running)


def test_under_pressure_drafts_are_capped_to_their_share_of_the_cache() -> None:
    kv = KvPressure(max_k=4, draft_share=0.05)  # 5% of 4,096 slots: 204 draft slots
    assert not kv.observe(KvReading(0.5, 0.0, 4096.0, 100.0), 0.0) and kv.cap is None  # no pressure: no cap
    assert not kv.observe(full(running=40), 1.0) and kv.cap is None  # 40 requests x 4 drafts fit: no cap
    assert kv.observe(full(running=100, preemptions=2), 2.0) and kv.cap == 2 and "2 preemption" in kv.reason
    assert kv.observe(full(running=250), 3.0) and kv.cap == 0
    assert not kv.observe(full(running=60), 4.0) and kv.cap == 0  # it only falls while the pressure lasts


def test_without_the_cache_size_there_is_no_cap() -> None:
    kv = KvPressure(max_k=4)
    assert not kv.observe(full(running=1000, preemptions=5, capacity=None), 0.0) and kv.cap is None


def test_the_cap_holds_between_the_thresholds_and_recovers_one_step_per_calm_period() -> None:
    kv = KvPressure(max_k=4, recover_s=30.0)
    kv.observe(full(running=100, preemptions=1), 0.0)
    assert kv.cap == 2
    assert not kv.observe(KvReading(0.8), 10.0) and kv.cap == 2  # between low and high: hold
    assert not kv.observe(KvReading(0.5), 20.0)  # calm starts
    assert not kv.observe(KvReading(0.5), 49.0) and kv.cap == 2
    assert kv.observe(KvReading(0.5), 50.0) and kv.cap == 3
    assert not kv.observe(KvReading(0.8), 60.0)  # calm broken: the clock restarts
    assert not kv.observe(KvReading(0.5), 70.0) and not kv.observe(KvReading(0.5), 99.0)
    assert kv.observe(KvReading(0.5), 100.0) and kv.cap is None  # back at the pool's max: no cap


@given(
    st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 5), st.integers(0, 500)), max_size=60),
    st.integers(0, 8),
)
def test_the_cap_stays_within_zero_and_max_and_never_rises_under_pressure(
    readings: list[tuple[float, int, int]], max_k: int
) -> None:
    kv = KvPressure(max_k=max_k, recover_s=1.0)
    for t, (usage, preemptions, running) in enumerate(readings):
        before = max_k if kv.cap is None else kv.cap
        kv.observe(KvReading(usage, preemptions, 4096.0, running), float(t))
        after = max_k if kv.cap is None else kv.cap
        assert 0 <= after <= max_k and (kv.cap is None or kv.cap < max_k)
        if preemptions or usage >= kv.low:
            assert after <= before
        if after < before:
            assert running * after <= kv.draft_share * 4096  # a new cap keeps the drafts within their share


def test_a_pool_reading_is_the_worst_endpoint_with_preemptions_summed() -> None:
    a = KvReading(0.5, preemptions=1.0, capacity_tokens=4096.0, running=3.0)
    b = KvReading(0.95, preemptions=2.0, capacity_tokens=2048.0, running=1.0)
    assert a.merged(b) == KvReading(0.95, preemptions=3.0, capacity_tokens=2048.0, running=3.0)
    assert a.merged(KvReading(0.1)) == KvReading(0.5, preemptions=1.0, capacity_tokens=4096.0, running=3.0)
    assert KvReading(0.1).merged(KvReading(0.2)).capacity_tokens is None


readings = st.builds(
    KvReading,
    st.floats(0.0, 1.0),
    st.floats(0.0, 50.0),
    st.one_of(st.none(), st.floats(16.0, 1e6)),
    st.floats(0.0, 256.0),
)


@given(readings, readings, readings)
def test_merging_does_not_depend_on_the_order_endpoints_report_in(a: KvReading, b: KvReading, c: KvReading) -> None:
    one, other = a.merged(b).merged(c), c.merged(a).merged(b)
    assert (one.usage, one.capacity_tokens, one.running) == (other.usage, other.capacity_tokens, other.running)
    assert abs(one.preemptions - other.preemptions) < 1e-9
    # A merged reading never looks calmer than any endpoint's own.
    assert one.usage >= max(a.usage, b.usage, c.usage) and one.preemptions >= a.preemptions
