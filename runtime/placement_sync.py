"""Share where conversations were placed between gateway replicas (prefix affinity, docs/picking.md).

Every replica ranks engines for a prefix alike (rendezvous hashing), so a conversation's turns meet on its home
whichever replica takes them. When a turn spills past the load bound, the replica that spilled it remembers the
move (controllers/prefix_memory.py); this task tells the others, so their next turn of that conversation goes where
its newest history is too. Every `interval_s` each replica appends its changed placements to the store's
placement log and reads the others' from its own cursor; the newer placement of a key wins. Off the request path:
a turn that arrives within an interval of a move elsewhere may still go home (one partial prefix hit, no error).
Fails open: a store that is away costs the sharing, never a request (counted).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

import orjson
from specgate.backends.pool import Pool
from specgate.backends.state_store import StateStore, StoreUnavailable
from specgate.runtime.metrics import GatewayMetrics

__all__ = ["PlacementSync", "decode_placement", "encode_placement"]

log = logging.getLogger("specgate.replica")


def encode_placement(pool: str, key: int, endpoint: str, at: float, replica: str) -> bytes:
    return orjson.dumps([pool, str(key), endpoint, at, replica])


def decode_placement(raw: bytes) -> tuple[str, int, str, float, str] | None:
    """None for anything that is not a placement of this version (skipped, never fatal)."""
    try:
        pool, key, endpoint, at, replica = orjson.loads(raw)
        return str(pool), int(key), str(endpoint), float(at), str(replica)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None


class PlacementSync:
    def __init__(
        self,
        store: StateStore,
        pools: Callable[[], Sequence[Pool]],
        metrics: GatewayMetrics,
        interval_s: float = 0.5,
    ) -> None:
        self._store = store
        self._pools = pools
        self._metrics = metrics
        self._interval_s = interval_s
        self._cursor = ""
        self._task: asyncio.Task[None] | None = None

    @property
    def active(self) -> bool:
        """Only a shared store has other replicas to tell."""
        return self._store.kind != "memory"

    def start(self) -> None:
        if self.active and self._task is None:
            self._task = asyncio.create_task(self._run(), name="placement-sync")

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        with contextlib.suppress(StoreUnavailable):
            await self.step()  # the last moves reach the others

    async def _run(self) -> None:
        while True:
            try:
                await self.step()
            except StoreUnavailable as exc:
                self._metrics.placement_sync_errors.inc()
                log.debug("placement sharing failed: %s", exc)
            await asyncio.sleep(self._interval_s)

    async def step(self) -> None:
        """Send this replica's new placements, then take in the others'."""
        pools = {pool.name: pool for pool in self._pools()}
        me = self._store.replica_id
        out = []
        for pool in pools.values():
            pool.placements.shared = True  # pools of a reloaded config start sharing here
            out += [encode_placement(pool.name, *placement, me) for placement in pool.placements.drain()]
        # Drained placements that fail to send are not retried: they are hints, and the next move replaces them.
        await self._store.share_placements(out)
        self._metrics.placements_shared.labels("sent").inc(len(out))
        items, self._cursor = await self._store.read_placements(self._cursor)
        taken = 0
        for raw in items:
            entry = decode_placement(raw)
            if entry is None or entry[4] == me or entry[0] not in pools:
                continue
            taken += pools[entry[0]].placements.merge(entry[1], entry[2], entry[3])
        self._metrics.placements_shared.labels("received").inc(taken)
