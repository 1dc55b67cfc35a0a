from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specgate.backends.spec_cap import encode_schedule, k_at, parse_schedule, read_cap, read_limit


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (None, (None, False)),
        ({}, (None, False)),
        ({"other": 1}, (None, False)),
        ({"num_speculative_tokens": 0}, (0, False)),
        ({"num_speculative_tokens": 3}, (3, False)),
        ({"num_speculative_tokens": 9}, (4, False)),
        ({"num_speculative_tokens": 2.0}, (2, False)),
        ({"num_speculative_tokens": " 1 "}, (1, False)),
        ({"num_speculative_tokens": -1}, (None, True)),
        ({"num_speculative_tokens": 1.5}, (None, True)),
        ({"num_speculative_tokens": "many"}, (None, True)),
        ({"num_speculative_tokens": True}, (None, True)),
        ({"num_speculative_tokens": [1]}, (None, True)),
        ({"num_speculative_tokens": "nan"}, (None, True)),
    ],
)
def test_read_cap(args: dict | None, expected: tuple) -> None:
    assert read_cap(args, 4) == expected


# -- per-step schedules -------------------------------------------------------------------------------------------


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
def test_parse_schedule(text: str, expected: object) -> None:
    assert parse_schedule(text) == expected


def test_k_at_follows_the_last_point_at_or_below_the_batch() -> None:
    s = ((1, 4), (9, 2), (33, 0))
    assert [k_at(s, b) for b in (1, 8, 9, 32, 33, 1000)] == [4, 4, 2, 2, 0, 0]


@pytest.mark.parametrize(
    ("args", "batch", "expected"),
    [
        ({"specgate_k_schedule": "1:4,9:2"}, 3, (4, False)),
        ({"specgate_k_schedule": "1:4,9:2"}, 12, (2, False)),
        ({"specgate_k_schedule": "1:9"}, 1, (4, False)),  # clamped to the engine's k
        ({"specgate_k_schedule": "1:4,9:2", "num_speculative_tokens": 1}, 3, (1, False)),
        ({"specgate_k_schedule": "1:4,9:0", "num_speculative_tokens": 3}, 20, (0, False)),
        ({"specgate_k_schedule": "nonsense", "num_speculative_tokens": 3}, 1, (3, True)),
        ({"specgate_k_schedule": ["1:4"]}, 1, (None, True)),
        ({"num_speculative_tokens": 2}, 50, (2, False)),
        (None, 5, (None, False)),
    ],
)
def test_read_limit(args: dict | None, batch: int, expected: tuple) -> None:
    assert read_limit(args, 4, batch) == expected


schedules = st.lists(st.tuples(st.integers(1, 500), st.integers(0, 16)), min_size=1, max_size=20).map(
    lambda pts: [(1, pts[0][1]), *sorted({b: k for b, k in pts if b > 1}.items())]
)


@given(schedules, st.integers(1, 1000))
def test_encoded_schedules_parse_back_to_the_same_k_everywhere(points: list[tuple[int, int]], batch: int) -> None:
    parsed = parse_schedule(encode_schedule(points))
    assert parsed is not None
    assert k_at(parsed, batch) == k_at(tuple(points), batch)
