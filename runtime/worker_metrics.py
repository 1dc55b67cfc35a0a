"""/metrics for `specgate serve --workers N`: every worker's series, whichever worker the scrape reaches.

Workers share one listening socket, so a scrape lands on one of them at random; alone, each would answer with its
own counters and Prometheus would see them jump between processes. So each worker holds a slot (a file lock in a
directory the supervising parent made: a replacement for a dead worker takes its slot, so `worker` label values stay
bounded), writes its exposition there every second, and answers a scrape with its own live series and the others'
last ones, each sample labelled `worker="<slot>"`. Sums over `worker` (what dashboards and alert rules do) give the
process-wide figures. A worker whose slot is no longer held (it died) drops out.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["WorkerMetrics", "merge_expositions"]

# A worker's file older than this is left out (a worker wedged long enough for that is not serving either).
_STALE_S = 10.0


class _Merged:
    """A collector over already-parsed families (prometheus_client's Collector protocol: `collect`)."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        yield from self._families


def merge_expositions(by_worker: Iterable[tuple[str, str]]) -> bytes:
    """Prometheus text expositions, one per worker, as one: every sample gains `worker`, families are merged."""
    families: dict[str, Metric] = {}
    for worker, text in by_worker:
        for family in text_string_to_metric_families(text):
            merged = families.get(family.name)
            if merged is None:
                merged = families[family.name] = Metric(family.name, family.documentation, family.type, family.unit)
            for s in family.samples:
                merged.add_sample(s.name, {**s.labels, "worker": worker}, s.value, s.timestamp, s.exemplar)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Merged(list(families.values())))  # type: ignore[arg-type]  # duck-typed Collector
    return generate_latest(registry)


class WorkerMetrics:
    """This worker's slot in the shared directory, its periodic exposition, and the merged answer to a scrape."""

    def __init__(self, directory: Path, registry: CollectorRegistry, slots: int, interval_s: float = 1.0) -> None:
        self._dir = directory
        self._registry = registry
        self._interval_s = interval_s
        self._lock: IO[bytes] | None = None
        self.slot = self._claim(slots)
        self._task: asyncio.Task[None] | None = None

    def _claim(self, slots: int) -> str:
        # Twice the workers: a replacement may start before the kernel has released its predecessor's lock.
        for i in range(slots * 2):
            handle = (self._dir / f"slot-{i}.lock").open("ab")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            self._lock = handle
            return str(i)
        raise RuntimeError(f"no free worker slot in {self._dir} ({slots * 2} taken)")

    def start(self) -> None:
        self._write()
        self._task = asyncio.create_task(self._run(), name="worker-metrics")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        with contextlib.suppress(OSError):
            (self._dir / f"slot-{self.slot}.prom").unlink()
        if self._lock is not None:
            self._lock.close()  # releases the slot
            self._lock = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            # A full disk must not stop the worker; the others then see its file as stale.
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self._write)

    def _write(self) -> None:
        staged = self._dir / f"slot-{self.slot}.prom.tmp"
        staged.write_bytes(generate_latest(self._registry))
        os.replace(staged, self._dir / f"slot-{self.slot}.prom")

    def _held(self, slot: str) -> bool:
        """Whether a live worker holds `slot` (its lock cannot be taken)."""
        try:
            with (self._dir / f"slot-{slot}.lock").open("ab") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return False  # closing releases it again
        except BlockingIOError:
            return True
        except OSError:
            return False

    def exposition(self) -> bytes:
        """This worker's live series and the other live workers' last ones, labelled by slot."""
        texts = [(self.slot, generate_latest(self._registry).decode())]
        now = time.time()
        for path in sorted(self._dir.glob("slot-*.prom")):
            slot = path.name[len("slot-") : -len(".prom")]
            if slot == self.slot or not self._held(slot):
                continue
            try:
                if now - path.stat().st_mtime > _STALE_S:
                    continue
                texts.append((slot, path.read_text()))
            except OSError:
                continue
        return merge_expositions(texts)
