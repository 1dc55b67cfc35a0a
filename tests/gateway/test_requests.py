from __future__ import annotations

import orjson
import pytest

from gateway.errors import InvalidRequest, PayloadTooLarge
from gateway.requests import parse_body, read_body


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
        parse_body(raw, api)  # type: ignore[arg-type]
    assert info.value.param == param


async def _chunks(*parts: bytes):  # type: ignore[no-untyped-def]
    for p in parts:
        yield p


async def test_read_body_limits() -> None:
    assert await read_body(_chunks(b"ab", b"cd"), None, 10) == b"abcd"
    with pytest.raises(PayloadTooLarge):
        await read_body(_chunks(b"x" * 6, b"x" * 6), None, 10)
    with pytest.raises(PayloadTooLarge):
        await read_body(_chunks(), "11", 10)
    with pytest.raises(InvalidRequest):
        await read_body(_chunks(), "ten", 10)
