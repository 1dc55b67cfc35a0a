"""The semantic cache's parts: the built-in embedding, the scope (only the text may differ), the index's threshold,
bounds and expiry. In the gateway: tests/gateway/test_semantic_cache.py; precision on a labelled set:
bench/semantic_precision.py."""

from __future__ import annotations

import time

import numpy as np
import orjson
from hypothesis import given
from hypothesis import strategies as st
from specgate.runtime.response_cache import canonical_body
from specgate.runtime.semantic_cache import HashedEmbedder, SemanticIndex, semantic_scope, semantic_text

EMBED = HashedEmbedder()


def _sim(a: str, b: str) -> float:
    return float(EMBED.vector(a) @ EMBED.vector(b))


def _scope(body: dict[str, object], tenant: str | None = "acme", route: str = "chat") -> bytes | None:
    return semantic_scope("chat", route, tenant, canonical_body(body))


def _chat(text: str, **extra: object) -> dict[str, object]:
    return {
        "model": "m",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}],
    } | extra


@given(st.text(max_size=200))
def test_vectors_are_unit_or_zero(text: str) -> None:
    norm = float(np.linalg.norm(EMBED.vector(text)))
    assert abs(norm - 1.0) < 1e-5 or norm == 0.0


def test_case_punctuation_and_spacing_do_not_matter() -> None:
    assert _sim("How do I reverse a list in Python?", "how do i reverse a list in python") > 0.999
    assert _sim("How do I reverse a list in Python?", "How do I  reverse a   list in Python ?!") > 0.999


def test_a_light_rewording_is_near_and_another_question_is_far() -> None:
    base = "How do I reverse a list in Python?"
    near = _sim(base, "How can I reverse a list in Python?")
    far = _sim(base, "How do I sort a dictionary by value in Python?")
    assert near > 0.7 > far


def test_only_the_text_may_differ_within_a_scope() -> None:
    a = _scope(_chat("What is a monad?"))
    assert a is not None and a == _scope(_chat("What's a monad?"))
    assert a != _scope(_chat("What is a monad?", max_tokens=5))  # sampling parameters
    assert a != _scope(_chat("What is a monad?"), tenant="globex")  # tenants
    assert a != _scope(_chat("What is a monad?"), route="code")
    one_turn = {"model": "m", "messages": [{"role": "user", "content": "Be brief. What is a monad?"}]}
    assert a != _scope(one_turn)  # the roles of the messages


def test_prompt_lists_have_no_scope() -> None:
    body = canonical_body({"model": "m", "prompt": ["a", "b"]})
    assert semantic_scope("completions", "chat", None, body) is None
    assert semantic_scope("completions", "chat", None, canonical_body({"model": "m", "prompt": "a"})) is not None


def test_the_text_is_every_message() -> None:
    assert semantic_text("chat", _chat("Q")) == "Be brief.\nQ"
    assert semantic_text("completions", {"prompt": "P"}) == "P"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_index_answers_above_the_threshold_within_a_scope_only() -> None:
    index = SemanticIndex(threshold=0.9, max_entries=10, ttl_s=60)
    v = EMBED.vector("How do I reverse a list in Python?")
    index.expect(b"k1", b"scope", v)
    assert index.nearest(b"scope", v) is None  # not kept yet: the answer may still fail
    index.commit(b"k1")
    match = index.nearest(b"scope", EMBED.vector("how do I reverse a list in python"))
    assert match is not None and match.key == b"k1" and match.similarity > 0.99
    assert index.nearest(b"other", v) is None
    assert index.nearest(b"scope", EMBED.vector("How do I sort a dictionary by value?")) is None


def test_the_index_is_bounded_and_expires() -> None:
    clock = Clock()
    index = SemanticIndex(threshold=0.5, max_entries=3, ttl_s=10, clock=clock)
    vectors = [EMBED.vector(f"question number {i} about topic {i}") for i in range(5)]
    for i, v in enumerate(vectors):
        index.expect(bytes([i]), b"s", v)
        index.commit(bytes([i]))
        clock.now += 1
    assert len(index) == 3
    found = index.nearest(b"s", vectors[0])
    assert found is None or found.key != bytes([0])  # the oldest went first
    clock.now += 20
    assert index.nearest(b"s", vectors[4]) is None  # expired
    index.forget(bytes([4]))
    assert len(index) == 2


def test_commit_without_expect_does_nothing() -> None:
    index = SemanticIndex(threshold=0.5, max_entries=3, ttl_s=10)
    index.commit(b"never-looked-up")
    assert len(index) == 0


def test_scope_digest_is_stable() -> None:
    body = orjson.loads(canonical_body(_chat("x")))
    assert _scope(body) == _scope(_chat("x"))


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 11)), max_size=60), st.integers(0, 11))
def test_the_index_answers_as_a_search_over_what_it_holds(ops: list[tuple[bool, int]], probe: int) -> None:
    """Adds and removals in any order (rows moved inside the scope's matrix): the answer is the best kept vector."""
    rng = np.random.default_rng(0)
    vectors = [v / np.linalg.norm(v) for v in rng.normal(size=(12, 16)).astype(np.float32)]
    index = SemanticIndex(threshold=-1.0, max_entries=8, ttl_s=60)
    held: list[int] = []
    for add, i in ops:
        key = bytes([i])
        if add:
            index.expect(key, b"s", vectors[i])
            index.commit(key)
            held = [h for h in held if h != i] + [i]
            held = held[-8:]  # the oldest go beyond max_entries
        else:
            index.forget(key)
            held = [h for h in held if h != i]
    found = index.nearest(b"s", vectors[probe])
    if not held:
        assert found is None
        return
    best = max(held, key=lambda h: float(vectors[h] @ vectors[probe]))
    assert found is not None and found.key == bytes([best])
    assert len(index) == len(held)


def test_entries_from_another_replica_keep_their_age_and_are_not_sent_back() -> None:
    clock = Clock()
    index = SemanticIndex(threshold=0.9, max_entries=10, ttl_s=10, clock=clock)
    index.shared = True
    v = EMBED.vector("How do I reverse a list in Python?")
    now = time.time()
    assert index.merge(b"k1", b"s", v, now - 4)  # indexed elsewhere four seconds ago
    assert not index.merge(b"k1", b"s", v, now)  # already known
    assert not index.merge(b"k2", b"s", v, now - 11)  # older than the TTL: its answer is gone
    assert not index.merge(b"k3", b"s", v[:10], now)  # another embedding size in the scope
    assert index.nearest(b"s", v) is not None
    clock.now += 7  # 11 s after it was indexed elsewhere: expired here too
    assert index.nearest(b"s", v) is None
    assert index.drain() == []  # merged entries are not shared back
    index.expect(b"k4", b"s", v)
    index.commit(b"k4")
    assert [entry[0] for entry in index.drain()] == [b"k4"]
