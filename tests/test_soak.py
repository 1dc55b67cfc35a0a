"""The short soak (the long one is `python bench/soak.py --clients 1000 --seconds 600`, results in
docs/reliability.md): streaming clients through a real `specgate serve` process and a fake upstream process."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def test_short_soak_has_no_errors_and_flat_memory() -> None:
    spec = importlib.util.spec_from_file_location("soak", ROOT / "bench" / "soak.py")
    assert spec and spec.loader
    soak = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soak)
    report = soak.run(clients=100, seconds=24, chunk_delay_s=0.02, window_s=6)
    assert report["errors"] == 0, report["error_kinds"]
    assert report["streams"] > 500
    first, last = report["p99_ms_first_last"]
    assert last < 3 * first + 50, report["windows"]  # no drift upwards over the run
    rss = report["rss_mib"]
    assert rss["end"] - rss["after_warmup"] < 40, rss
