"""Prefix-affinity scorer: requests that share a prompt prefix prefer the same endpoints. Pure.

Each request with a long enough prefix carries an affinity key (controllers/prefix_key.py). Endpoints are ranked for
that key by rendezvous (highest-random-weight) hashing of (key, endpoint URL): every gateway replica computes the
same ranking from the same configuration, with no shared state, so a conversation reaches the engine that already
holds its prefix in its KV cache whichever replica takes each turn. An endpoint that leaves the pool moves only the
keys it ranked first.

The score is the expected share of the prefix the endpoint holds: 1 for the first-ranked (its home), 0.5 for the
second (where it spills when the load bound in controllers/picker.py filters the home out, so the prefix settles on
a second engine rather than on all of them), 0 for the rest. With the load scorer's 0..1, a prefix weight above
twice the load weight makes the home win whenever it is within the bound, and the spill go to the second. Where the
key last went, if the picker remembers it, ranks before both (a spill moves the conversation; see
controllers/prefix_memory.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["endpoint_seed", "prefix_scores", "rendezvous_weight"]

_MASK = (1 << 64) - 1
_RANK_SCORES = (1.0, 0.5)


@lru_cache(maxsize=4096)
def endpoint_seed(name: str) -> int:
    """A 64-bit seed per endpoint URL, stable across processes (not Python's salted `hash`)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def rendezvous_weight(key: int, seed: int) -> int:
    """splitmix64's finaliser of key ^ seed: a well-mixed weight, cheap in pure Python."""
    z = (key ^ seed) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def prefix_scores(key: int | None, names: Sequence[str], last: str | None = None) -> list[float]:
    """Per candidate: 1 for the first in rendezvous order for `key`, 0.5 for the second, 0 for the others; all 0
    without a key (the request has no prefix worth keeping together: load alone decides).

    `last`: the endpoint the key last went to (controllers/prefix_memory.py), when known and still a candidate. It
    holds the newest history, so it ranks first and the rendezvous order follows it."""
    n = len(names)
    if key is None or n == 0:
        return [0.0] * n
    order = sorted(range(n), key=lambda i: rendezvous_weight(key, endpoint_seed(names[i])), reverse=True)
    if last is not None and last in names:
        moved = names.index(last)
        order.remove(moved)
        order.insert(0, moved)
    scores = [0.0] * n
    for rank, i in enumerate(order[:2]):
        scores[i] = _RANK_SCORES[rank]
    return scores
