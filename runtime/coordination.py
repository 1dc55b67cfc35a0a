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

The control loop asks its `Coordinator` for a `Turn` each tick (what to do: lead on these observations, follow
this table, or carry on alone) and hands a leader's results back with `commit`. The coordinator never reaches
into the loop, the controller or the dispatcher.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, Protocol

import orjson
from specgate.backends.state_store import StateStore, StoreUnavailable
from specgate.controllers.controller import DecisionRecord
from specgate.controllers.decisions import DecisionTable, RouteDecision
from specgate.controllers.k_schedule import encode, parse
from specgate.controllers.observations import Observation, SpecStats
from specgate.runtime.metrics import GatewayMetrics

__all__ = [
    "Coordinator",
    "LeaderState",
    "ReplicaInfo",
    "StoreCoordinator",
    "Turn",
    "decode_observation",
    "decode_table",
    "encode_observation",
    "encode_table",
]

log = logging.getLogger("specgate.replica")
_POP_LIMIT = 50_000
_OBSERVATION_FIELDS = frozenset(f.name for f in fields(Observation)) - {"spec"}


def encode_observation(obs: Observation) -> bytes:
    return orjson.dumps(obs)


def decode_observation(raw: bytes) -> Observation | None:
    try:
        data = orjson.loads(raw)
        spec = data.pop("spec")
        if spec is not None:
            spec = SpecStats(
                spec["draft_tokens"],
                spec["accepted_tokens"],
                spec["verify_steps"],
                tuple(spec["histogram"]),
                # Per-step evidence under a k schedule; absent in observations of replicas from before it.
                tuple((int(k), tuple(int(c) for c in hist)) for k, hist in spec.get("by_k", ())),
            )
        # Keys of another version (a rolling upgrade) are dropped rather than losing the whole observation.
        return Observation(spec=spec, **{k: v for k, v in data.items() if k in _OBSERVATION_FIELDS})
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None  # another version's shape or garbage: skip it rather than stop the controller


def encode_table(table: DecisionTable, leader: str) -> bytes:
    return orjson.dumps(
        {
            "version": table.version,
            "fallback_k": table.fallback_k,
            "leader": leader,
            "routes": {
                name: {
                    "k": d.k,
                    "reason": d.reason,
                    "explore_k": d.explore_k,
                    "explore_share": d.explore_share,
                    "schedule": None if d.schedule is None else encode(d.schedule),
                    "explore_until": d.explore_until,
                }
                for name, d in table.routes.items()
            },
        }
    )


def _schedule(raw: object) -> tuple[tuple[int, int], ...] | None:
    """A schedule from the shared table, in the plugin's wire form; None when absent (a table written before
    schedules, or static mode). A malformed one refuses the table as a whole, like any other bad field."""
    if raw is None:
        return None
    points = parse(raw) if isinstance(raw, str) else None
    if points is None:
        raise ValueError("schedule")
    return points


def _explore_until(raw: object) -> int | None:
    """The batch up to which explorers run the explore k; None when absent (a table written before it: any batch).
    Anything but a positive integer refuses the table, like any other bad field."""
    if raw is None:
        return None
    if not isinstance(raw, int) or isinstance(raw, bool) or raw < 1:
        raise ValueError("explore_until")
    return raw


def decode_table(raw: bytes) -> DecisionTable | None:
    try:
        data = orjson.loads(raw)
        routes = {
            name: RouteDecision(
                int(d["k"]),
                str(d["reason"]),
                d.get("explore_k"),
                float(d.get("explore_share", 0)),
                _schedule(d.get("schedule")),
                _explore_until(d.get("explore_until")),
            )
            for name, d in data["routes"].items()
        }
        return DecisionTable(int(data["version"]), MappingProxyType(routes), int(data.get("fallback_k", 0)))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None


Role = Literal["starting", "leader", "follower", "standalone"]


@dataclass(frozen=True, slots=True)
class Turn:
    """What the control loop does this tick.

    - leader: apply `admin` (when given), adopt `adopt` (a predecessor's table, on take-over), tick the controller
      on `observations`, then `commit` the result.
    - follower: serve `table` (None: keep the one in force); the controller stays idle.
    - standalone: the store is away; tick on `observations` (this replica's own). `adopt_current` on the first
      such turn: carry on from the decisions in force, not from an idle controller's state.
    """

    role: Role
    observations: Sequence[Observation] = ()
    admin: Mapping[str, str] | None = None
    adopt: DecisionTable | None = None
    adopt_current: bool = False
    table: DecisionTable | None = None


@dataclass(frozen=True, slots=True)
class LeaderState:
    """What a leader publishes after its tick."""

    table: DecisionTable
    status: Mapping[str, Any]
    records: Sequence[DecisionRecord] = field(default=())


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    replica_id: str
    role: Role
    leader: bool
    lease_holder: str | None
    store: str
    store_up: bool


