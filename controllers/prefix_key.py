"""The affinity key of a request: a hash of the part of its prompt that later requests will repeat. Pure.

Engines cache KV blocks by prompt prefix, so requests worth sending to the same engine are those that start alike:
the turns of one conversation (each turn repeats all earlier ones) and requests on one long system prompt. The key
covers, for chat, the tool definitions and the messages up to and including the first user message, extended by
whole messages until it is at least `min_chars` long; each later turn of the conversation starts with exactly those
messages, so it gets the same key. For completions it covers the prompt's first `completion_chars` characters.
A prompt shorter than `min_chars` gets no key: it would not fill an engine's cache block worth keeping.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PrefixKeySettings", "chat_key", "completion_key"]

# Separators that cannot be confused with message text boundaries (ASCII unit / record separators).
_UNIT = "\x1f"
_RECORD = "\x1e"


@dataclass(frozen=True, slots=True)
class PrefixKeySettings:
    min_chars: int = 512
    # Chat keys hash at most this much text (a very long system prompt is identified by its head).
    max_chars: int = 65_536
    completion_chars: int = 2_048


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def chat_key(tools: str, messages: Sequence[tuple[str, str]], settings: PrefixKeySettings) -> int | None:
    """Key of a chat request from its serialized tools (may be empty) and its (role, text) messages in order."""
    parts = [tools, _RECORD] if tools else []
    length = len(tools)
    seen_user = False
    for role, text in messages:
        if seen_user and length >= settings.min_chars:
            break
        parts.extend((role, _UNIT, text, _RECORD))
        length += len(text)
        seen_user = seen_user or role == "user"
        if length >= settings.max_chars:
            break
    if length < settings.min_chars:
        return None
    return _digest("".join(parts)[: settings.max_chars])


def completion_key(prompt: str, settings: PrefixKeySettings) -> int | None:
    if len(prompt) < settings.min_chars:
        return None
    return _digest(prompt[: settings.completion_chars])
