from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.score_load import load_scores
from specgate.controllers.score_prefix import prefix_scores

URLS = [f"http://engine-{i}:8000" for i in range(5)]
keys = st.integers(min_value=0, max_value=2**64 - 1)


def _top(key: int, names: list[str]) -> str:
    scores = prefix_scores(key, names)
    return names[scores.index(max(scores))]


@given(keys, st.permutations(URLS))
def test_ranking_does_not_depend_on_the_order_endpoints_are_listed(key: int, names: list[str]) -> None:
    """Every replica ranks alike, whatever order its config or its health filter leaves the endpoints in."""
    assert dict(zip(names, prefix_scores(key, names), strict=True)) == dict(
        zip(URLS, prefix_scores(key, URLS), strict=True)
    )


@given(keys, st.sampled_from(URLS))
def test_removing_another_endpoint_keeps_the_first_choice(key: int, removed: str) -> None:
    top = _top(key, URLS)
    if removed != top:
        assert _top(key, [u for u in URLS if u != removed]) == top


@given(keys)
def test_scores_are_the_home_the_spill_and_the_rest(key: int) -> None:
    assert sorted(prefix_scores(key, URLS)) == [0.0, 0.0, 0.0, 0.5, 1.0]


def test_keys_spread_over_endpoints() -> None:
    counts = Counter(_top(key * 0x9E3779B97F4A7C15 % 2**64, URLS) for key in range(5_000))
    assert set(counts) == set(URLS)
    assert max(counts.values()) < 1.2 * min(counts.values())


def test_no_key_scores_nothing() -> None:
    assert prefix_scores(None, URLS) == [0.0] * 5
    assert prefix_scores(7, URLS[:1]) == [1.0]


@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=8))
def test_load_scores_rank_the_least_loaded_first(loads: list[float]) -> None:
    scores = load_scores(loads)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[loads.index(min(loads))] == 1.0
    for a, b in zip(loads, scores, strict=True):
        for c, d in zip(loads, scores, strict=True):
            if a < c:
                assert b >= d


@given(keys, st.sampled_from(URLS))
def test_the_last_endpoint_ranks_first_and_the_home_second(key: int, last: str) -> None:
    home = _top(key, URLS)
    scores = dict(zip(URLS, prefix_scores(key, URLS, last), strict=True))
    assert scores[last] == 1.0
    assert sorted(scores.values()) == [0.0, 0.0, 0.0, 0.5, 1.0]
    if last != home:
        assert scores[home] == 0.5
    else:
        assert scores == dict(zip(URLS, prefix_scores(key, URLS), strict=True))


@given(keys)
def test_a_last_endpoint_that_is_not_a_candidate_changes_nothing(key: int) -> None:
    assert prefix_scores(key, URLS[:3], URLS[4]) == prefix_scores(key, URLS[:3])
