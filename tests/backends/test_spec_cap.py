from __future__ import annotations

import pytest
from specgate.backends.spec_cap import read_cap


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
