"""Where each prefix was last sent: lets a conversation that spilled stay where its newest history is. Pure state.

Rendezvous homes (controllers/score_prefix.py) put every conversation on the same engine from any replica, but with
few conversations open at once they split unevenly, and the load bound then spills turns of the busier home's
conversations to another engine again and again: each spilled turn pays its whole history there, and the next turn
goes home and finds the spilled turn missing. Remembering the last engine a key went to turns a spill into a move:
the conversation stays on the engine that now holds all of its history, one miss paid once, and the load evens out.
A bounded LRU, so memory stays flat however many conversations pass.

It also counts, per endpoint, the keys last placed there within a recent window (`active`): the conversations each
engine is carrying. A new conversation is balanced on those counts (controllers/picker.py), which change the moment a
placement is made, rather than on scraped load, which is seconds old and, with short requests, mostly noise: placing
new conversations by a stale load figure herds them onto whichever engine looked idle at the last scrape.

Several replicas: each placement that changes where a key lives is also kept in an outbox (`drain`) that
runtime/replica_logs.py shares through the state store, and other replicas' placements are `merge`d in, the newer
winning, so a conversation moved by one replica is found where it moved by the others.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque

__all__ = ["Placement", "PlacementMemory"]

# (affinity key, endpoint, wall-clock time of the placement)
Placement = tuple[int, str, float]
_OUTBOX = 10_000


class PlacementMemory:
    """The endpoint each affinity key last went to, for the `capacity` most recent keys (0: remembers nothing)."""

    __slots__ = (
        "_active",
        "_capacity",
        "_counted",
        "_last",
        "_newest",
        "_outbox",
        "_recent",
        "_window_s",
        "shared",
    )

    def __init__(self, capacity: int, window_s: float = 60.0) -> None:
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        if window_s <= 0:
            raise ValueError("window_s must be > 0")
        self._capacity = capacity
        self._window_s = window_s
        self._last: OrderedDict[int, tuple[str, float]] = OrderedDict()
        # Changed placements not yet shared; kept only while another replica may read them.
        self._outbox: deque[Placement] = deque(maxlen=_OUTBOX)
        self.shared = False
        # Active keys: placements within the window, oldest first, and the endpoint each active key is counted on.
        self._recent: deque[Placement] = deque()
        self._counted: dict[int, str] = {}
        self._active: Counter[str] = Counter()
        self._newest = float("-inf")  # the latest placement time seen

    def __len__(self) -> int:
        return len(self._last)

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def window_s(self) -> float:
        return self._window_s

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

    def active(self, names: list[str], now: float) -> list[int]:
        """Per endpoint of `names`: the keys last placed there within the window before `now`."""
        self._expire(now)
        return [self._active[name] for name in names]

    def _store(self, key: int, endpoint: str, at: float) -> None:
        last = self._last
        last[key] = (endpoint, at)
        last.move_to_end(key)
        self._uncount(key)
        self._newest = max(self._newest, at)
        # A placement already out of the window (another replica's, read late) is remembered but not counted: the
        # window's queue must stay in time order for expiry.
        if at >= self._newest - self._window_s:
            self._counted[key] = endpoint
            self._active[endpoint] += 1
            self._recent.append((key, endpoint, at))
        if len(last) > self._capacity:
            gone, _ = last.popitem(last=False)
            self._uncount(gone)
        self._expire(self._newest)

    def _uncount(self, key: int) -> None:
        endpoint = self._counted.pop(key, None)
        if endpoint is not None:
            self._active[endpoint] -= 1
            if not self._active[endpoint]:
                del self._active[endpoint]

    def _expire(self, now: float) -> None:
        cutoff = now - self._window_s
        recent = self._recent
        while recent and recent[0][2] < cutoff:
            key, endpoint, at = recent.popleft()
            # Only the key's newest placement is counted; an older event of a key placed again since is stale.
            if self._last.get(key) == (endpoint, at):
                self._uncount(key)
