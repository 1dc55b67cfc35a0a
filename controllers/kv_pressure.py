"""A pool's KV-cache pressure as a cap on k, where drafts are a material part of it. Pure.

Draft tokens take KV slots: vLLM allocates a running request's lookahead slots (its k) with its next token, before it
admits anyone new, and preempts (the request recomputes its whole context later) when the cache runs out. But those
slots are k per running request: beside contexts of hundreds of tokens they are a few percent of a full cache. A
blanket "KV full -> lower k" rule therefore frees almost nothing and gives up speculation exactly when the cache
caps the batch, where drafts pay best: measured in the simulator (scenario `kv-pressure`, docs/controller.md) such a
rule made mean TPOT 13-16% worse for 3-7% fewer preemptions. So the cap acts only where drafts matter:

- under pressure (a preemption since the last reading, or KV use at or above `high`), k is capped so that the
  running requests' draft slots stay within `draft_share` of the cache: cap = floor(draft_share x capacity /
  running); it only falls while the pressure lasts;
- after `recover_s` with use below `low` and no preemption the cap rises by one, and is lifted at the pool's max k;
- with the cache size unknown (an engine that does not export `vllm:cache_config_info`) there is no cap.

One reading per control tick (the gateway takes the highest use over the pool's endpoints, the sum of their
preemptions, the smallest cache and the most running requests of one endpoint).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["KvPressure", "KvReading"]


@dataclass(frozen=True, slots=True)
class KvReading:
    """A pool's KV state since the last reading."""

    # Highest cache use (0..1) over its endpoints.
    usage: float
    preemptions: float = 0.0
    # Token slots of one endpoint's cache (blocks x block size); None when the engine does not say.
    capacity_tokens: float | None = None
    # Requests running on the busiest endpoint.
    running: float = 0.0

    def merged(self, other: KvReading) -> KvReading:
        """Two endpoints' readings (or two scrapes' within a tick) as one for their pool: the worst case of each
        (highest use and running, smallest cache), preemptions summed, so one full endpoint is enough to act."""
        sizes = [c for c in (self.capacity_tokens, other.capacity_tokens) if c is not None]
        return KvReading(
            max(self.usage, other.usage),
            self.preemptions + other.preemptions,
            min(sizes) if sizes else None,
            max(self.running, other.running),
        )


@dataclass
class KvPressure:
    max_k: int
    high: float = 0.90
    low: float = 0.75
    recover_s: float = 30.0
    # Largest share of the cache the running requests' draft slots may take under pressure.
    draft_share: float = 0.05
    # None: no cap (k up to the pool's max).
    cap: int | None = None
    reason: str = ""
    _calm_since: float | None = None

    def observe(self, reading: KvReading, now: float) -> bool:
        """Apply one reading; True when the cap changed (`reason` says why)."""
        current = self.max_k if self.cap is None else self.cap
        if reading.preemptions > 0 or reading.usage >= self.high:
            self._calm_since = None
            if reading.capacity_tokens is None or reading.running <= 0:
                return False
            fits = math.floor(self.draft_share * reading.capacity_tokens / reading.running)
            why = (
                f"{reading.preemptions:g} preemption(s), " if reading.preemptions > 0 else ""
            ) + f"KV use {reading.usage:.0%}; drafts of {reading.running:g} requests within {self.draft_share:.0%}"
            return fits < current and self._set(fits, why)
        if reading.usage >= self.low or self.cap is None:
            self._calm_since = None
            return False
        if self._calm_since is None:
            self._calm_since = now
            return False
        if now - self._calm_since < self.recover_s:
            return False
        self._calm_since = now
        return self._set(current + 1, f"KV use {reading.usage:.0%} < {self.low:.0%} for {self.recover_s:.0f}s")

    def _set(self, k: int, why: str) -> bool:
        cap: int | None = max(0, k)
        if cap is not None and cap >= self.max_k:
            cap = None
        if cap == self.cap:
            return False
        self.cap, self.reason = cap, why
        return True
