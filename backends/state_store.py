"""Where gateway replicas share state: in memory (one replica, the default) or in Redis (several replicas).

Both implement `StateStore`. What is shared, and how (Redis keys under `<namespace>:`):

- `obs`: a list every replica appends its finished-request observations to (RPUSH, atomic per batch); the
  leader pops them (LPOP with a count) and feeds the controller, so it sees the traffic of all replicas.
- `lease`: leader election. `SET NX PX` with value `<replica>:<token>`, renewed each tick only by its holder
  (Lua); `fence` is INCRed at every acquisition, so each term of leadership has a larger token.
- `table`, `status`, `decisions`: written by the leader only, in one Lua script that first checks that the lease
  still holds its token: a leader that lost its lease (paused, partitioned) cannot overwrite its successor.
- `admin`: pins, pause and kill switch set through any replica's admin API; the leader applies them each tick.
- `rl:<tenant>:<what>:<minute>`: rate-limit counters (INCRBY + EXPIRE in one script).
- `keys`: API keys (sha256 -> tenant) added by operators at run time.

Every Redis error or timeout surfaces as `StoreUnavailable`; callers fall back (docs/replicas.md).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from abc import ABC, abstractmethod
from collections import deque
from typing import Any
from urllib.parse import parse_qs, urlsplit

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from specgate.config import StateConfig

__all__ = ["MemoryStateStore", "RedisStateStore", "StateStore", "StoreUnavailable", "make_store"]


class StoreUnavailable(Exception):
    """The shared store did not answer (in time)."""


class StateStore(ABC):
    kind: str = ""

    def __init__(self, replica_id: str | None = None) -> None:
        self.replica_id = replica_id or uuid.uuid4().hex[:12]

    async def start(self) -> None:  # noqa: B027 - optional hook
        pass

    async def close(self) -> None:  # noqa: B027 - optional hook
        pass

    # Shared response cache (runtime/shared_cache.py): in memory there is nothing to share (each replica has its own).
    async def cache_get(self, key: bytes) -> bytes | None:
        return None

    async def cache_put(self, key: bytes, value: bytes, ttl_s: float) -> None:  # noqa: B027 - optional hook
        pass

    # Logs every replica appends to and reads from a cursor of its own (runtime/replica_logs.py: where conversations
    # moved, the semantic cache's index). In memory there is no other replica to tell.
    async def append_log(self, name: str, items: list[bytes]) -> None:  # noqa: B027 - optional hook
        pass

    async def read_log(self, name: str, after: str) -> tuple[list[bytes], str]:
        """Entries of log `name` appended after cursor `after` ("" for the last few minutes'), and the cursor to read
        on from."""
        return [], after

    @abstractmethod
    async def acquire_lease(self, ttl_s: float) -> str | None:
        """This replica's lease value (`<replica>:<token>`) when it leads after this call, else None."""

    @abstractmethod
    async def lease_holder(self) -> str | None: ...

    @abstractmethod
    async def push_observations(self, items: list[bytes]) -> None: ...

    @abstractmethod
    async def pop_observations(self, limit: int) -> list[bytes]: ...

    @abstractmethod
    async def write_leader_state(self, lease: str, table: bytes, status: bytes, decisions: list[bytes]) -> bool:
        """Fenced write; False when `lease` is no longer the current lease."""

    @abstractmethod
    async def read_table(self) -> bytes | None: ...

    @abstractmethod
    async def read_status(self) -> bytes | None: ...

    @abstractmethod
    async def read_decisions(self, limit: int) -> list[bytes]: ...

    @abstractmethod
    async def read_admin(self) -> dict[str, str]: ...

    @abstractmethod
    async def write_admin(self, field: str, value: str | None) -> None: ...

    @abstractmethod
    async def add_to_window(self, key: str, amount: int, window_s: int) -> tuple[int, float]:
        """Add to a fixed-window counter; returns (total in the window, seconds until it resets)."""

    @abstractmethod
    async def tenant_for_key(self, sha256: str) -> str | None: ...


class MemoryStateStore(StateStore):
    """One replica: it always leads, and everything stays in this process."""

    kind = "memory"

    def __init__(self, replica_id: str | None = None, decision_log_size: int = 500) -> None:
        super().__init__(replica_id)
        self._obs: deque[bytes] = deque()
        self._table: bytes | None = None
        self._status: bytes | None = None
        self._decisions: deque[bytes] = deque(maxlen=decision_log_size)
        self._admin: dict[str, str] = {}
        self._windows: dict[str, tuple[int, float]] = {}

    async def acquire_lease(self, ttl_s: float) -> str | None:
        return f"{self.replica_id}:1"

    async def lease_holder(self) -> str | None:
        return f"{self.replica_id}:1"

    async def push_observations(self, items: list[bytes]) -> None:
        self._obs.extend(items)

    async def pop_observations(self, limit: int) -> list[bytes]:
        return [self._obs.popleft() for _ in range(min(limit, len(self._obs)))]

    async def write_leader_state(self, lease: str, table: bytes, status: bytes, decisions: list[bytes]) -> bool:
        self._table, self._status = table, status
        self._decisions.extend(decisions)
        return True

    async def read_table(self) -> bytes | None:
        return self._table

    async def read_status(self) -> bytes | None:
        return self._status

    async def read_decisions(self, limit: int) -> list[bytes]:
        return list(self._decisions)[-limit:]

    async def read_admin(self) -> dict[str, str]:
        return dict(self._admin)

    async def write_admin(self, field: str, value: str | None) -> None:
        if value is None:
            self._admin.pop(field, None)
        else:
            self._admin[field] = value

    async def add_to_window(self, key: str, amount: int, window_s: int) -> tuple[int, float]:
        now = time.time()
        count, ends = self._windows.get(key, (0, 0.0))
        if now >= ends:
            count, ends = 0, (now // window_s + 1) * window_s
            # Forget closed windows so memory stays bounded by the number of live keys.
            self._windows = {k: v for k, v in self._windows.items() if v[1] > now}
        count += amount
        self._windows[key] = (count, ends)
        return count, ends - now

    async def tenant_for_key(self, sha256: str) -> str | None:
        return None


_ACQUIRE = """
local cur = redis.call('GET', KEYS[1])
if not cur then
  local token = redis.call('INCR', KEYS[2])
  local value = ARGV[1] .. ':' .. token
  redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
  return value
end
if string.sub(cur, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. ':' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return cur
end
return false
"""

_FENCED_WRITE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[3], ARGV[3])
for i = 5, #ARGV do redis.call('RPUSH', KEYS[4], ARGV[i]) end
redis.call('LTRIM', KEYS[4], -tonumber(ARGV[4]), -1)
return 1
"""

_WINDOW_ADD = """
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {total, redis.call('PTTL', KEYS[1])}
"""


# Replica logs (runtime/replica_logs.py): entries kept per log (approximately), read per call, and how far back a
# starting replica reads.
_LOG_LENGTH = 100_000
_LOG_READ = 10_000
_LOG_LOOKBACK_S = 600


def redis_client(url: str, timeout_s: float) -> aioredis.Redis:
    """A client for redis://, rediss:// (TLS), unix:// or redis+sentinel://h1:p1,h2:p2/service[/db]."""
    parts = urlsplit(url)
    if parts.scheme != "redis+sentinel":
        return aioredis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
    from redis.asyncio.retry import Retry
    from redis.asyncio.sentinel import Sentinel
    from redis.backoff import NoBackoff

    hosts = []
    for item in parts.netloc.rsplit("@", 1)[-1].split(","):
        host, _, port = item.partition(":")
        hosts.append((host, int(port or 26379)))
    path = [p for p in parts.path.split("/") if p]
    if not path:
        raise ValueError("redis+sentinel URL needs the service name: redis+sentinel://host:26379/mymaster")
    options: dict[str, Any] = {"socket_timeout": timeout_s, "socket_connect_timeout": timeout_s}
    if parts.password:
        options["password"] = parts.password
    if len(path) > 1:
        options["db"] = int(path[1])
    if parse_qs(parts.query).get("ssl") == ["true"]:
        options["ssl"] = True
    # Ask the next sentinel at once when one is down: redis-py's default retries with backoff made a dead first
    # sentinel cost ~4 s per master lookup (measured), longer than the store's timeout.
    sentinel_options = {
        "socket_timeout": timeout_s,
        "socket_connect_timeout": timeout_s,
        "retry": Retry(NoBackoff(), 0),
    }
    return Sentinel(hosts, sentinel_kwargs=sentinel_options, **options).master_for(path[0], **options)


class RedisStateStore(StateStore):
    kind = "redis"

    def __init__(self, config: StateConfig, replica_id: str | None = None) -> None:
        super().__init__(replica_id)
        assert config.redis_url is not None
        self.config = config
        self._redis = redis_client(config.redis_url, config.timeout_s)
        ns = config.namespace
        self._k = {name: f"{ns}:{name}" for name in ("obs", "lease", "fence", "table", "status", "decisions", "admin")}
        self._keys_hash = f"{ns}:keys"
        self._rl_prefix = f"{ns}:rl:"
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._fenced = self._redis.register_script(_FENCED_WRITE)
        self._window = self._redis.register_script(_WINDOW_ADD)

    async def close(self) -> None:
        await self._redis.aclose()

    async def _call(self, coro: Any) -> Any:
        try:
            return await asyncio.wait_for(coro, self.config.timeout_s)
        except (RedisError, OSError, TimeoutError) as exc:
            raise StoreUnavailable(f"redis: {type(exc).__name__}: {exc}") from None

    @staticmethod
    def _text(value: Any) -> str | None:
        return value.decode() if isinstance(value, bytes) else value

    async def acquire_lease(self, ttl_s: float) -> str | None:
        keys = [self._k["lease"], self._k["fence"]]
        return self._text(await self._call(self._acquire(keys=keys, args=[self.replica_id, int(ttl_s * 1000)])))

    async def lease_holder(self) -> str | None:
        return self._text(await self._call(self._redis.get(self._k["lease"])))

    async def push_observations(self, items: list[bytes]) -> None:
        if items:
            await self._call(self._redis.rpush(self._k["obs"], *items))

    async def pop_observations(self, limit: int) -> list[bytes]:
        return list(await self._call(self._redis.lpop(self._k["obs"], limit)) or [])

    async def write_leader_state(self, lease: str, table: bytes, status: bytes, decisions: list[bytes]) -> bool:
        keys = [self._k["lease"], self._k["table"], self._k["status"], self._k["decisions"]]
        args: list[bytes | str | int] = [lease, table, status, self.config.decision_log_size, *decisions]
        return bool(await self._call(self._fenced(keys=keys, args=args)))

    async def read_table(self) -> bytes | None:
        return await self._call(self._redis.get(self._k["table"]))

    async def read_status(self) -> bytes | None:
        return await self._call(self._redis.get(self._k["status"]))

    async def read_decisions(self, limit: int) -> list[bytes]:
        return list(await self._call(self._redis.lrange(self._k["decisions"], -limit, -1)))

    async def read_admin(self) -> dict[str, str]:
        raw = await self._call(self._redis.hgetall(self._k["admin"]))
        return {self._text(k) or "": self._text(v) or "" for k, v in raw.items()}

    async def write_admin(self, field: str, value: str | None) -> None:
        if value is None:
            await self._call(self._redis.hdel(self._k["admin"], field))
        else:
            await self._call(self._redis.hset(self._k["admin"], field, value))

    async def add_to_window(self, key: str, amount: int, window_s: int) -> tuple[int, float]:
        bucket = int(time.time() // window_s)
        total, ttl_ms = await self._call(
            self._window(keys=[f"{self._rl_prefix}{key}:{bucket}"], args=[amount, window_s * 1000])
        )
        return int(total), max(0.0, int(ttl_ms) / 1000)

    async def tenant_for_key(self, sha256: str) -> str | None:
        return self._text(await self._call(self._redis.hget(self._keys_hash, sha256)))

    async def cache_get(self, key: bytes) -> bytes | None:
        value = await self._call(self._redis.get(f"{self.config.namespace}:cache:{key.hex()}"))
        return value if isinstance(value, bytes) else None

    async def cache_put(self, key: bytes, value: bytes, ttl_s: float) -> None:
        await self._call(self._redis.set(f"{self.config.namespace}:cache:{key.hex()}", value, px=int(ttl_s * 1000)))

    async def append_log(self, name: str, items: list[bytes]) -> None:
        if not items:
            return
        pipe = self._redis.pipeline(transaction=False)
        for item in items:
            # Approximate trimming keeps the stream bounded at the cost of an O(1) check per append.
            pipe.xadd(self._log_key(name), {"p": item}, maxlen=_LOG_LENGTH, approximate=True)
        await self._call(pipe.execute())

    async def read_log(self, name: str, after: str) -> tuple[list[bytes], str]:
        # A stream id is "<ms>-<seq>": a replica that starts reads the last few minutes' entries, not all.
        start = after or f"{int((time.time() - _LOG_LOOKBACK_S) * 1000)}-0"
        answer = await self._call(self._redis.xread({self._log_key(name): start}, count=_LOG_READ))
        if not answer:
            return [], start
        entries = answer[0][1]
        items = [fields[b"p"] for _, fields in entries if b"p" in fields]
        return items, self._text(entries[-1][0]) or start

    def _log_key(self, name: str) -> str:
        if not name.isidentifier():
            raise ValueError(f"log name {name!r}")
        return f"{self.config.namespace}:log:{name}"


def make_store(config: StateConfig, replica_id: str | None = None) -> StateStore:
    if config.redis_url:
        return RedisStateStore(config, replica_id)
    return MemoryStateStore(replica_id, config.decision_log_size)
