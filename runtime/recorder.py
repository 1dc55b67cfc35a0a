"""The workload record: one JSON line per finished request, what the controller learns from and nothing of the text.

Off by default (`recording.enabled`). Each line: time, route, pool, tenant, API-independent figures (prompt and
output tokens, k applied, whether k followed a schedule, the acceptance histogram and per-k histograms, time to
first token, decode and end-to-end time, batch at dispatch). `specgate advise` (offline/advisor.py) replays it.

Never on the request path: lines wait in a bounded buffer (full: the oldest go, counted) and a background task
appends them every `flush_s` in a worker thread. The file rotates at `max_bytes` into `path.1` ... `path.N`
(`backups`), so the record never takes more than (backups + 1) x max_bytes of disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import deque
from pathlib import Path
from typing import Any

import orjson
from specgate.controllers.observations import Observation

__all__ = ["RECORD_VERSION", "WorkloadRecorder", "record_line"]

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


class WorkloadRecorder:
    def __init__(
        self,
        path: Path,
        max_bytes: int,
        backups: int,
        flush_s: float = 1.0,
        buffer: int = 10_000,
        on_drop: Any = None,
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
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

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.flush_s)
            await self.flush()

    async def flush(self) -> None:
        if not self._pending:
            return
        lines = b"".join(self._pending)
        self._pending.clear()
        try:
            await asyncio.to_thread(self._append, lines)
        except OSError as exc:
            log.warning("workload record not written", extra={"path": str(self.path), "error": str(exc)})

    def _append(self, data: bytes) -> None:
        with contextlib.suppress(FileNotFoundError):
            if self.path.stat().st_size + len(data) > self.max_bytes:
                self._rotate()
        with self.path.open("ab") as f:
            f.write(data)
        self.written += data.count(b"\n")

    def _rotate(self) -> None:
        for i in range(self.backups, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            newer = self.path.with_name(f"{self.path.name}.{i - 1}") if i > 1 else self.path
            if newer.exists():
                os.replace(newer, older)
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
