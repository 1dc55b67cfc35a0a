"""The workload record in a Redis stream (`recording.sink: redis`): every replica appends its lines to one stream,
`<state.namespace>:records`, bounded by `recording.stream_max_len` (XADD MAXLEN ~, so Redis trims in whole
nodes: the stream may hold somewhat more); `specgate advise --from redis://...` reads it back in order.

Each entry holds one field, `r`: the record line as `runtime/recorder.py` writes it to a file.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from specgate.backends.state_store import StoreUnavailable, redis_client

__all__ = ["FIELD", "RedisStreamSink", "read_all", "read_stream", "stream_key"]

FIELD = b"r"
_PAGE = 5000


def stream_key(namespace: str) -> str:
    return f"{namespace}:records"


class RedisStreamSink:
    def __init__(self, client: aioredis.Redis, key: str, max_len: int) -> None:
        self.client = client
        self.key = key
        self.max_len = max_len

    async def write(self, lines: list[bytes]) -> None:
        # One round trip for the batch; not a transaction: on an error part of it may be in the stream, and the
        # recorder sends it again (a replayed line is a duplicate request in `advise`, not a lost one).
        pipe = self.client.pipeline(transaction=False)
        for line in lines:
            pipe.xadd(self.key, {FIELD: line.rstrip(b"\n")}, maxlen=self.max_len, approximate=True)
        try:
            await pipe.execute()
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(f"redis stream {self.key}: {type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        await self.client.aclose()


async def read_stream(client: aioredis.Redis, key: str) -> AsyncIterator[bytes]:
    """Every line in the stream, oldest first, a page at a time."""
    start = "-"
    while True:
        page: list[tuple[Any, dict[Any, Any] | None]] = await client.xrange(key, min=start, max="+", count=_PAGE) or []
        for _, fields in page:
            line = (fields or {}).get(FIELD)
            if isinstance(line, bytes):
                yield line
        if len(page) < _PAGE:
            return
        last = page[-1][0]
        start = "(" + (last.decode() if isinstance(last, bytes) else str(last))


def read_all(url: str, key: str, timeout_s: float = 10.0) -> list[bytes]:
    """Every line of the stream `key` in the Redis at `url`, for offline tools (not on a running event loop)."""

    async def read() -> list[bytes]:
        client = redis_client(url, timeout_s)
        try:
            return [line async for line in read_stream(client, key)]
        finally:
            await client.aclose()

    return asyncio.run(read())
