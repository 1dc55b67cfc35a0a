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
    assert index.short_candidates("oh yo yo") == {"a": [3, 6]} and index.short_candidates("nothing") == {}
    marks = index.table(lambda key: len(key) * 10, 64)
    assert np.flatnonzero(marks).tolist() == [50]


_SHORT = PatternSet({"sum": r"总结|要点|tl", "ctx": r"资料|資料", "tr": r"翻译"})


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["总", "结", "要", "点", "资", "料", "資", "翻", "译", "t", "l", "a", " "]), max_size=40)
)
def test_short_literals_are_found_where_a_full_search_finds_them(parts: list[str]) -> None:
    # Two-character CJK literals in text that mixes scripts: each looked for only where its first character is.
    text = "".join(parts)
    index = GramIndex([_SHORT], (3, 4, 5))
    expected: dict[str, list[int]] = {}
    for literal, owners in index.short:
        starts = [m.start() for m in re.finditer(f"(?={re.escape(literal)})", text)]
        for name in owners if starts else ():
            expected.setdefault(name, []).extend(starts)
    found = index.short_candidates(text)
    assert {k: sorted(v or []) for k, v in found.items()} == {k: sorted(v) for k, v in expected.items()}


_NEAR = {
    "p": r"abc\b",
    "q": r"(?<=a)ca",
    "r": r"\bab.{0,3}x\b",
    "t": r"ab(?:c|x)?",
    "u": r"\d*c x",  # no bound on where its literal starts: searched in full
    "v": r"(?:a|bb)?x7|7 ?zz",  # "x7" starts up to 2 into a match
}


def test_how_far_into_a_match_a_literal_starts() -> None:
    from specgate.controllers.pattern_prefilter import literal_reach

    assert literal_reach(r"\bab.{0,3}x\b") == 0 and literal_reach(r"(?<=a)ca") == 0
    assert literal_reach(r"(?:a|bb)?x7|7 ?zz") == 2  # "7 ?zz" gives "7" at 0, "zz" further: the longer one wins
    assert literal_reach(r"in (?:a few|\d) (?:bullets|lines)") == len("in a few ")
    assert literal_reach(r"\d*c x") is None and literal_reach(r"\d+") is None


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["ab", "abc", "bca", "ca", "c", " ", "x", "7", "zz", "bb"]), max_size=40).map("".join),
    st.lists(st.integers(0, 80), max_size=3),
)
def test_matching_at_the_literals_finds_what_a_full_search_finds(text: str, extra: list[int]) -> None:
    # Spots: every place a pattern's literal starts, plus some that hold none (a superset is allowed).
    patterns = PatternSet(_NEAR)
    spots = {
        name: sorted({m.start() for lit in patterns.anchors(name) for m in re.finditer(f"(?={re.escape(lit)})", text)})
        + extra
        for name in _NEAR
    }
    expected = [name for name, pattern in _NEAR.items() if re.search(pattern, text)]
    assert patterns.matching(text, spots) == expected
    assert patterns.matching(text, dict.fromkeys(_NEAR)) == expected  # None: searched in full


def test_matches_are_tried_only_where_the_spots_say() -> None:
    patterns = PatternSet({"r": r"\bab.{0,3}x\b", "u": r"\d*c x"})
    text = "ab" + " " * 50 + "abxyx"
    assert patterns.matching(text, {"r": [0, 52]}) == ["r"]
    assert patterns.matching(text, {"r": [0]}) == []  # the match at 52 is not tried: spots must be complete
    assert patterns.matching(text, {"r": []}) == []
    assert patterns.matching("12c x", {"u": []}) == ["u"]  # no bound on its literal's place: searched in full
