"""The Redis state store against a real redis-server: lease, fencing, shared admin state, windows, keys."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as sync_redis
from specgate.backends.state_store import MemoryStateStore, RedisStateStore, StateStore, StoreUnavailable, make_store
from specgate.gateway.auth import hash_key

from specgate.config import StateConfig
from tests.redis_server import RedisServer, SentinelServer


@pytest.fixture
def redis_url() -> Iterator[str]:
    server = RedisServer().start()
    yield server.url
    server.stop()


def store(url: str, name: str) -> RedisStateStore:
    return RedisStateStore(StateConfig(redis_url=url, decision_log_size=10), replica_id=name)


def test_one_lease_holder_and_a_stale_leader_cannot_write(redis_url: str) -> None:
    async def scenario() -> None:
        a, b = store(redis_url, "a"), store(redis_url, "b")
        lease_a = await a.acquire_lease(0.3)
        assert lease_a == "a:1"
        assert await b.acquire_lease(0.3) is None  # held
        assert await a.acquire_lease(0.3) == lease_a  # renewed by its holder
        assert await a.write_leader_state(lease_a, b'{"version": 1}', b"{}", [b"d1"])
        await asyncio.sleep(0.45)  # a stalls past its lease
        lease_b = await b.acquire_lease(0.3)
        assert lease_b == "b:2", "a new term gets a larger fencing token"
        assert not await a.write_leader_state(lease_a, b'{"version": 99}', b"{}", [b"stale"])
        assert await a.read_table() == b'{"version": 1}'
        assert await a.acquire_lease(0.3) is None
        assert await b.write_leader_state(lease_b, b'{"version": 2}', b"{}", [b"d2"])
        assert await a.read_decisions(10) == [b"d1", b"d2"]
        await a.close()
        await b.close()

    asyncio.run(scenario())


def test_observations_admin_windows_and_keys(redis_url: str) -> None:
    async def scenario() -> None:
        a, b = store(redis_url, "a"), store(redis_url, "b")
        await a.push_observations([b"1", b"2"])
        await b.push_observations([b"3"])
        assert await a.pop_observations(10) == [b"1", b"2", b"3"]
        assert await a.pop_observations(10) == []
        await b.write_admin("pin:code", "2")
        await b.write_admin("kill_switch", "1")
        await b.write_admin("kill_switch", None)
        assert await a.read_admin() == {"pin:code": "2"}
        total, reset = await a.add_to_window("acme:req", 1, 60)
        total, reset = await b.add_to_window("acme:req", 2, 60)
        assert total == 3 and 0 < reset <= 60
        sync_redis.Redis.from_url(redis_url).hset("specgate:keys", hash_key("sk-live"), "acme")
        assert await a.tenant_for_key(hash_key("sk-live")) == "acme"
        assert await a.tenant_for_key(hash_key("sk-other")) is None
        await a.close()
        await b.close()

    asyncio.run(scenario())


def test_decision_log_is_capped(redis_url: str) -> None:
    async def scenario() -> None:
        a = store(redis_url, "a")
        lease = await a.acquire_lease(5)
        assert lease
        for i in range(15):
            assert await a.write_leader_state(lease, b"{}", b"{}", [str(i).encode()])
        assert await a.read_decisions(100) == [str(i).encode() for i in range(5, 15)]
        await a.close()

    asyncio.run(scenario())


def test_unreachable_redis_raises_store_unavailable() -> None:
    async def scenario() -> None:
        s = RedisStateStore(StateConfig(redis_url="redis://127.0.0.1:1/0", timeout_s=0.2), replica_id="x")
        with pytest.raises(StoreUnavailable):
            await s.acquire_lease(1)
        with pytest.raises(StoreUnavailable):
            await s.add_to_window("t:req", 1, 60)
        await s.close()

    asyncio.run(scenario())


def test_memory_store_is_a_single_leader() -> None:
    async def scenario() -> None:
        s: StateStore = make_store(StateConfig())
        assert isinstance(s, MemoryStateStore)
        lease = await s.acquire_lease(1)
        assert lease and await s.lease_holder() == lease
        await s.push_observations([b"x"])
        assert await s.pop_observations(5) == [b"x"]
        assert await s.write_leader_state(lease, b"t", b"s", [b"d"])
        assert await s.read_table() == b"t" and await s.read_decisions(5) == [b"d"]
        assert (await s.add_to_window("k", 2, 60))[0] == 2
        assert (await s.add_to_window("k", 3, 60))[0] == 5

    asyncio.run(scenario())


def test_sentinel_urls_need_a_service_name() -> None:
    from specgate.backends.state_store import redis_client

    with pytest.raises(ValueError, match="service name"):
        redis_client("redis+sentinel://127.0.0.1:26379", 1.0)


def test_store_through_a_real_sentinel(tmp_path: Path) -> None:
    """redis+sentinel://: the store finds the master through a real Sentinel, in the database the URL names."""
    master = RedisServer().start()
    sentinel = SentinelServer(master, "specgate-main", str(tmp_path)).start()
    try:
        url = f"redis+sentinel://127.0.0.1:1,127.0.0.1:{sentinel.port}/specgate-main/3"  # the first one is down

        async def scenario() -> None:
            s = RedisStateStore(StateConfig(redis_url=url), replica_id="s")
            assert await s.acquire_lease(5.0) == "s:1"
            await s.write_admin("paused", "1")
            assert await s.read_admin() == {"paused": "1"}
            await s.close()

        asyncio.run(scenario())
        direct = sync_redis.Redis(port=master.port, db=3)
        assert direct.hget("specgate:admin", "paused") == b"1"
        assert sync_redis.Redis(port=master.port, db=0).dbsize() == 0
    finally:
        sentinel.stop()
        master.stop()
