from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.breaker import BreakerSettings, CircuitBreaker


def test_opens_after_consecutive_failures_and_half_opens_after_the_wait() -> None:
    b = CircuitBreaker(BreakerSettings(failure_threshold=3, open_s=10, max_open_s=60))
    for _ in range(2):
        b.on_failure(0)
    b.on_success()  # not consecutive
    for _ in range(2):
        b.on_failure(1)
    assert b.allows(1) and b.state == "closed"
    b.on_failure(1)
    assert b.state == "open" and not b.allows(5)
    assert b.allows(11) and b.state == "half_open"
    b.on_dispatch()
    assert not b.allows(11), "one trial at a time"
    b.on_failure(12)
    assert b.state == "open" and b.open_for == 20, "a failed trial doubles the wait"
    assert not b.allows(31) and b.allows(32)
    b.on_dispatch()
    b.on_success()
    assert b.state == "closed" and b.allows(32) and b.failures == 0


@given(st.lists(st.tuples(st.sampled_from(["ok", "fail", "dispatch"]), st.floats(0, 5)), max_size=200))
def test_never_waits_longer_than_max_and_always_recovers(events: list[tuple[str, float]]) -> None:
    s = BreakerSettings(failure_threshold=2, open_s=1, max_open_s=8)
    b = CircuitBreaker(s)
    now = 0.0
    for kind, dt in events:
        now += dt
        if kind == "fail":
            b.on_failure(now)
        elif kind == "ok":
            b.on_success()
        elif b.allows(now):
            b.on_dispatch()
        assert b.open_for <= s.max_open_s
    # however it got here, after the longest wait a trial is allowed again
    if b.state != "closed":
        b.trial_in_flight = False if b.state == "open" else b.trial_in_flight
        assert b.allows(now + s.max_open_s) or b.trial_in_flight
