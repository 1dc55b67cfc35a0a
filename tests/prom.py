"""Read values out of a Prometheus exposition (the real parser, not substrings), for tests that check metrics move."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


def sample(text: str, name: str, **labels: str) -> float:
    """The sum of the samples called `name` whose labels include `labels` (0 when there is none)."""
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total


def scrape(url: str, name: str, **labels: str) -> float:
    return sample(httpx.get(f"{url}/metrics", timeout=10).text, name, **labels)
