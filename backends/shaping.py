"""Shape an OpenAI request body for a vLLM pool: the per-request k and the usage the gateway needs."""

from __future__ import annotations

from typing import Any

from specgate.backends.spec_cap import K_KEY, SCHEDULE_KEY, read_cap

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


def shape_request(body: dict[str, Any], *, cap: int | None, ask_usage: bool, schedule: str | None = None) -> bool:
    """Set (or remove) the per-request k and the k schedule, and ask for the final usage chunk. Returns True if
    changed.

    A schedule (`specgate_k_schedule`, backends/spec_cap.py) is the gateway's to send: one a client put in
    `vllm_xargs` is removed, always (it would steer the engine around the route's bounds, pins and kill switch).
    Other `vllm_xargs` keys of the client pass through untouched.
    """
    changed = False
    xargs = body.get("vllm_xargs")
    new = dict(xargs) if isinstance(xargs, dict) else {}
    if SCHEDULE_KEY in new:
        del new[SCHEDULE_KEY]
        changed = True
    if schedule is not None:
        new[SCHEDULE_KEY] = schedule
        changed = True
    if cap is not None:
        new[K_KEY] = cap
        changed = True
    elif K_KEY in new:
        # The pool cannot apply a per-request k (or the schedule says it): do not send one it would ignore.
        del new[K_KEY]
        changed = True
    if changed:
        if new:
            body["vllm_xargs"] = new
        else:
            body.pop("vllm_xargs", None)
    if ask_usage:
        options = body.get("stream_options")
        body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
        changed = True
    return changed
