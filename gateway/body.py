"""Read a request body from ASGI `receive`, with the gateway's size limit."""

from __future__ import annotations

from starlette.types import Receive

from specgate.errors import InvalidRequest, PayloadTooLarge

__all__ = ["ClientGone", "read_body"]


class ClientGone(Exception):
    """The client disconnected while its request body was still being read."""


async def read_body(receive: Receive, content_length: str | None, limit: int) -> bytes:
    """Read the request body from ASGI `receive`, refusing (413) as soon as it is known to exceed `limit` bytes."""
    if content_length is not None:
        try:
            declared = int(content_length)
        except ValueError:
            raise InvalidRequest("Content-Length is not a number") from None
        if declared > limit:
            raise PayloadTooLarge(f"request body of {declared} bytes exceeds the limit of {limit} bytes")
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
        parts.append(chunk)
        if not message.get("more_body", False):
            return parts[0] if len(parts) == 1 else b"".join(parts)
