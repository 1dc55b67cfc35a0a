from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.speedup import SpeedupMeter


def test_ratio_of_per_token_times_once_both_sides_have_data() -> None:
    m = SpeedupMeter(min_samples=3)
    for _ in range(3):
        m.add("code", 0, 100, 1.0)  # 10 ms per token without speculation
    assert m.speedup("code") is None  # nothing measured with speculation yet
    for _ in range(3):
        m.add("code", 4, 100, 0.4)  # 4 ms per token with it
    assert m.speedup("code") == pytest.approx(2.5)
    assert m.speedup("chat") is None


def test_ignores_unusable_requests() -> None:
    m = SpeedupMeter(min_samples=1)
    m.add("r", 0, 1, 1.0)
    m.add("r", 0, 10, None)
    m.add("r", 3, 10, 0.0)
    assert m.speedup("r") is None


def test_follows_a_change() -> None:
    m = SpeedupMeter(decay=0.9, min_samples=3)
    for _ in range(50):
        m.add("r", 0, 50, 0.5)
        m.add("r", 2, 50, 0.25)
    assert m.speedup("r") == pytest.approx(2.0)
    for _ in range(60):
        m.add("r", 2, 50, 0.6)  # speculation got slower than no speculation
    assert m.speedup("r") == pytest.approx(0.5 / 0.6, rel=0.02)


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(2, 500), st.floats(0.001, 100)), min_size=1, max_size=60))
def test_always_positive_and_finite(samples: list[tuple[int, int, float]]) -> None:
    m = SpeedupMeter(min_samples=1)
    for k, tokens, seconds in samples:
        m.add("r", k, tokens, seconds)
    s = m.speedup("r")
    assert s is None or (s > 0 and s < float("inf"))
