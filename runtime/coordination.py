"""One gateway among several: share observations, elect one controller leader, follow its decisions.

Every tick each replica pushes its new observations to the store and tries to take or renew the lease.
- Leader: applies the admin state (pins, pause, kill switch) from the store, pops everyone's observations, runs
  the controller, and writes table, status and new decision records in one fenced write (rejected once the
  lease has passed to someone else: the replica then steps down).
- Follower: reads the table and serves it; its own controller stays idle.
- Store unreachable: the replica carries on alone ("standalone") from the last table it had, on its own
  observations, with the controller's usual safety rules; when the store answers again it rejoins (and follows
  or leads) and the shared table takes over.
With the in-memory store the same code runs with a single replica that always leads.
"""

from __future__ import annotations

import logging
import time
from types import MappingProxyType
from typing import Any

import orjson
from specgate.backends.state_store import StateStore, StoreUnavailable
from specgate.controllers.decisions import DecisionTable, RouteDecision
from specgate.controllers.observations import Observation, SpecStats
from specgate.runtime.control_loop import ControlLoop

__all__ = ["ReplicaSync", "decode_observation", "decode_table", "encode_observation", "encode_table"]

log = logging.getLogger("specgate.replica")
_POP_LIMIT = 50_000


def encode_observation(obs: Observation) -> bytes:
    return orjson.dumps(obs)


def decode_observation(raw: bytes) -> Observation | None:
    try:
        data = orjson.loads(raw)
        spec = data.pop("spec")
        if spec is not None:
            spec = SpecStats(
                spec["draft_tokens"], spec["accepted_tokens"], spec["verify_steps"], tuple(spec["histogram"])
            )
        return Observation(spec=spec, **data)
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None  # another version's shape or garbage: skip it rather than stop the controller


def encode_table(table: DecisionTable, leader: str) -> bytes:
    return orjson.dumps(
        {
            "version": table.version,
            "fallback_k": table.fallback_k,
            "leader": leader,
            "routes": {
                name: {"k": d.k, "reason": d.reason, "explore_k": d.explore_k, "explore_share": d.explore_share}
                for name, d in table.routes.items()
            },
        }
    )


def decode_table(raw: bytes) -> DecisionTable | None:
    try:
        data = orjson.loads(raw)
        routes = {
            name: RouteDecision(int(d["k"]), str(d["reason"]), d.get("explore_k"), float(d.get("explore_share", 0)))
            for name, d in data["routes"].items()
        }
        return DecisionTable(int(data["version"]), MappingProxyType(routes), int(data.get("fallback_k", 0)))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None


