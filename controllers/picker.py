"""Choose the endpoint of a pool that should take the next request. Pure: no I/O, no clocks.

Load of an endpoint = max(requests the gateway has outstanding there, requests the engine reports
running) + waiting_weight * waiting + kv_weight * KV-cache use. The max avoids counting our own
requests twice (they are in both numbers) while still seeing traffic from other gateway replicas.

A scrape that is too old is *unknown*, not idle: such an endpoint is charged the worst load seen on a
fresh endpoint of the same pool, so a silent endpoint does not attract every request.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = ["EndpointLoad", "PickerWeights", "endpoint_load", "pick_endpoint", "running_requests"]


@dataclass(frozen=True, slots=True)
class EndpointLoad:
    outstanding: int
    healthy: bool
    # None when the engine's numbers are unknown (never scraped, or stale).
    running: float | None = None
    waiting: float | None = None
    kv_usage: float | None = None


@dataclass(frozen=True, slots=True)
class PickerWeights:
    waiting: float = 2.0
    # Full KV cache means preemption soon: worth a few running requests.
    kv_usage: float = 4.0


def running_requests(outstanding: int, running: float | None) -> float:
    """Requests running at an endpoint: the larger of this gateway's outstanding ones and the engine's count (ours
    are in both; the engine's also has other replicas')."""
    return float(outstanding) if running is None else max(float(outstanding), running)


def _queue_pressure(load: EndpointLoad, weights: PickerWeights) -> float:
    return weights.waiting * (load.waiting or 0.0) + weights.kv_usage * (load.kv_usage or 0.0)


def endpoint_load(load: EndpointLoad, unknown_engine_load: float, weights: PickerWeights) -> float:
    if load.running is None:
        return max(float(load.outstanding), unknown_engine_load)
    return running_requests(load.outstanding, load.running) + _queue_pressure(load, weights)


def pick_endpoint(
    loads: Sequence[EndpointLoad],
    exclude: Collection[int] = (),
    *,
    rotation: int = 0,
    weights: PickerWeights = PickerWeights(),
) -> int | None:
    """Index of the least-loaded healthy endpoint not in `exclude`, or None when there is none.

    `rotation` breaks ties round-robin, so idle endpoints share light traffic.
    """
    fresh = [load.running + _queue_pressure(load, weights) for load in loads if load.running is not None]
    unknown = max(fresh) if fresh else 0.0
    n = len(loads)
    best: int | None = None
    best_score = 0.0
    for offset in range(n):
        i = (rotation + offset) % n
        load = loads[i]
        if i in exclude or not load.healthy:
            continue
        score = endpoint_load(load, unknown, weights)
        if best is None or score < best_score:
            best, best_score = i, score
    return best
