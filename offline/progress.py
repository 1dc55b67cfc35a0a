"""A progress bar for long CLI runs (sim, bench), on stderr: redrawn in place on a terminal, one line per step
otherwise (CI logs and files stay readable)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    def __init__(self, total: int, label: str = "", stream: TextIO | None = None, width: int = 28) -> None:
        self.total = max(1, total)
        self.done = 0
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.started = time.monotonic()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def line(self, note: str = "") -> str:
        filled = round(self.width * self.done / self.total)
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        bar = "#" * filled + "-" * (self.width - filled)
        head = f"{self.label} " if self.label else ""
        return f"{head}[{bar}] {self.done}/{self.total} {elapsed:.0f}s elapsed, ~{eta:.0f}s left {note}".rstrip()

    def advance(self, note: str = "") -> None:
        self.done = min(self.total, self.done + 1)
        if self._tty:
            end = "\n" if self.done == self.total else ""
            self.stream.write("\r\x1b[2K" + self.line(note) + end)
        else:
            self.stream.write(self.line(note) + "\n")
        self.stream.flush()
