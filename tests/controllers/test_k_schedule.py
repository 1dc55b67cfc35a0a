"""The k schedule and its wire form, shared by the controller, the gateway and the scheduler plugin."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.k_schedule import compress, encode, k_at, parse


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:4", ((1, 4),)),
        ("1:4,9:2,33:0", ((1, 4), (9, 2), (33, 0))),
        (" 1:3 , 5:1", ((1, 3), (5, 1))),
        ("", None),
        ("2:4", None),  # must start at batch 1
        ("1:4,1:2", None),  # batch sizes strictly increasing
        ("1:4,9:2,5:0", None),
        ("1:-1", None),
        ("1:4;9:2", None),
        ("1:x", None),
        (",".join(f"{i}:1" for i in range(1, 40)), None),  # too many points
    ],
)
def test_parse(text: str, expected: object) -> None:
    assert parse(text) == expected


def test_k_at_follows_the_last_point_at_or_below_the_batch() -> None:
    s = ((1, 4), (9, 2), (33, 0))
    assert [k_at(s, b) for b in (1, 8, 9, 32, 33, 1000)] == [4, 4, 2, 2, 0, 0]


schedules = st.lists(st.tuples(st.integers(1, 500), st.integers(0, 16)), min_size=1, max_size=20).map(
    lambda pts: [(1, pts[0][1]), *sorted({b: k for b, k in pts if b > 1}.items())]
)


@given(schedules, st.integers(1, 1000))
def test_encoded_schedules_parse_back_to_the_same_k_everywhere(points: list[tuple[int, int]], batch: int) -> None:
    parsed = parse(encode(points))
    assert parsed is not None
    assert k_at(parsed, batch) == k_at(tuple(points), batch)


@given(schedules)
def test_encode_writes_the_compressed_form(points: list[tuple[int, int]]) -> None:
    text = encode(points)
    assert parse(text) == compress(points)
    assert all(a[1] != b[1] for a, b in zip(compress(points), compress(points)[1:], strict=False))


def test_encode_merges_equal_neighbours() -> None:
    assert encode(((1, 4), (9, 4), (24, 2), (48, 2))) == "1:4,24:2"
