from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.prefix_memory import PlacementMemory


def test_remembers_the_last_endpoint_of_each_key() -> None:
    memory = PlacementMemory(4)
    memory.put(1, "a")
    memory.put(2, "b")
    memory.put(1, "c")
    assert (memory.get(1), memory.get(2), memory.get(3)) == ("c", "b", None)


def test_forgets_the_least_recently_placed_first() -> None:
    memory = PlacementMemory(2)
    memory.put(1, "a")
    memory.put(2, "b")
    memory.put(1, "a")  # 1 placed again: 2 is now the oldest
    memory.put(3, "c")
    assert (memory.get(1), memory.get(2), memory.get(3)) == ("a", None, "c")


def test_zero_capacity_remembers_nothing() -> None:
    memory = PlacementMemory(0)
    memory.put(1, "a")
    assert memory.get(1) is None and len(memory) == 0


def test_negative_capacity_is_refused() -> None:
    with pytest.raises(ValueError):
        PlacementMemory(-1)


@given(st.integers(1, 8), st.lists(st.tuples(st.integers(0, 20), st.sampled_from("abc")), max_size=60))
def test_matches_the_last_put_of_the_most_recent_keys(capacity: int, puts: list[tuple[int, str]]) -> None:
    memory = PlacementMemory(capacity)
    for key, endpoint in puts:
        memory.put(key, endpoint)
    assert len(memory) <= capacity
    recent: list[int] = []
    for key, _ in reversed(puts):
        if key not in recent:
            recent.append(key)
    for rank, key in enumerate(recent):
        expected = next(e for k, e in reversed(puts) if k == key) if rank < capacity else None
        assert memory.get(key) == expected


def test_only_changed_placements_are_shared_and_only_when_asked() -> None:
    memory = PlacementMemory(8)
    memory.put(1, "a", 1.0)
    assert memory.drain() == []  # not shared: nothing kept for others
    memory.shared = True
    memory.put(1, "a", 2.0)  # where it already was: nothing to tell
    memory.put(1, "b", 3.0)
    memory.put(2, "a", 4.0)
    assert memory.drain() == [(1, "b", 3.0), (2, "a", 4.0)]
    assert memory.drain() == []


def test_another_replicas_placement_wins_only_when_newer() -> None:
    memory = PlacementMemory(8)
    memory.shared = True
    memory.put(1, "a", 10.0)
    assert not memory.merge(1, "b", 9.0)  # older than this replica's own
    assert memory.get(1) == "a"
    assert memory.merge(1, "b", 11.0)
    assert memory.get(1) == "b"
    assert memory.merge(2, "c", 1.0)  # a key this replica never saw
    assert memory.drain() == [(1, "a", 10.0)]  # merged placements are not shared back


def test_counts_the_conversations_each_endpoint_carries_within_the_window() -> None:
    memory = PlacementMemory(100, window_s=10.0)
    memory.put(1, "a", 0.0)
    memory.put(2, "a", 1.0)
    memory.put(3, "b", 2.0)
    assert memory.active(["a", "b", "c"], 2.0) == [2, 1, 0]
    memory.put(1, "b", 5.0)  # a conversation moved: counted where it is now, once
    assert memory.active(["a", "b"], 5.0) == [1, 2]
    # At 11.5 key 2's placement (1.0) has left the window; at 12.5 key 3's (2.0) too, key 1's newest (5.0) stays.
    assert memory.active(["a", "b"], 11.5) == [0, 2]
    assert memory.active(["a", "b"], 12.5) == [0, 1]
    assert memory.get(2) == "a"  # still remembered where it went, only no longer active


def test_forgotten_keys_are_not_counted() -> None:
    memory = PlacementMemory(2, window_s=100.0)
    for key, at in ((1, 0.0), (2, 1.0), (3, 2.0)):
        memory.put(key, "a", at)
    assert memory.active(["a"], 3.0) == [2]


def test_a_window_must_be_positive() -> None:
    with pytest.raises(ValueError):
        PlacementMemory(4, window_s=0.0)


@given(
    st.integers(1, 8),
    st.lists(st.tuples(st.integers(0, 12), st.sampled_from("abc"), st.floats(0, 5)), max_size=60),
    st.floats(1, 20),
)
def test_active_counts_match_a_recount(capacity: int, steps: list[tuple[int, str, float]], window: float) -> None:
    memory = PlacementMemory(capacity, window_s=window)
    now = 0.0
    for key, endpoint, dt in steps:
        now += dt
        memory.put(key, endpoint, now)
        # A recount from what the memory holds: keys whose last placement is within the window, per endpoint.
        expected = {name: 0 for name in "abc"}
        for k in range(13):
            if memory.get(k) is not None and memory._last[k][1] >= now - window:
                expected[memory._last[k][0]] += 1
        assert memory.active(list("abc"), now) == [expected[name] for name in "abc"]


def test_a_placement_read_late_from_another_replica_is_remembered_not_counted() -> None:
    memory = PlacementMemory(10, window_s=10.0)
    memory.put(1, "a", 100.0)
    assert memory.merge(2, "b", 50.0)  # placed long ago elsewhere
    assert memory.get(2) == "b"
    assert memory.active(["a", "b"], 100.0) == [1, 0]
    assert memory.merge(3, "b", 95.0)  # recent: counted
    assert memory.active(["a", "b"], 100.0) == [1, 1]
