"""The coordinator seam without Redis: turns, commits, take-over and the store going away, on the memory store and
on a store whose calls fail (the real Redis paths: tests/runtime/test_replicas_redis.py)."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import orjson
import pytest
from specgate.backends.state_store import MemoryStateStore, StoreUnavailable
from specgate.controllers.controller import DecisionRecord
from specgate.controllers.decisions import DecisionTable, RouteDecision
from specgate.controllers.observations import Observation, SpecStats
from specgate.runtime.coordination import (
    LeaderState,
    StoreCoordinator,
    decode_observation,
    decode_table,
    encode_observation,
    encode_table,
)
from specgate.runtime.metrics import GatewayMetrics

OBS = Observation("code", "p", "http://e", 3, "engine", SpecStats(9, 6, 3, (0, 1, 1, 1)), 5, 12, 0.1, 0.5, 2.0, True)
TABLE = DecisionTable(7, MappingProxyType({"code": RouteDecision(3, "goodput", 4, 0.05)}), fallback_k=2)


def record(version: int) -> DecisionRecord:
    return DecisionRecord(1.0, version, "code", 2, 3, "goodput", 1.23456, {"batch": 2.0})


def test_observation_and_table_round_trip() -> None:
    assert decode_observation(encode_observation(OBS)) == OBS
    assert decode_table(encode_table(TABLE, "me")) == TABLE
    # Per-step evidence and schedules cross replicas too.
    per_step = replace(OBS, spec=SpecStats(9, 6, 4, (1, 1, 1, 1), ((2, (0, 1, 0)), (3, (1, 0, 1, 1)))))
    assert decode_observation(encode_observation(per_step)) == per_step
    scheduled = DecisionTable(
        8, MappingProxyType({"code": RouteDecision(3, "goodput", None, 0.03, ((1, 4), (24, 2), (96, 0)))})
    )
    assert decode_table(encode_table(scheduled, "me")) == scheduled
    assert orjson.loads(encode_table(scheduled, "me"))["routes"]["code"]["schedule"] == "1:4,24:2,96:0"
    for bad in ("", "2:4", "1:4,1:2", "1:-1", [[1, 4]], 3):
        raw = orjson.loads(encode_table(scheduled, "me"))
        raw["routes"]["code"]["schedule"] = bad
        assert decode_table(orjson.dumps(raw)) is None
    # Where explorers stop exploring crosses too; a table written before it had none (any batch).
    bounded = DecisionTable(
        9, MappingProxyType({"code": RouteDecision(1, "goodput", 4, 1.0, ((1, 1), (64, 0)), explore_until=16)})
    )
    assert decode_table(encode_table(bounded, "me")) == bounded
    raw = orjson.loads(encode_table(bounded, "me"))
    del raw["routes"]["code"]["explore_until"]
    assert decode_table(orjson.dumps(raw)) == DecisionTable(
        9, MappingProxyType({"code": RouteDecision(1, "goodput", 4, 1.0, ((1, 1), (64, 0)))})
    )
    for wrong in (0, -3, "16", 1.5, True):
        raw["routes"]["code"]["explore_until"] = wrong
        assert decode_table(orjson.dumps(raw)) is None


def test_keys_of_another_version_are_dropped_and_garbage_is_skipped() -> None:
    data = orjson.loads(encode_observation(OBS))
    assert decode_observation(orjson.dumps({**data, "tokens_per_chunk": 3.0})) == OBS
    assert decode_observation(b"not json") is None
    assert decode_observation(orjson.dumps({"route": "code"})) is None
    assert decode_table(b'{"version": 1}') is None


async def test_memory_store_leads_on_its_own_observations_and_commits() -> None:
    store = MemoryStateStore("r1")
    coord = StoreCoordinator(store, 5.0, GatewayMetrics())
    turn = await coord.begin([OBS, OBS])
    assert turn.role == "leader" and list(turn.observations) == [OBS, OBS] and turn.adopt is None
    assert coord.info.leader and coord.info.replica_id == "r1" and coord.info.store == "memory"
    assert await coord.commit(LeaderState(TABLE, {"ticks": 1}, [record(6), record(7)]))
    assert decode_table(await store.read_table() or b"") == TABLE
    assert orjson.loads(await store.read_status() or b"") == {"version": 7, "leader": "r1", "ticks": 1}
    # Records already written are not written again.
    assert await coord.commit(LeaderState(TABLE, {}, [record(6), record(7)]))
    decisions = [orjson.loads(r) for r in await store.read_decisions(10)]
    assert [d["version"] for d in decisions] == [6, 7]
    assert decisions[0]["leader"] == "r1" and decisions[0]["expected_speedup"] == 1.2346


async def test_a_new_leader_adopts_the_stored_table_once() -> None:
    store = MemoryStateStore("r1")
    await store.write_leader_state("x", encode_table(TABLE, "old"), b"{}", [])
    await store.write_admin("pin:code", "2")
    coord = StoreCoordinator(store, 5.0, GatewayMetrics())
    first = await coord.begin([])
    assert first.adopt == TABLE and first.admin == {"pin:code": "2"}
    assert (await coord.begin([])).adopt is None


class _Flaky(MemoryStateStore):
    down = False

    async def push_observations(self, items: list[bytes]) -> None:
        if self.down:
            raise StoreUnavailable("down")
        await super().push_observations(items)


async def test_store_away_means_standalone_on_own_observations_then_rejoin() -> None:
    store = _Flaky("r1")
    metrics = GatewayMetrics()
    coord = StoreCoordinator(store, 5.0, metrics)
    await coord.begin([])
    store.down = True
    turn = await coord.begin([OBS])
    assert turn.role == "standalone" and list(turn.observations) == [OBS] and turn.adopt_current
    again = await coord.begin([OBS])
    assert again.role == "standalone" and not again.adopt_current  # adopt the table in force once, not each tick
    assert not coord.info.store_up and metrics.store_errors._value.get() == 2
    store.down = False
    back = await coord.begin([])
    assert back.role == "leader" and coord.info.store_up


class _Taken(MemoryStateStore):
    async def write_leader_state(self, lease: str, table: bytes, status: bytes, decisions: list[bytes]) -> bool:
        return False  # another replica holds the lease now


@pytest.mark.parametrize("store", [_Taken("r1")])
async def test_lost_lease_steps_down(store: MemoryStateStore) -> None:
    coord = StoreCoordinator(store, 5.0, GatewayMetrics())
    await coord.begin([])
    assert not await coord.commit(LeaderState(TABLE, {}))
    assert coord.info.role == "follower" and not coord.info.leader