class Coordinator(Protocol):
    """How one replica's control loop shares work with the others (or with nobody: the memory store)."""

    @property
    def info(self) -> ReplicaInfo: ...

    async def begin(self, local: list[Observation]) -> Turn:
        """Share this replica's new observations and say what to do this tick."""
        ...

    async def commit(self, state: LeaderState) -> bool:
        """Publish a leader's tick; False when the lease was lost meanwhile (the replica then follows)."""
        ...

    async def write_admin(self, name: str, value: str | None) -> bool:
        """Share an admin change; False when the store is away (the change then holds on this replica only)."""
        ...

    async def shared_status(self) -> dict[str, Any] | None:
        """The leader's view of routes and controller, for admin calls answered by a follower."""
        ...

    async def shared_decisions(self, limit: int) -> list[dict[str, Any]] | None: ...


class StoreCoordinator:
    """A `Coordinator` over a `StateStore`: Redis for several replicas, the memory store for one."""

    def __init__(self, store: StateStore, lease_ttl_s: float, metrics: GatewayMetrics) -> None:
        self.store = store
        self._lease_ttl_s = lease_ttl_s
        self._metrics = metrics
        self.role: Role = "starting"
        self.lease: str | None = None
        self.lease_holder: str | None = None
        self.store_up = True
        self._written_version = 0

    @property
    def info(self) -> ReplicaInfo:
        return ReplicaInfo(
            self.store.replica_id, self.role, self.role == "leader", self.lease_holder, self.store.kind, self.store_up
        )

    async def begin(self, local: list[Observation]) -> Turn:
        pushed = False
        try:
            await self.store.push_observations([encode_observation(o) for o in local])
            pushed = True
            lease = await self.store.acquire_lease(self._lease_ttl_s)
            self.lease_holder = lease or await self.store.lease_holder()
            turn = await (self._follow() if lease is None else self._lead(lease))
            self._set_store_up(True)
            return turn
        except StoreUnavailable as exc:
            self._set_store_up(False, str(exc))
            first = self.role != "standalone"
            if first:
                self.lease = None
                self._set_role("standalone")
            return Turn("standalone", [] if pushed else local, adopt_current=first)

    async def _lead(self, lease: str) -> Turn:
        adopt = None
        if lease != self.lease:
            stored = await self.store.read_table()
            adopt = decode_table(stored) if stored else None
            self.lease = lease
            self._written_version = 0
            self._set_role("leader")
            self._metrics.leader_changes.inc()
        admin = await self.store.read_admin()
        raw = await self.store.pop_observations(_POP_LIMIT)
        observations = [o for o in map(decode_observation, raw) if o is not None]
        return Turn("leader", observations, admin=admin, adopt=adopt)

    async def _follow(self) -> Turn:
        self.lease = None
        self._set_role("follower")
        raw = await self.store.read_table()
        return Turn("follower", table=decode_table(raw) if raw else None)

    async def commit(self, state: LeaderState) -> bool:
        if self.lease is None:
            return False
        me = self.store.replica_id
        records = [
            orjson.dumps({**r.as_dict(), "leader": me}) for r in state.records if r.version > self._written_version
        ]
        status = orjson.dumps({"version": state.table.version, "leader": me, **state.status})
        try:
            ok = await self.store.write_leader_state(self.lease, encode_table(state.table, me), status, records)
        except StoreUnavailable as exc:
            self._set_store_up(False, str(exc))
            return False
        if ok:
            self._written_version = state.table.version
        else:
            log.warning("lost the lease while writing; stepping down", extra={"replica": me})
            self.lease = None
            self._set_role("follower")
        return ok

    async def write_admin(self, name: str, value: str | None) -> bool:
        try:
            await self.store.write_admin(name, value)
        except StoreUnavailable:
            return False
        return True

    async def shared_status(self) -> dict[str, Any] | None:
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

    def _set_role(self, role: Role) -> None:
        if role != self.role:
            log.warning(
                "replica role changed",
                extra={"replica": self.store.replica_id, "old_role": self.role, "new_role": role},
            )
            self.role = role
        for name in ("leader", "follower", "standalone"):
            self._metrics.replica_role.labels(name).set(1 if name == role else 0)

    def _set_store_up(self, up: bool, error: str = "") -> None:
        if up != self.store_up:
            if up:
                log.warning("state store reachable again", extra={"store": self.store.kind})
            else:
                log.error(
                    "state store unreachable; carrying on alone", extra={"store": self.store.kind, "error": error}
                )
        self.store_up = up
        self._metrics.store_up.set(1 if up else 0)
        if not up:
            self._metrics.store_errors.inc()
