"""Server-sent events: split an upstream byte stream into whole events without re-encoding them.

The relay forwards each event's bytes exactly as the engine wrote them; only when a feature needs a
field (the final usage chunk, for instance) does it look inside with `event_data`.
"""

from __future__ import annotations

__all__ = ["DONE", "SSESplitter", "encode_event", "event_data"]

DONE = b"[DONE]"
_MAX_EVENT_BYTES = 8 * 1024 * 1024


class SSESplitter:
    """Feed raw chunks; get back complete events (each ending in a blank line), in order.

    Accepts LF and CRLF line endings. An event larger than `max_event_bytes` raises ValueError, so
    a broken upstream cannot make the gateway buffer without bound.
    """

    __slots__ = ("_buf", "_max")

    def __init__(self, max_event_bytes: int = _MAX_EVENT_BYTES) -> None:
        self._buf = b""
        self._max = max_event_bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        buf = self._buf + chunk if self._buf else chunk
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n")
        events: list[bytes] = []
        start = 0
        while True:
            end = buf.find(b"\n\n", start)
            if end < 0:
                break
            events.append(buf[start : end + 2])
            start = end + 2
        self._buf = buf[start:]
        if len(self._buf) > self._max:
            raise ValueError(f"SSE event larger than {self._max} bytes")
        return events

    @property
    def pending(self) -> bytes:
        """Bytes of an unfinished event (non-empty at end of stream means a truncated stream)."""
        return self._buf


def event_data(event: bytes) -> bytes | None:
    """The `data:` payload of one event (multi-line data joined by LF), or None for comments/pings."""
    parts: list[bytes] = []
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            value = line[5:]
            parts.append(value[1:] if value.startswith(b" ") else value)
    if not parts:
        return None
    return b"\n".join(parts)


def encode_event(data: bytes) -> bytes:
    return b"data: " + data + b"\n\n"
