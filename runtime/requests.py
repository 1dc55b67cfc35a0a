"""Check OpenAI request bodies and hold what the pipeline needs of them.

Only what the gateway itself relies on is checked here (model, messages/prompt, stream flags, n and
token limits): cheap, hand-written checks that name the offending `param`. Everything else is the
engine's to judge; its 4xx answers are normalised on the way back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson

from specgate.errors import InvalidRequest

__all__ = ["Api", "ParsedRequest", "parse_body"]

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
    # The route the dispatcher chose (per-route shares of an engine's counters: controllers/attribution.py).
    route: str = ""
    # The prefix-affinity key the dispatcher computed (controllers/prefix_key.py); None: load alone picks.
    affinity: int | None = None


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
