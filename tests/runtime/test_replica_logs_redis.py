"""Logs shared between replicas through a real redis-server (runtime/replica_logs.py): a conversation one replica
moved past the load bound is found where it moved by another replica; a request answered on one replica is a
semantic hit on another; a Redis outage costs the sharing, never a pick."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from specgate.backends.state_store import RedisStateStore, StoreUnavailable
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.replica_logs import LogSync, PlacementLog, decode_placement, encode_placement
from specgate.runtime.semantic_cache import HashedEmbedder, SemanticIndex, SemanticLog

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
        self.sync = LogSync(self.store, [PlacementLog(self.pools)], self.metrics, interval_s=0.05)

    def counted(self, direction: str) -> float:
        return self.metrics.replica_log_entries.labels("placements", direction)._value.get()


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
        assert a.metrics.replica_log_errors._value.get() >= 1
        urls = {await a.send(m) for m in _turns(1, 3)}  # picking goes on, affinity from the homes
        assert len(urls) == 1
        redis.start()
        await asyncio.sleep(0.3)
        errors = a.metrics.replica_log_errors._value.get()
        await asyncio.sleep(0.3)
        assert a.metrics.replica_log_errors._value.get() == errors  # back: rounds succeed again
        await a.sync.stop()
        await a.store.close()

    asyncio.run(scenario())


def test_garbage_in_the_log_is_skipped() -> None:
    assert decode_placement(b"not json") is None
    assert decode_placement(b'["p", "x", "u", 1.0]') is None
    assert decode_placement(encode_placement("p", 2**64 - 1, "u", 1.5)) == ("p", 2**64 - 1, "u", 1.5)
    index = SemanticIndex(0.9, 10, 60.0)
    semantic = SemanticLog(index)
    assert not semantic.take(b"not json")
    assert not semantic.take(b'["zz", "00", 1.0, "00"]')
    assert len(index) == 0


def test_a_near_duplicate_of_an_answer_on_one_replica_is_a_hit_on_another(redis: RedisServer) -> None:
    embed = HashedEmbedder()
    scope = b"s" * 16
    asked = embed.vector("What is the capital of France? Answer in one word.")
    again = embed.vector("what is the capital of france, answer in one word")

    async def scenario() -> None:
        indexes = {name: SemanticIndex(0.8, 100, 60.0) for name in ("a", "b")}
        syncs = {}
        for name, index in indexes.items():
            store = RedisStateStore(StateConfig(redis_url=redis.url, timeout_s=0.3), replica_id=name)
            syncs[name] = (store, LogSync(store, [SemanticLog(index)], GatewayMetrics(), interval_s=0.05))
        await syncs["b"][1].step()
        assert indexes["b"].nearest(scope, again) is None
        indexes["a"].expect(b"key-1", scope, asked)
        indexes["a"].commit(b"key-1")  # replica a answered and kept it
        await syncs["a"][1].step()
        await syncs["b"][1].step()
        match = indexes["b"].nearest(scope, again)
        assert match is not None and match.key == b"key-1"
        # Another scope (tenant, route, parameters) never matches, shared or not.
        assert indexes["b"].nearest(b"t" * 16, again) is None
        for store, _ in syncs.values():
            await store.close()

    asyncio.run(scenario())
