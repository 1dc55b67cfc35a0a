"""Reading a request's speculation limits from `SamplingParams.extra_args` (vLLM's `vllm_xargs`): a fixed cap
(`num_speculative_tokens`) and a schedule of k over the engine's batch size (`specgate_k_schedule`).

Pure and vLLM-free so it is tested directly; the scheduler plugin calls it for every request at every step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import pairwise
from typing import Any

__all__ = ["K_KEY", "SCHEDULE_KEY", "encode_schedule", "k_at", "parse_schedule", "read_cap", "read_limit"]

K_KEY = "num_speculative_tokens"


def read_cap(extra_args: Mapping[str, Any] | None, max_k: int) -> tuple[int | None, bool]:
    """(cap, malformed). cap None = no cap asked (engine's own k). Values above max_k are clamped.

    Accepted: a non-negative int, or a float / numeric string holding one (JSON numbers and
    `vllm_xargs` strings both reach here). Anything else is malformed: ignored, never raised.
    """
    if not extra_args or K_KEY not in extra_args:
        return None, False
    value = extra_args[K_KEY]
    if isinstance(value, bool):
        return None, True
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None, True
    if isinstance(value, float):
        if not value.is_integer():
            return None, True
        value = int(value)
    if not isinstance(value, int) or value < 0:
        return None, True
    return min(value, max_k), False


SCHEDULE_KEY = "specgate_k_schedule"
_MAX_POINTS = 32


@lru_cache(maxsize=1024)
def parse_schedule(text: str) -> tuple[tuple[int, int], ...] | None:
    """`"1:4,9:2,33:0"` -> ((1, 4), (9, 2), (33, 0)): from batch size 1 k=4, from 9 k=2, from 33 k=0.

    None when malformed: not a string of `batch:k` pairs, batch sizes not strictly increasing from 1, k negative,
    or more than 32 points. Cached: all requests of a route carry the same string."""
    points: list[tuple[int, int]] = []
    for item in text.split(","):
        lo, sep, k = item.strip().partition(":")
        if not sep or not lo.isdigit() or not k.isdigit():
            return None
        points.append((int(lo), int(k)))
    if not points or len(points) > _MAX_POINTS or points[0][0] != 1:
        return None
    if any(b <= a for (a, _), (b, _) in pairwise(points)):
        return None
    return tuple(points)


def encode_schedule(points: Sequence[tuple[int, int]]) -> str:
    """The inverse of `parse_schedule`; adjacent points with the same k are merged."""
    merged: list[tuple[int, int]] = []
    for lo, k in points:
        if not merged or merged[-1][1] != k:
            merged.append((lo, k))
    return ",".join(f"{lo}:{k}" for lo, k in merged)


def k_at(schedule: tuple[tuple[int, int], ...], batch: int) -> int:
    """The schedule's k for a batch of `batch` requests (the last point at or below it)."""
    k = schedule[0][1]
    for lo, value in schedule:
        if lo > batch:
            break
        k = value
    return k


def read_limit(extra_args: Mapping[str, Any] | None, max_k: int, batch: int) -> tuple[int | None, bool]:
    """(k, malformed) for a request in a step of `batch` requests: the smaller of its fixed cap and its schedule's
    k at that batch size, clamped to `max_k`; None = no limit asked. A malformed part is ignored (and reported)."""
    cap, malformed = read_cap(extra_args, max_k)
    if not extra_args or SCHEDULE_KEY not in extra_args:
        return cap, malformed
    value = extra_args[SCHEDULE_KEY]
    schedule = parse_schedule(value) if isinstance(value, str) else None
    if schedule is None:
        return cap, True
    k = min(k_at(schedule, batch), max_k)
    return (k if cap is None else min(cap, k)), malformed
