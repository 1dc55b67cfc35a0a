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
