"""Config reload without a restart: SIGHUP, `POST /admin/config/reload`, or a file watch (`serve --watch-config`).

The new config is read and validated whole first. It is rejected, with every error listed, when it is invalid or
changes a section only a restart applies (RESTART_ONLY: the listener, the state store, tracing, the caches, the
recorder, logging and the monitor's timers); the old config keeps serving, and a metric and a log line say so.
Otherwise the gateway builds everything the new config needs, health-checks endpoints that are new, and then swaps
it in at once (Gateway.apply_config). Requests already dispatched finish on the pool and endpoint they started with;
the controller goes on from what it learnt for routes and pools that still exist.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from specgate.runtime.metrics import GatewayMetrics

from specgate.config import ConfigError, GatewayConfig

__all__ = ["RESTART_ONLY", "ConfigReloader", "ConfigWatcher", "ReloadOutcome", "changed_sections", "restart_only"]

log = logging.getLogger("specgate.config")

# Sections whose objects live for the process (sockets, connections, caches, files, timers): a reload that changes
# them is refused rather than half-applied.
RESTART_ONLY = ("server", "state", "tracing", "cache", "recording", "logging", "health", "scrape", "discovery")


def _leaves(old: Any, new: Any, path: str) -> Iterator[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in dict.fromkeys([*old, *new]):
            yield from _leaves(old.get(key), new.get(key), f"{path}.{key}")
    elif old != new:
        yield path


def restart_only(old: GatewayConfig, new: GatewayConfig) -> list[str]:
    """One line per field a reload cannot apply (its dotted path); empty when the reload may go ahead."""
    return [
        f"{path}: changed, but only a restart applies it (reload refused; the running config stays)"
        for section in RESTART_ONLY
        for path in _leaves(getattr(old, section).model_dump(), getattr(new, section).model_dump(), section)
    ]


def changed_sections(old: GatewayConfig, new: GatewayConfig) -> list[str]:
    """The top-level sections that differ, in config order."""
    return [name for name in GatewayConfig.model_fields if getattr(old, name) != getattr(new, name)]


Result = Literal["applied", "unchanged", "rejected"]


@dataclass(frozen=True, slots=True)
class ReloadOutcome:
    result: Result
    trigger: str
    # Top-level sections the new config changed (applied), or every reason it was refused (rejected).
    changed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"result": self.result, "trigger": self.trigger, "changed": self.changed, "errors": self.errors}


class ConfigReloader:
    """One reload at a time; each reads the config anew from `source` (the file and the command line's overrides)."""

    def __init__(
        self,
        source: Callable[[], GatewayConfig],
        current: Callable[[], GatewayConfig],
        apply: Callable[[GatewayConfig], Awaitable[None]],
        metrics: GatewayMetrics,
    ) -> None:
        self._source = source
        self._current = current
        self._apply = apply
        self._metrics = metrics
        self._lock = asyncio.Lock()
        self._closed = False
        self.last: ReloadOutcome | None = None

    async def close(self) -> None:
        """At shutdown, before the parts a reload replaces stop: later reloads are refused, and one in progress
        finishes first (it must not start an alert dispatcher or swap pools under a stopping gateway)."""
        self._closed = True
        async with self._lock:
            pass

    async def reload(self, trigger: str) -> ReloadOutcome:
        async with self._lock:
            if self._closed:
                outcome = ReloadOutcome("rejected", trigger, errors=["(shutdown): the gateway is stopping"])
            else:
                outcome = await self._reload(trigger)
        self.last = outcome
        m = self._metrics
        m.config_reloads.labels(outcome.result).inc()
        m.config_last_reload_ok.set(0 if outcome.result == "rejected" else 1)
        if outcome.result == "applied":
            m.config_loaded_at.set_to_current_time()
            log.warning("config reloaded", extra={"trigger": trigger, "changed": outcome.changed})
        elif outcome.result == "rejected":
            log.error("config reload rejected", extra={"trigger": trigger, "errors": outcome.errors})
        else:
            log.info("config reload: nothing changed", extra={"trigger": trigger})
        return outcome

    async def _reload(self, trigger: str) -> ReloadOutcome:
        try:
            new = await asyncio.to_thread(self._source)
        except ConfigError as exc:
            return ReloadOutcome("rejected", trigger, errors=list(exc.problems))
        except Exception as exc:  # unreadable (not UTF-8, a directory, ...): a rejection, counted and alerted on
            return ReloadOutcome("rejected", trigger, errors=[f"(read): {type(exc).__name__}: {exc}"])
        old = self._current()
        refused = restart_only(old, new)
        if old.pools and not new.pools:
            refused.append("pools: empty; a gateway with no pools serves nothing (reload refused)")
        if refused:
            return ReloadOutcome("rejected", trigger, errors=refused)
        changed = changed_sections(old, new)
        if not changed:
            return ReloadOutcome("unchanged", trigger)
        try:
            await self._apply(new)
        except ConfigError as exc:
            return ReloadOutcome("rejected", trigger, errors=list(exc.problems))
        except Exception as exc:  # building a part failed (a bug, an OS error): the old config keeps serving
            log.exception("config reload failed while building the new config", extra={"trigger": trigger})
            return ReloadOutcome("rejected", trigger, errors=[f"(apply): {type(exc).__name__}: {exc}"])
        return ReloadOutcome("applied", trigger, changed=changed)


class ConfigWatcher:
    """Reload when the config file changes (its size, modification time or inode: editors that write a new file
    and rename it over the old one change the inode). Polls: no dependency, and it works on every filesystem
    (ConfigMap volumes swap a symlink, which inotify on the file misses)."""

    def __init__(self, path: Path, reloader: ConfigReloader, interval_s: float = 2.0) -> None:
        self._path = path
        self._reloader = reloader
        self._interval_s = interval_s
        self._seen = self._stamp()
        self._task: asyncio.Task[None] | None = None

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self._path.stat()
        except OSError:
            return None  # reported by the reload that reads it, when it comes back
        return st.st_ino, st.st_size, st.st_mtime_ns

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="config-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            stamp = self._stamp()
            if stamp == self._seen or stamp is None:
                continue
            self._seen = stamp
            try:
                await self._reloader.reload("file-watch")
            except Exception:  # pragma: no cover - defensive: the watch must outlive a bug in one reload
                log.exception("config reload failed", extra={"trigger": "file-watch", "at": time.time()})
