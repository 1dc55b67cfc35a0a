"""Choose the endpoint of a pool that should take the next request. Pure: no I/O, no clocks.

Load of an endpoint = max(requests the gateway has outstanding there, requests the engine reports
running) + waiting_weight * waiting + kv_weight * KV-cache use. The max avoids counting our own
requests twice (they are in both numbers) while still seeing traffic from other gateway replicas.

A scrape that is too old is *unknown*, not idle: such an endpoint is charged the worst load seen on a
fresh endpoint of the same pool, so a silent endpoint does not attract every request.

Picking is filter -> score -> pick: unhealthy and already-tried endpoints are filtered out; a request with an
affinity key (controllers/prefix_key.py) also filters out endpoints above the load bound (bounded-load consistent
hashing: more than `load_bound` times the mean load plus `load_slack` requests), so a hot prefix
spills instead of piling onto one engine; each scorer (controllers/score_load.py, controllers/score_prefix.py) gives
every candidate a score in [0, 1]; the highest weighted sum wins, ties going round-robin.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from specgate.controllers.score_load import load_scores
from specgate.controllers.score_prefix import prefix_scores

__all__ = ["EndpointLoad", "PickerWeights", "Scoring", "endpoint_load", "pick_endpoint", "running_requests"]


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


@dataclass(frozen=True, slots=True)
class Scoring:
    """Scorer weights and the load bound (config `picking`). Both weights 0: plain round-robin."""

    load: float = 1.0
    prefix: float = 0.0
    load_bound: float = 1.2
    load_slack: float = 1.0
    # A prefix the picker has no placement for (a new conversation) may also go only to an endpoint carrying at most
    # `new_bound` x the mean number of active conversations (no slack); None: the load bound alone. New conversations
    # are where balance is cheap: nothing is cached for them anywhere yet.
    new_bound: float | None = None


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


def within_bound(loads: Sequence[float], scoring: Scoring) -> list[bool]:
    """Whether each candidate may take one more request under the load bound: its load at most `load_bound` x the
    candidates' mean + `load_slack`. The least loaded always may (it is at most the mean)."""
    return _at_most(loads, scoring.load_bound, scoring.load_slack)


def _at_most(values: Sequence[float], factor: float, slack: float) -> list[bool]:
    if not values:
        return []
    cap = factor * sum(values) / len(values) + slack
    cap = max(cap, min(values))  # the mean's rounding must not filter out every candidate
    return [value <= cap for value in values]


def _kept(order: list[int], charged: list[float], keep: list[bool]) -> tuple[list[int], list[float]]:
    return [i for i, ok in zip(order, keep, strict=True) if ok], [c for c, ok in zip(charged, keep, strict=True) if ok]


def pick_endpoint(
    loads: Sequence[EndpointLoad],
    exclude: Collection[int] = (),
    *,
    rotation: int = 0,
    weights: PickerWeights = PickerWeights(),
    scoring: Scoring = Scoring(),
    names: Sequence[str] = (),
    affinity: int | None = None,
    last: str | None = None,
    active: Sequence[int] | None = None,
) -> int | None:
    """Index of the endpoint to take the request, or None when every one is unhealthy or in `exclude`.

    `names` (the endpoints' URLs, for prefix ranking) are needed only with an `affinity` key; `last`: the endpoint
    that key last went to, if remembered; `active`: for a key not placed yet (a new conversation), the conversations
    each endpoint carries (controllers/prefix_memory.py; see `Scoring.new_bound`). `rotation` breaks ties
    round-robin, so idle endpoints share light traffic.
    """
    fresh = [load.running + _queue_pressure(load, weights) for load in loads if load.running is not None]
    unknown = max(fresh) if fresh else 0.0
    n = len(loads)
    order = [i for i in ((rotation + offset) % n for offset in range(n)) if i not in exclude and loads[i].healthy]
    if not order:
        return None
    charged = [endpoint_load(loads[i], unknown, weights) for i in order]
    use_prefix = affinity is not None and scoring.prefix > 0.0 and len(order) > 1
    if use_prefix:
        order, charged = _kept(order, charged, within_bound(charged, scoring))
        if active is not None and scoring.new_bound is not None:
            counts = [float(active[i]) for i in order]
            order, charged = _kept(order, charged, _at_most(counts, scoring.new_bound, 0.0))
    total = [scoring.load * s for s in load_scores(charged)]
    if use_prefix:
        ranked = prefix_scores(affinity, [names[i] for i in order], last)
        total = [t + scoring.prefix * p for t, p in zip(total, ranked, strict=True)]
    best = max(range(len(order)), key=total.__getitem__)  # the first maximum in rotation order
    return order[best]
