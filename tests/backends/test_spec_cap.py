from __future__ import annotations

import pytest
from specgate.backends.spec_cap import read_cap, read_limit


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


# -- per-step schedules (the format itself: tests/controllers/test_k_schedule.py) -------------------------------


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
