from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers.pattern_prefilter import GramIndex, PatternSet, required_literals


def test_literals_are_read_off_the_pattern() -> None:
    assert required_literals(r"\b(?:write|build)\b.{0,40}\b(?:function|cli)") == {"write", "build"}
    # The longest guaranteed run of each branch: "field" (the "s" is optional), "list " (then a choice), "tl" (";"
    # is optional, and "tl" comes before "dr"); a literal inside another one of the same set is dropped.
    assert required_literals(r"fields?\b|\blist (?:all|every)|tl;?dr") == {"field", "list ", "tl"}
    assert required_literals(r"implement|implementa|xx+y") == {"implement", "x"}
    assert required_literals(r"(?:abc)+|d{2,}") == {"abc", "d"}  # repeats of at least one keep their literal
    assert required_literals(r"\d+|foo") == frozenset()  # one branch guarantees no literal: searched in full


def test_a_pattern_without_literals_is_searched_in_full() -> None:
    patterns = PatternSet({"digits": r"\d+", "word": r"\bfoo\b|bar"})
    assert patterns.anchors("digits") == frozenset() and patterns.anchors("word") == {"foo", "bar"}
    assert patterns.matching("a 42") == ["digits"] and patterns.matching("foobar 7") == ["digits", "word"]
    assert patterns.matching("xfoox") == [] and patterns.candidates("xfoox") == {"digits", "word"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["ab", "abc", "bca", "ca", "c", " ", "x"]), max_size=30).map("".join))
def test_pattern_sets_find_what_a_full_search_finds(text: str) -> None:
    # Overlapping literals ("abc" holds "bca"'s start, "ca" and "c"; "ab" is a prefix of "abc"): a pattern whose only
    # literal sits inside or under another's must not be lost.
    patterns = {"p": r"abc\b", "q": r"bca", "r": r"(?<=a)ca", "s": r"c x", "t": r"ab(?:c|x)?"}
    expected = [name for name, pattern in patterns.items() if re.search(pattern, text)]
    assert PatternSet(patterns).matching(text) == expected


def test_a_gram_index_keys_literals_by_their_leading_ngram() -> None:
    patterns = PatternSet({"a": r"hello|yo", "b": r"help me|x"})
    index = GramIndex([patterns], (3, 4, 5))
    assert index.keys == {"hello": {"a"}, "help ": {"b"}}
    assert dict(index.short) == {"yo": {"a"}, "x": {"b"}}
    assert index.short_candidates("oh yo") == {"a"} and index.short_candidates("nothing") == set()
    marks = index.table(lambda key: len(key) * 10, 64)
    assert np.flatnonzero(marks).tolist() == [50]
