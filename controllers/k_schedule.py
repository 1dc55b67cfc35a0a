"""A k schedule over the engine's batch size, and its wire form: the one definition the controller (which makes
schedules), the gateway (which sends them in `vllm_xargs`) and the scheduler plugin (which reads them at every
engine step) share.

A schedule is `((1, k1), (b2, k2), ...)`: k1 from batch size 1, k2 from b2, up to the next listed size. On the
wire it is `"1:k1,b2:k2,..."`. The standard library only: the plugin imports it (through
`specgate.controllers`, whose `__init__` stays import-free) inside engine processes, where none of the gateway's
dependencies need be installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise

__all__ = ["MAX_POINTS", "Schedule", "compress", "encode", "k_at", "on_grid", "parse"]

Schedule = tuple[tuple[int, int], ...]
MAX_POINTS = 32


def k_at(schedule: Schedule, batch: int) -> int:
    """The schedule's k for a batch of `batch` requests (the last point at or below it)."""
    k = schedule[0][1]
    for lo, value in schedule:
        if lo > batch:
            break
        k = value
    return k


@lru_cache(maxsize=8192)
def on_grid(schedule: Schedule, sizes: tuple[int, ...]) -> tuple[int, ...]:
    """`k_at` at each batch size of `sizes`. Cached: the controller reads every route's schedule on its grid every
    tick, and schedules rarely change between ticks."""
    return tuple(k_at(schedule, b) for b in sizes)


def compress(points: Sequence[tuple[int, int]]) -> Schedule:
    """Adjacent points with the same k merged: the schedule's canonical form."""
    out: list[tuple[int, int]] = []
    for lo, k in points:
        if not out or out[-1][1] != k:
            out.append((lo, k))
    return tuple(out)


def encode(points: Sequence[tuple[int, int]]) -> str:
    """`((1, 4), (9, 4), (24, 2))` -> `"1:4,24:2"`: the canonical form, written; the inverse of `parse`."""
    return ",".join(f"{lo}:{k}" for lo, k in compress(points))


@lru_cache(maxsize=1024)
def parse(text: str) -> Schedule | None:
    """`"1:4,9:2,33:0"` -> ((1, 4), (9, 2), (33, 0)): from batch size 1 k=4, from 9 k=2, from 33 k=0.

    None when malformed: not a string of `batch:k` pairs, batch sizes not strictly increasing from 1, k negative,
    or more than 32 points. Cached: all requests of a route carry the same string."""
    points: list[tuple[int, int]] = []
    for item in text.split(","):
        lo, sep, k = item.strip().partition(":")
        if not sep or not lo.isdigit() or not k.isdigit():
            return None
        points.append((int(lo), int(k)))
    if not points or len(points) > MAX_POINTS or points[0][0] != 1:
        return None
    if any(b <= a for (a, _), (b, _) in pairwise(points)):
        return None
    return tuple(points)
