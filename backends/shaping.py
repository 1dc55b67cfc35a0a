"""Shape an OpenAI request body for a vLLM pool: the per-request k and the usage the gateway needs."""

from __future__ import annotations

from typing import Any

from specgate.backends.spec_cap import K_KEY, read_cap

from specgate.errors import InvalidRequest

__all__ = ["client_k", "shape_request"]

_MAX_K = 16


def client_k(body: dict[str, Any]) -> int | None:
    """The k a client asked for in `vllm_xargs`, or None. Raises InvalidRequest when malformed."""
    xargs = body.get("vllm_xargs")
    if xargs is None:
        return None
    if not isinstance(xargs, dict):
        raise InvalidRequest("'vllm_xargs' must be an object", param="vllm_xargs")
    if K_KEY not in xargs:
        return None
    cap, malformed = read_cap(xargs, 1 << 30)
    if malformed or cap is None or cap > _MAX_K:
        raise InvalidRequest(f"'vllm_xargs.{K_KEY}' must be an integer from 0 to {_MAX_K}", param=f"vllm_xargs.{K_KEY}")
    return cap


def shape_request(body: dict[str, Any], *, cap: int | None, ask_usage: bool) -> bool:
    """Set (or remove) the per-request k and ask for the final usage chunk. Returns True if changed.

    Other `vllm_xargs` keys of the client pass through untouched.
    """
    changed = False
    xargs = body.get("vllm_xargs")
    if cap is not None:
        new = dict(xargs) if isinstance(xargs, dict) else {}
        new[K_KEY] = cap
        body["vllm_xargs"] = new
        changed = True
    elif isinstance(xargs, dict) and K_KEY in xargs:
        # The pool cannot apply a per-request k: do not send one it would silently ignore.
        rest = {k: v for k, v in xargs.items() if k != K_KEY}
        if rest:
            body["vllm_xargs"] = rest
        else:
            del body["vllm_xargs"]
        changed = True
    if ask_usage:
        options = body.get("stream_options")
        body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
        changed = True
    return changed
