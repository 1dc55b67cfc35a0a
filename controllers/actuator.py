"""Turn a route's desired k into (pool, per-request cap) among the pools serving a model. Pure.

- A pool whose engines load specgate's scheduler plugin applies any k up to its max exactly, per request.
- A stock pool applies only the k it was started with; among those, the one closest to the desired k wins.
- On a tie, the pool that drafts the fewest tokens it will not use wins: k=0 goes to a pool without
  speculation when one exists rather than to a speculative pool capped at 0.
Pools without an available endpoint are passed over while any other pool is available.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Actuation", "PoolOption", "actuate"]


@dataclass(frozen=True, slots=True)
class PoolOption:
    max_k: int
    per_request_k: bool
    available: bool = True


@dataclass(frozen=True, slots=True)
class Actuation:
    pool_index: int
    # The cap to send as vllm_xargs.num_speculative_tokens; None when the pool cannot take one.
    cap: int | None
    applied_k: int


def actuate(desired_k: int, options: Sequence[PoolOption]) -> Actuation:
    if not options:
        raise ValueError("no pool to actuate on")
    desired_k = max(0, desired_k)
    candidates = [i for i, o in enumerate(options) if o.available] or list(range(len(options)))

    def applied(o: PoolOption) -> int:
        return min(desired_k, o.max_k) if o.per_request_k else o.max_k

    def key(i: int) -> tuple[int, int, int, int]:
        o = options[i]
        k = applied(o)
        return (abs(k - desired_k), o.max_k - k, 0 if o.per_request_k else 1, i)

    best = min(candidates, key=key)
    chosen = options[best]
    k = applied(chosen)
    return Actuation(best, k if chosen.per_request_k else None, k)
