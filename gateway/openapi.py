"""Request-body schemas for the OpenAPI description (`/openapi.json`): what the gateway accepts, for clients,
docs and schema-driven fuzzing. The handlers validate bodies themselves (gateway/requests.py) and stay the source
of truth for errors; these schemas describe the same contract."""

from __future__ import annotations

from typing import Any

__all__ = ["CHAT_BODY", "COMPLETION_BODY", "generation_paths", "request_body"]

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


_ERROR = {
    "description": "An error in the OpenAI shape",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["error"],
                "properties": {
                    "error": {
                        "type": "object",
                        "properties": {
                            "message": {"type": "string"},
                            "type": {"type": "string"},
                            "param": {"type": ["string", "null"]},
                            "code": {"type": ["string", "null"]},
                        },
                    }
                },
            }
        }
    },
}


def _operation(summary: str, operation_id: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "operationId": operation_id,
            **request_body(schema),
            "responses": {
                "200": {
                    "description": "The engine's answer; with `stream: true`, server-sent events ending in [DONE]",
                    "content": {
                        "application/json": {"schema": {}},
                        "text/event-stream": {"schema": {"type": "string"}},
                    },
                },
                "default": _ERROR,
            },
        }
    }


def generation_paths() -> dict[str, Any]:
    """OpenAPI path items of the two generation endpoints (served by gateway/generation.py)."""
    return {
        "/v1/chat/completions": _operation("Chat Completions", "chat_completions_v1_chat_completions_post", CHAT_BODY),
        "/v1/completions": _operation("Completions", "completions_v1_completions_post", COMPLETION_BODY),
    }
