"""What the gateway saw of one finished request, and the bounded sink the controller reads them from."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Observation", "ObservationSink", "Source", "SpecStats"]

# engine: vLLM's per-request speculation metrics; chunks: tokens per streamed chunk (a step emits one
# chunk, so tokens/chunk estimates the acceptance length); none: nothing usable.
Source = Literal["engine", "none"]


@dataclass(frozen=True, slots=True)
class SpecStats:
    draft_tokens: int
    accepted_tokens: int
    verify_steps: int
    # histogram[j] = verify steps in which exactly j drafts were accepted (len = max k + 1).
    histogram: tuple[int, ...] = ()
    # When k changed from step to step (per-step schedules): (k, histogram of the steps that drafted k), so each
    # step is judged against the drafts it really had. Empty: every step drafted the request's k.
    by_k: tuple[tuple[int, tuple[int, ...]], ...] = ()

    @property
    def mean_acceptance_length(self) -> float:
        return 1.0 + self.accepted_tokens / self.verify_steps if self.verify_steps else 1.0


@dataclass(frozen=True, slots=True)
class Observation:
    route: str
    pool: str
    endpoint: str
    k_applied: int
    source: Source
    spec: SpecStats | None
    prompt_tokens: int
    completion_tokens: int
    ttft_s: float | None
    decode_s: float | None
    # Running requests at the endpoint when this one was sent (engine's scrape, or our own count).
    batch_at_dispatch: float
    stream: bool
    # From dispatch to the last token: unlike first-to-last chunk, not distorted when the engine merges
    # queued outputs into fewer chunks under load.
    e2e_s: float | None = None
    # The request's k followed a schedule step by step (the scheduler plugin): its acceptance evidence is its
    # per-step drafts alone (SpecStats.by_k). vLLM records only the steps that carried drafts; the plugin adds a
    # 0-draft record for a step whose drafter proposed nothing, so a step capped to k = 0 is never one of those.
    scheduled: bool = False

    @property
    def tpot_s(self) -> float | None:
        if self.decode_s is None or self.completion_tokens <= 1:
            return None
        return self.decode_s / (self.completion_tokens - 1)


@dataclass
class ObservationSink:
    """A bounded FIFO: when full the oldest observation is dropped and counted, never an error."""

    capacity: int = 10_000
    dropped: int = 0
    total: int = 0
    _items: deque[Observation] = field(default_factory=deque)

    def put(self, obs: Observation) -> None:
        if len(self._items) >= self.capacity:
            self._items.popleft()
            self.dropped += 1
        self._items.append(obs)
        self.total += 1

    def drain(self, limit: int | None = None) -> list[Observation]:
        n = len(self._items) if limit is None else min(limit, len(self._items))
        return [self._items.popleft() for _ in range(n)]

    def __len__(self) -> int:
        return len(self._items)
