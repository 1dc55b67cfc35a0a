"""Read and check OpenAI request bodies.

Only what the gateway itself relies on is checked here (model, messages/prompt, stream flags, n and
token limits): cheap, hand-written checks that name the offending `param`. Everything else is the
engine's to judge; its 4xx answers are normalised on the way back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson
from starlette.types import Receive

from gateway.errors import InvalidRequest, PayloadTooLarge

__all__ = ["Api", "ClientGone", "ParsedRequest", "parse_body", "read_body"]

Api = Literal["chat", "completions"]
_MAX_N = 128
_MAX_TOKENS_LIMIT = 1 << 31


@dataclass(slots=True)
class ParsedRequest:
    api: Api
    body: dict[str, Any]
    raw: bytes
    model: str
    stream: bool
    include_usage: bool
    # Set when the gateway changed `body`; otherwise the client's bytes are forwarded untouched.
    modified: bool = False


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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' must be a non-empty array", param="messages")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise InvalidRequest(f"messages[{i}] must be an object", param=f"messages.{i}")
        role = msg.get("role")
        if not isinstance(role, str) or not role:
            raise InvalidRequest(f"messages[{i}].role must be a non-empty string", param=f"messages.{i}.role")


def _check_prompt(prompt: Any) -> None:
    if isinstance(prompt, str):
        return
    if isinstance(prompt, list) and prompt:
        if all(isinstance(p, str) for p in prompt) or all(_is_int(p) for p in prompt):
            return
        if all(isinstance(p, list) and p and all(_is_int(t) for t in p) for p in prompt):
            return
    raise InvalidRequest("'prompt' must be a string, an array of strings, or an array of token ids", param="prompt")


def _check_limits(body: dict[str, Any]) -> None:
    n = body.get("n")
    if n is not None and (not _is_int(n) or not 1 <= n <= _MAX_N):
        raise InvalidRequest(f"'n' must be an integer from 1 to {_MAX_N}", param="n")
    for key in ("max_tokens", "max_completion_tokens"):
        value = body.get(key)
        if value is not None and (not _is_int(value) or not 1 <= value < _MAX_TOKENS_LIMIT):
            raise InvalidRequest(f"'{key}' must be a positive integer", param=key)
    for key in ("temperature", "top_p"):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
            raise InvalidRequest(f"'{key}' must be a non-negative number", param=key)


def parse_body(raw: bytes, api: Api) -> ParsedRequest:
    if not raw:
        raise InvalidRequest("request body is empty; expected a JSON object")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidRequest("request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("'model' is required and must be a non-empty string", param="model")
    if api == "chat":
        _check_messages(body.get("messages"))
    else:
        _check_prompt(body.get("prompt"))
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise InvalidRequest("'stream' must be a boolean", param="stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise InvalidRequest("'stream_options' must be an object", param="stream_options")
    if options and not stream:
        raise InvalidRequest("'stream_options' is only allowed when 'stream' is true", param="stream_options")
    include_usage = bool(options and options.get("include_usage") is True)
    _check_limits(body)
    return ParsedRequest(api, body, raw, model, stream, include_usage)
