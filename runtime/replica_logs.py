"""Logs the gateway replicas share through the state store, off the request path (docs/replicas.md).

Some of what one replica learns makes the others answer better, but none of it is worth a store round trip per
request: where a conversation moved past its prefix home's load bound (controllers/prefix_memory.py, so that the
next turn goes where its newest history is whichever replica takes it) and which requests the semantic cache has
kept answers for (runtime/semantic_cache.py, so that a near-duplicate is a hit on every replica; the answers
themselves are shared by the exact cache). Each is a `SharedLog`. Every `interval_s` a replica appends what it has
learnt since to each log (Redis streams) and reads the others' entries from its own cursors; its own are skipped.
A replica that starts reads the last ten minutes. An entry reaches the others within about an interval; until then
they answer as they would have without it (a partial prefix hit, a semantic miss), never wrongly. Fails open: a
store that is away costs the sharing, never a request (`specgate_replica_log_errors_total`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Protocol

import orjson
from specgate.backends.pool import PoolSet
from specgate.backends.state_store import StateStore, StoreUnavailable
from specgate.runtime.metrics import GatewayMetrics

__all__ = ["LogSync", "PlacementLog", "SharedLog", "decode_placement", "encode_placement"]

log = logging.getLogger("specgate.replica")
_SEP = b"\x00"


class SharedLog(Protocol):
    name: str

    def outgoing(self) -> list[bytes]:
        """What this replica learnt since the last call, encoded."""
        ...

    def take(self, raw: bytes) -> bool:
        """Apply another replica's entry; False when it is skipped (garbage, stale, unknown)."""
        ...


class LogSync:
    def __init__(
        self, store: StateStore, logs: Sequence[SharedLog], metrics: GatewayMetrics, interval_s: float = 0.5
    ) -> None:
        self._store = store
        self._logs = list(logs)
        self._metrics = metrics
        self._interval_s = interval_s
        self._cursors = {shared.name: "" for shared in self._logs}
        self._task: asyncio.Task[None] | None = None

    @property
    def active(self) -> bool:
        """Only a shared store has other replicas to tell."""
        return self._store.kind != "memory" and bool(self._logs)

    def start(self) -> None:
        if self.active and self._task is None:
            self._task = asyncio.create_task(self._run(), name="replica-logs")

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        # What was learnt last reaches the others, unless the store is away: shutdown does not wait on it for long.
        with contextlib.suppress(StoreUnavailable, TimeoutError):
            await asyncio.wait_for(self.step(), 4 * self._interval_s)

    async def _run(self) -> None:
        while True:
            try:
                await self.step()
            except StoreUnavailable as exc:
                self._metrics.replica_log_errors.inc()
                log.debug("replica log sharing failed: %s", exc)
            except Exception:  # a bug must not end the sharing for the life of the process
                self._metrics.replica_log_errors.inc()
                log.exception("replica log sharing failed")
            await asyncio.sleep(self._interval_s)

    async def step(self) -> None:
        """For each log: send this replica's new entries, then take in the others'. Entries that fail to send are
        not retried: they are hints, and later ones replace them."""
        me = self._store.replica_id.encode()
        for shared in self._logs:
            out = [me + _SEP + item for item in shared.outgoing()]
            await self._store.append_log(shared.name, out)
            self._metrics.replica_log_entries.labels(shared.name, "sent").inc(len(out))
            items, self._cursors[shared.name] = await self._store.read_log(shared.name, self._cursors[shared.name])
            taken = 0
            for raw in items:
                sender, sep, body = raw.partition(_SEP)
                if sep and sender != me:
                    taken += shared.take(body)
            self._metrics.replica_log_entries.labels(shared.name, "received").inc(taken)


def encode_placement(pool: str, key: int, endpoint: str, at: float) -> bytes:
    return orjson.dumps([pool, str(key), endpoint, at])


def decode_placement(raw: bytes) -> tuple[str, int, str, float] | None:
    """None for anything that is not a placement of this version (skipped, never fatal)."""
    try:
        pool, key, endpoint, at = orjson.loads(raw)
        return str(pool), int(key), str(endpoint), float(at)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None


class PlacementLog:
    """Where conversations moved (prefix affinity): each pool's changed placements out, the others' merged in, the
    newer placement of a key winning (controllers/prefix_memory.py)."""

    name = "placements"

    def __init__(self, pools: PoolSet) -> None:
        self._pools = pools  # the set a reload installs into, so its current pools

    def outgoing(self) -> list[bytes]:
        out = []
        for pool in self._pools.pools:
            pool.placements.shared = True  # pools of a reloaded config start sharing here
            out += [encode_placement(pool.name, *placement) for placement in pool.placements.drain()]
        return out

    def take(self, raw: bytes) -> bool:
        entry = decode_placement(raw)
        if entry is None:
            return False
        pool = self._pools.pool(entry[0])
        return pool is not None and pool.placements.merge(*entry[1:])
