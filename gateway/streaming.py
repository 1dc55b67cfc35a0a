"""An ASGI response that relays SSE events and stops the producer the moment the client leaves.

Starlette's StreamingResponse, under ASGI spec 2.4 (what uvicorn speaks), only notices a disconnect
when a send fails, and uvicorn drops sends to a closed connection silently: the engine would go on
generating for nobody. Here a watcher task waits for `http.disconnect` and cancels the pump, whose
generator then closes the upstream connection (which makes vLLM abort the request).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["SSEResponse"]


class SSEResponse(Response):
    # A Response subclass only so that FastAPI hands it to the server untouched; the body is streamed
    # by __call__ below, not by Response's machinery.
    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncIterator[bytes],
        headers: Mapping[str, str],
        *,
        on_disconnect: Callable[[], None] | None = None,
        status_code: int = 200,
    ) -> None:
        self._events = events
        self._status = self.status_code = status_code
        self.background = None
        self._on_disconnect = on_disconnect
        self._headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        pump = asyncio.ensure_future(self._pump(send))
        watcher = asyncio.ensure_future(_wait_disconnect(receive))
        try:
            done, _ = await asyncio.wait({pump, watcher}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pump.cancel()
            watcher.cancel()
            await asyncio.gather(pump, watcher, return_exceptions=True)
            raise
        if pump in done:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            pump.result()
            return
        pump.cancel()
        await asyncio.gather(pump, return_exceptions=True)
        aclose = getattr(self._events, "aclose", None)
        if aclose is not None:
            await aclose()
        if self._on_disconnect:
            self._on_disconnect()

    async def _pump(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self._status, "headers": self._headers})
        async for event in self._events:
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