class ReplicaSync:
    def __init__(self, loop: ControlLoop, store: StateStore) -> None:
        self.loop = loop
        self.store = store
        self.role = "starting"
        self.lease: str | None = None
        self.lease_holder: str | None = None
        self.store_up = True
        self._written_version = 0
        self._shared_version = 0

    @property
    def leader(self) -> bool:
        return self.role == "leader"

    async def step(self) -> None:
        local = self.loop.sink.drain()
        pushed = False
        try:
            await self.store.push_observations([encode_observation(o) for o in local])
            pushed = True
            lease = await self.store.acquire_lease(self.loop.config.state.lease_ttl_s)
            self.lease_holder = lease or await self.store.lease_holder()
            if lease is None:
                await self._follow()
            else:
                await self._lead(lease)
            self._set_store_up(True)
        except StoreUnavailable as exc:
            self._set_store_up(False, str(exc))
            self._standalone([] if pushed else local)

    async def _lead(self, lease: str) -> None:
        if lease != self.lease:
            await self._take_over(lease)
        await self.apply_admin(await self.store.read_admin())
        raw = await self.store.pop_observations(_POP_LIMIT)
        observations = [o for o in map(decode_observation, raw) if o is not None]
        self.loop.tick(observations)
        if not await self._write(lease):
            log.warning("lost the lease while writing; stepping down", extra={"replica": self.store.replica_id})
            self.lease = None
            self._set_role("follower")

    async def _take_over(self, lease: str) -> None:
        stored = await self.store.read_table()
        table = decode_table(stored) if stored else None
        if table is not None:
            self.loop.controller.adopt(table, time.monotonic())
        self.lease = lease
        self._written_version = 0
        self._set_role("leader")
        self.loop.metrics.leader_changes.inc()

    async def _write(self, lease: str) -> bool:
        c = self.loop.controller
        table = self.loop.dispatcher.table
        records = [
            orjson.dumps(
                {
                    "at": r.at,
                    "version": r.version,
                    "route": r.route,
                    "old_k": r.old_k,
                    "new_k": r.new_k,
                    "reason": r.reason,
                    "expected_speedup": round(r.expected_speedup, 4),
                    "inputs": dict(r.inputs),
                    "leader": self.store.replica_id,
                }
            )
            for r in c.log
            if r.version > self._written_version
        ]
        status = orjson.dumps(
            {
                "version": table.version,
                "leader": self.store.replica_id,
                "routes": {name: c.route_status(name) for name in c.route_names()},
                "paused": c.paused,
                "kill_switch": c.kill_switch,
                "ticks": c.ticks,
            }
        )
        ok = await self.store.write_leader_state(lease, encode_table(table, self.store.replica_id), status, records)
        if ok:
            self._written_version = table.version
        return ok

    async def _follow(self) -> None:
        self.lease = None
        self._set_role("follower")
        raw = await self.store.read_table()
        table = decode_table(raw) if raw else None
        if table is not None and table.version != self.loop.dispatcher.table.version:
            self.loop.publish(table)
            self._shared_version = table.version
        self.loop.last_tick_at = time.time()
        self.loop.metrics.last_tick.set(self.loop.last_tick_at)

    def _standalone(self, observations: list[Observation]) -> None:
        if self.role != "standalone":
            # Carry on from the decisions in force, not from this replica's idle controller.
            self.loop.controller.adopt(self.loop.dispatcher.table, time.monotonic())
            self.lease = None
            self._set_role("standalone")
        self.loop.tick(observations)

    async def apply_admin(self, admin: dict[str, str]) -> None:
        """Pins and flags from the shared admin state (any replica's admin API writes there)."""
        c = self.loop.controller
        for name in c.route_names():
            value = admin.get(f"pin:{name}")
            try:
                c.pin(name, int(value) if value is not None else None)
            except ValueError:
                log.warning("ignored a shared pin outside the route's bounds", extra={"route": name, "k": value})
        c.paused = admin.get("paused") == "1"
        c.kill_switch = admin.get("kill_switch") == "1"

    async def write_admin(self, field: str, value: str | None) -> bool:
        """Share an admin change; False when the store is away (the change then holds on this replica only)."""
        try:
            await self.store.write_admin(field, value)
        except StoreUnavailable:
            return False
        return True

    async def shared_status(self) -> dict[str, Any] | None:
        """The leader's view of routes and controller, for admin calls answered by a follower."""
        try:
            raw = await self.store.read_status()
        except StoreUnavailable:
            return None
        return orjson.loads(raw) if raw else None

    async def shared_decisions(self, limit: int) -> list[dict[str, Any]] | None:
        try:
            return [orjson.loads(r) for r in await self.store.read_decisions(limit)]
        except StoreUnavailable:
            return None

    def _set_role(self, role: str) -> None:
        if role != self.role:
            log.warning(
                "replica role changed",
                extra={"replica": self.store.replica_id, "old_role": self.role, "new_role": role},
            )
            self.role = role
        for name in ("leader", "follower", "standalone"):
            self.loop.metrics.replica_role.labels(name).set(1 if name == role else 0)

    def _set_store_up(self, up: bool, error: str = "") -> None:
        if up != self.store_up:
            if up:
                log.warning("state store reachable again", extra={"store": self.store.kind})
            else:
                log.error(
                    "state store unreachable; carrying on alone", extra={"store": self.store.kind, "error": error}
                )
        self.store_up = up
        self.loop.metrics.store_up.set(1 if up else 0)
        if not up:
            self.loop.metrics.store_errors.inc()
