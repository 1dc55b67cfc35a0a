from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
from specgate.gateway.body import ClientGone, read_body
from specgate.runtime.requests import parse_body

from specgate.errors import InvalidRequest, PayloadTooLarge


def chat(**kw: object) -> bytes:
    return orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], **kw})


def test_valid_chat_and_completion() -> None:
    p = parse_body(chat(stream=True, stream_options={"include_usage": True}), "chat")
    assert p.stream and p.include_usage and p.model == "m" and not p.modified
    for prompt in ("x", ["a", "b"], [1, 2], [[1], [2, 3]]):
        assert parse_body(orjson.dumps({"model": "m", "prompt": prompt}), "completions").model == "m"


@pytest.mark.parametrize(
    ("raw", "api", "param"),
    [
        (b"", "chat", None),
        (b"{", "chat", None),
        (b"[]", "chat", None),
        (b'{"messages": []}', "chat", "model"),
        (b'{"model": 3, "messages": []}', "chat", "model"),
        (b'{"model": "m", "messages": []}', "chat", "messages"),
        (b'{"model": "m", "messages": [3]}', "chat", "messages.0"),
        (b'{"model": "m", "messages": [{"content": "x"}]}', "chat", "messages.0.role"),
        (b'{"model": "m", "prompt": 3}', "completions", "prompt"),
        (b'{"model": "m", "prompt": ["a", 1]}', "completions", "prompt"),
        (b'{"model": "m", "prompt": "x", "stream": "yes"}', "completions", "stream"),
        (
            b'{"model": "m", "prompt": "x", "stream_options": {"include_usage": true}}',
            "completions",
            "stream_options",
        ),
        (b'{"model": "m", "prompt": "x", "n": 0}', "completions", "n"),
        (b'{"model": "m", "prompt": "x", "n": true}', "completions", "n"),
        (b'{"model": "m", "prompt": "x", "max_tokens": -1}', "completions", "max_tokens"),
        (b'{"model": "m", "prompt": "x", "max_tokens": 1e400}', "completions", None),
        (b'{"model": "m", "prompt": "x", "temperature": "hot"}', "completions", "temperature"),
    ],
)
def test_bad_bodies_name_param(raw: bytes, api: str, param: str | None) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_body(raw, api)  # type: ignore[arg-type]  # a wrong api name on purpose
    assert info.value.param == param


def _receive(*parts: bytes, disconnect: bool = False) -> Callable[[], Awaitable[dict[str, Any]]]:
    """An ASGI `receive` that hands out `parts` as one request body (then a disconnect, if asked)."""
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": p, "more_body": disconnect or i < len(parts) - 1} for i, p in enumerate(parts)
    ]
    if disconnect:
        messages.append({"type": "http.disconnect"})

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    return receive


async def test_read_body_limits() -> None:
    assert await read_body(_receive(b"ab", b"cd"), None, 10) == b"abcd"
    assert await read_body(_receive(b""), None, 10) == b""
    with pytest.raises(PayloadTooLarge):
        await read_body(_receive(b"x" * 6, b"x" * 6), None, 10)
    with pytest.raises(PayloadTooLarge):
        await read_body(_receive(b""), "11", 10)
    with pytest.raises(InvalidRequest):
        await read_body(_receive(b""), "ten", 10)


async def test_read_body_client_gone() -> None:
    with pytest.raises(ClientGone):
        await read_body(_receive(b"ab", disconnect=True), None, 10)
