"""Request-body schemas for the OpenAPI description (`/openapi.json`): what the gateway accepts, for clients,
docs and schema-driven fuzzing. The handlers validate bodies themselves (gateway/requests.py) and stay the source
of truth for errors; these schemas describe the same contract."""

from __future__ import annotations

from typing import Any

__all__ = ["CHAT_BODY", "COMPLETION_BODY", "request_body"]

_COMMON: dict[str, Any] = {
    "model": {"type": "string", "minLength": 1},
    "max_tokens": {"type": "integer", "minimum": 1},
    "max_completion_tokens": {"type": "integer", "minimum": 1},
    "temperature": {"type": "number", "minimum": 0, "maximum": 2},
    "top_p": {"type": "number", "minimum": 0, "maximum": 1},
    "n": {"type": "integer", "minimum": 1, "maximum": 128},
    "seed": {"type": "integer"},
    "stream": {"type": "boolean"},
    "stream_options": {"type": "object", "properties": {"include_usage": {"type": "boolean"}}},
    "stop": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 4}]},
    "ignore_eos": {"type": "boolean"},
    "vllm_xargs": {
        "type": "object",
        "properties": {"num_speculative_tokens": {"type": "integer", "minimum": 0}},
    },
}

CHAT_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {
        **_COMMON,
        "messages": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {
                    "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
                    "content": {
                        "oneOf": [
                            {"type": "string"},
                            {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "required": ["type"],
                                    "properties": {"type": {"type": "string"}, "text": {"type": "string"}},
                                },
                            },
                        ]
                    },
                },
            },
        },
    },
}

COMPLETION_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["model", "prompt"],
    "properties": {
        **_COMMON,
        "prompt": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]},
    },
}


def request_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}
