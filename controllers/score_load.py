"""Load scorer: the less loaded an endpoint, the higher its score. Pure.

Scores are normalised to [0, 1] across the candidates (1 for the least loaded, 0 for the most), as every scorer's
are, so that the picker's weights (config `picking.weights`) mean the same whatever the pool's load level.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["load_scores"]


def load_scores(loads: Sequence[float]) -> list[float]:
    """1 - (load - least) / (most - least) per candidate; all 1 when they are equally loaded."""
    if not loads:
        return []
    low, high = min(loads), max(loads)
    spread = high - low
    if spread <= 0.0:
        return [1.0] * len(loads)
    return [(high - load) / spread for load in loads]
