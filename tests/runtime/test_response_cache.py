"""The response cache's data structure and key (runtime/response_cache.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from specgate.runtime.response_cache import ResponseCache, cache_control, cache_key, canonical_body, deterministic


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 300)), max_size=60))
def test_bounds_and_byte_count_hold_whatever_is_put(puts: list[tuple[int, int]]) -> None:
    cache = ResponseCache(ttl_s=60, max_entries=5, max_bytes=600, max_entry_bytes=250)
    for key, size in puts:
        kept = cache.put(bytes([key]), 200, b"x" * size)
        assert kept == (size <= 250)
        assert len(cache) <= 5 and cache.bytes <= 600
    assert cache.bytes == sum(e.size for e in cache._entries.values())


def test_least_recently_used_goes_first_and_entries_expire() -> None:
    clock = Clock()
    cache = ResponseCache(ttl_s=10, max_entries=2, max_bytes=10_000, max_entry_bytes=1000, clock=clock)
    cache.put(b"a", 200, b"1")
    cache.put(b"b", 200, b"2")
    assert cache.get(b"a") is not None  # a is now the most recent
    cache.put(b"c", 200, b"3")
    assert cache.get(b"b") is None and cache.get(b"a") is not None and cache.evictions == 1
    clock.now = 10.5
    assert cache.get(b"a") is None and len(cache) == 1  # expired on read


def test_the_key_ignores_key_order_speculation_and_user_only() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    base = cache_key("chat", "r", "t", canonical_body(body))
    same = {"temperature": 0, "user": "u1", "vllm_xargs": {"num_speculative_tokens": 3}, **body}
    assert cache_key("chat", "r", "t", canonical_body(same)) == base
    assert cache_key("chat", "r", "t2", canonical_body(body)) != base
    assert cache_key("chat", "r2", "t", canonical_body(body)) != base
    assert cache_key("completions", "r", "t", canonical_body(body)) != base
    assert cache_key("chat", "r", None, canonical_body(body)) != base
    other = {**body, "vllm_xargs": {"top_k": 5}}  # other engine arguments do change the answer
    assert cache_key("chat", "r", "t", canonical_body(other)) != base


def test_determinism_and_cache_control() -> None:
    assert deterministic({"temperature": 0}) and deterministic({"temperature": 0.0})
    assert deterministic({"temperature": 0.9, "seed": 3})
    assert not deterministic({}) and not deterministic({"temperature": 0.1}) and not deterministic({"seed": True})
    assert cache_control(None) == "use" and cache_control("max-age=0") == "use"
    assert cache_control("No-Cache") == "refresh" and cache_control("no-cache, no-store") == "bypass"
