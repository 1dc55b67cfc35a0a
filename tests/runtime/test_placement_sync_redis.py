"""Placements shared between replicas through a real redis-server: a conversation one replica moved past the load
bound is found where it moved by another replica, and a Redis outage costs the sharing, never a pick."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from specgate.backends.state_store import RedisStateStore, StoreUnavailable
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.placement_sync import PlacementSync, decode_placement, encode_placement

from specgate.config import StateConfig
from tests.redis_server import RedisServer
from tests.runtime.test_affinity import Replica, _turns, _upstream


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.stop()


class SyncedReplica(Replica):
    def __init__(self, url: str, name: str) -> None:
        super().__init__(_upstream())
        self.store = RedisStateStore(StateConfig(redis_url=url, timeout_s=0.3), replica_id=name)
        self.metrics = GatewayMetrics()
        self.sync = PlacementSync(self.store, lambda: self.pools.pools, self.metrics, interval_s=0.05)

    def counted(self, direction: str) -> float:
        return self.metrics.placements_shared.labels(direction)._value.get()


def test_a_move_on_one_replica_is_followed_by_the_other(redis: RedisServer) -> None:
    async def scenario() -> None:
        a, b = SyncedReplica(redis.url, "a"), SyncedReplica(redis.url, "b")
        await a.sync.step()
        await b.sync.step()  # both share from here on
        turns = _turns(0, 3)
        home_url = await b.send(turns[0])
        home = next(ep for ep in a.pools.pools[0].endpoints if ep.url == home_url)
        home.outstanding = 5  # busy as seen by replica a: its turn spills
        moved_url = await a.send(turns[1])
        assert moved_url != home_url
        home.outstanding = 0
        await a.sync.step()
        await b.sync.step()
        assert a.counted("sent") >= 1 and b.counted("received") >= 1
        # Replica b placed the first turn at home itself; the newer move from a wins.
        assert await b.send(turns[2]) == moved_url
        await a.store.close()
        await b.store.close()

    asyncio.run(scenario())


def test_a_starting_replica_reads_recent_moves_and_skips_its_own(redis: RedisServer) -> None:
    async def scenario() -> None:
        a = SyncedReplica(redis.url, "a")
        await a.sync.step()
        pool = a.pools.pools[0]
        pool.placements.put(42, "http://engine-3:8000", 100.0)
        await a.sync.step()
        assert a.counted("received") == 0  # its own entries are not taken back in
        late = SyncedReplica(redis.url, "late")
        await late.sync.step()
        assert late.pools.pools[0].placements.get(42) == "http://engine-3:8000"
        await a.store.close()
        await late.store.close()

    asyncio.run(scenario())


def test_redis_outage_costs_the_sharing_not_the_pick(redis: RedisServer) -> None:
    async def scenario() -> None:
        a = SyncedReplica(redis.url, "a")
        a.sync.start()
        await asyncio.sleep(0.2)
        redis.stop()
        with pytest.raises(StoreUnavailable):
            await a.sync.step()
        await asyncio.sleep(0.4)
        assert a.metrics.placement_sync_errors._value.get() >= 1
        urls = {await a.send(m) for m in _turns(1, 3)}  # picking goes on, affinity from the homes
        assert len(urls) == 1
        redis.start()
        await asyncio.sleep(0.3)
        errors = a.metrics.placement_sync_errors._value.get()
        await asyncio.sleep(0.3)
        assert a.metrics.placement_sync_errors._value.get() == errors  # back: rounds succeed again
        await a.sync.stop()
        await a.store.close()

    asyncio.run(scenario())


def test_garbage_in_the_log_is_skipped() -> None:
    assert decode_placement(b"not json") is None
    assert decode_placement(b'["p", "x", "u", 1.0, "r"]') is None
    assert decode_placement(encode_placement("p", 2**64 - 1, "u", 1.5, "r")) == ("p", 2**64 - 1, "u", 1.5, "r")
