"""The workload record: one JSON line per finished request, what the controller learns from and nothing of the text.

Off by default (`recording.enabled`). Each line: time, route, pool, tenant, API-independent figures (prompt and
output tokens, k applied, whether k followed a schedule, the acceptance histogram and per-k histograms, time to
first token, decode and end-to-end time, batch at dispatch). `specgate advise` (offline/advisor.py) replays it.

Never on the request path: lines wait in a bounded buffer (full: the oldest go, counted) and a background task
hands them to the sink every `flush_s`. Two sinks: a file (`FileSink`, appended in a worker thread, rotating at
`max_bytes` into `path.1` ... `path.N` (`backups`), so the record never takes more than (backups + 1) x max_bytes of
disk), or a Redis stream (backends/record_stream.py, `recording.sink: redis`), where every replica's lines meet.
A batch the sink could not take goes back to the front of the buffer for the next flush (the buffer's bound still
holds: what overflows is dropped, counted).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import deque
from pathlib import Path
from typing import Any, Protocol

import orjson
from specgate.backends.state_store import StoreUnavailable
from specgate.controllers.observations import Observation

__all__ = ["RECORD_VERSION", "FileSink", "RecordSink", "SinkUnavailable", "WorkloadRecorder", "record_line"]

RECORD_VERSION = 1
log = logging.getLogger("specgate.recorder")


def record_line(obs: Observation, tenant: str | None, now: float) -> dict[str, Any]:
    spec = obs.spec
    return {
        "v": RECORD_VERSION,
        "t": round(now, 3),
        "route": obs.route,
        "pool": obs.pool,
        "tenant": tenant,
        "k": obs.k_applied,
        "scheduled": obs.scheduled,
        "prompt_tokens": obs.prompt_tokens,
        "completion_tokens": obs.completion_tokens,
        "ttft_s": obs.ttft_s,
        "decode_s": obs.decode_s,
        "e2e_s": obs.e2e_s,
        "batch": obs.batch_at_dispatch,
        "stream": obs.stream,
        "histogram": list(spec.histogram) if spec else None,
        "by_k": [[k, list(h)] for k, h in spec.by_k] if spec else None,
        "draft_tokens": spec.draft_tokens if spec else None,
        "accepted_tokens": spec.accepted_tokens if spec else None,
    }


class SinkUnavailable(Exception):
    """The sink could not take a batch now; the recorder keeps it for the next flush."""


class RecordSink(Protocol):
    """Where record lines go. `write` takes the batch or raises `SinkUnavailable` (a file) or `StoreUnavailable`
    (Redis); the recorder then sends the batch again at the next flush."""

    async def write(self, lines: list[bytes]) -> None: ...

    async def close(self) -> None: ...


class FileSink:
    """Appends lines to a file in a worker thread, rotating at `max_bytes` into `path.1` ... `path.<backups>`."""

    def __init__(self, path: Path, max_bytes: int, backups: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups

    async def write(self, lines: list[bytes]) -> None:
        try:
            await asyncio.to_thread(self._append, b"".join(lines))
        except OSError as exc:
            raise SinkUnavailable(f"{self.path}: {exc}") from exc

    async def close(self) -> None:
        return None

    def _append(self, data: bytes) -> None:
        with contextlib.suppress(FileNotFoundError):
            if self.path.stat().st_size + len(data) > self.max_bytes:
                self._rotate()
        with self.path.open("ab") as f:
            f.write(data)

    def _rotate(self) -> None:
        for i in range(self.backups, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            newer = self.path.with_name(f"{self.path.name}.{i - 1}") if i > 1 else self.path
            if newer.exists():
                os.replace(newer, older)
        if self.backups == 0:
            self.path.unlink(missing_ok=True)


class WorkloadRecorder:
    def __init__(
        self,
        sink: RecordSink,
        flush_s: float = 1.0,
        buffer: int = 10_000,
        on_drop: Any = None,
    ) -> None:
        self.sink = sink
        self.flush_s = flush_s
        self._pending: deque[bytes] = deque(maxlen=buffer)
        self._on_drop = on_drop
        self._task: asyncio.Task[None] | None = None
        self.written = 0

    def add(self, obs: Observation, tenant: str | None) -> None:
        if len(self._pending) == self._pending.maxlen and self._on_drop is not None:
            self._on_drop()
        self._pending.append(orjson.dumps(record_line(obs, tenant, time.time())) + b"\n")

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()  # what came in since the last flush is not lost at shutdown
        if self._pending:  # the sink refused the last batch: nothing more can be done, but it is counted
            log.error("workload record lines lost at shutdown", extra={"lines": len(self._pending)})
            if self._on_drop is not None:
                for _ in self._pending:
                    self._on_drop()
            self._pending.clear()
        await self.sink.close()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.flush_s)
            await self.flush()

    async def flush(self) -> None:
        if not self._pending:
            return
        lines = list(self._pending)
        self._pending.clear()
        try:
            await self.sink.write(lines)
        except (SinkUnavailable, StoreUnavailable) as exc:
            log.warning("workload record not written; kept for the next flush", extra={"error": str(exc)})
            self._requeue(lines)
            return
        self.written += len(lines)

    def _requeue(self, lines: list[bytes]) -> None:
        """Put a batch the sink refused back in front of what came in meanwhile; the oldest beyond the bound go."""
        newer = list(self._pending)
        keep = self._pending.maxlen or 0
        merged = lines + newer
        if len(merged) > keep and self._on_drop is not None:
            for _ in range(len(merged) - keep):
                self._on_drop()
        self._pending.clear()
        self._pending.extend(merged[-keep:] if keep else merged)
