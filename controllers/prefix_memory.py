"""Where each prefix was last sent: lets a conversation that spilled stay where its newest history is. Pure state.

Rendezvous homes (controllers/score_prefix.py) put every conversation on the same engine from any replica, but with
few conversations open at once they split unevenly, and the load bound then spills turns of the busier home's
conversations to another engine again and again: each spilled turn pays its whole history there, and the next turn
goes home and finds the spilled turn missing. Remembering the last engine a key went to turns a spill into a move:
the conversation stays on the engine that now holds all of its history, one miss paid once, and the load evens out.
A bounded LRU, so memory stays flat however many conversations pass.

Several replicas: each placement that changes where a key lives is also kept in an outbox (`drain`) that
runtime/replica_logs.py shares through the state store, and other replicas' placements are `merge`d in, the newer
winning, so a conversation moved by one replica is found where it moved by the others.
"""

from __future__ import annotations

from collections import OrderedDict, deque

__all__ = ["Placement", "PlacementMemory"]

# (affinity key, endpoint, wall-clock time of the placement)
Placement = tuple[int, str, float]
_OUTBOX = 10_000


class PlacementMemory:
    """The endpoint each affinity key last went to, for the `capacity` most recent keys (0: remembers nothing)."""

    __slots__ = ("_capacity", "_last", "_outbox", "shared")

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self._capacity = capacity
        self._last: OrderedDict[int, tuple[str, float]] = OrderedDict()
        # Changed placements not yet shared; kept only while another replica may read them.
        self._outbox: deque[Placement] = deque(maxlen=_OUTBOX)
        self.shared = False

    def __len__(self) -> int:
        return len(self._last)

    @property
    def capacity(self) -> int:
        return self._capacity

    def get(self, key: int) -> str | None:
        entry = self._last.get(key)
        return None if entry is None else entry[0]

    def put(self, key: int, endpoint: str, at: float = 0.0) -> None:
        """This replica sent `key` to `endpoint` at `at`."""
        if self._capacity == 0:
            return
        if self.shared and self.get(key) != endpoint:
            self._outbox.append((key, endpoint, at))
        self._store(key, endpoint, at)

    def merge(self, key: int, endpoint: str, at: float) -> bool:
        """Another replica sent `key` to `endpoint` at `at`: taken unless this replica placed it later."""
        if self._capacity == 0:
            return False
        entry = self._last.get(key)
        if entry is not None and entry[1] >= at:
            return False
        self._store(key, endpoint, at)
        return True

    def drain(self) -> list[Placement]:
        """The placements to share since the last drain, oldest first."""
        out = list(self._outbox)
        self._outbox.clear()
        return out

    def _store(self, key: int, endpoint: str, at: float) -> None:
        last = self._last
        last[key] = (endpoint, at)
        last.move_to_end(key)
        if len(last) > self._capacity:
            last.popitem(last=False)
