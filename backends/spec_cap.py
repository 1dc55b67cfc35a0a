"""Reading a request's speculation limits from `SamplingParams.extra_args` (vLLM's `vllm_xargs`): a fixed cap
(`num_speculative_tokens`) and a schedule of k over the engine's batch size (`specgate_k_schedule`).

Pure and vLLM-free so it is tested directly; the scheduler plugin calls it for every request at every step. The
schedule format itself is `specgate.controllers.k_schedule`, shared with the controller that writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specgate.controllers.k_schedule import k_at, parse

__all__ = ["ALLOW_UNTESTED_ENV", "K_KEY", "SCHEDULE_KEY", "TESTED_VLLM", "read_cap", "read_limit", "untested_vllm"]

K_KEY = "num_speculative_tokens"
# vLLM releases the plugin was run against (docs/engines.md). Here, not in the plugin module, so that the gateway
# (which never imports vLLM) can name an untested engine version too.
TESTED_VLLM = ("0.32.0",)
ALLOW_UNTESTED_ENV = "SPECGATE_ALLOW_UNTESTED_VLLM"


def untested_vllm(version: str) -> bool:
    """A version outside TESTED_VLLM (a build's local part, as in 0.32.0+cpu, is ignored)."""
    return version.split("+", 1)[0] not in TESTED_VLLM


def read_cap(extra_args: Mapping[str, Any] | None, max_k: int) -> tuple[int | None, bool]:
    """(cap, malformed). cap None = no cap asked (engine's own k). Values above max_k are clamped.

    Accepted: a non-negative int, or a float / numeric string holding one (JSON numbers and
    `vllm_xargs` strings both reach here). Anything else is malformed: ignored, never raised.
    """
    if not extra_args or K_KEY not in extra_args:
        return None, False
    value = extra_args[K_KEY]
    if isinstance(value, bool):
        return None, True
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None, True
    if isinstance(value, float):
        if not value.is_integer():
            return None, True
        value = int(value)
    if not isinstance(value, int) or value < 0:
        return None, True
    return min(value, max_k), False


SCHEDULE_KEY = "specgate_k_schedule"


def read_limit(extra_args: Mapping[str, Any] | None, max_k: int, batch: int) -> tuple[int | None, bool]:
    """(k, malformed) for a request in a step of `batch` requests: the smaller of its fixed cap and its schedule's
    k at that batch size, clamped to `max_k`; None = no limit asked. A malformed part is ignored (and reported)."""
    cap, malformed = read_cap(extra_args, max_k)
    if not extra_args or SCHEDULE_KEY not in extra_args:
        return cap, malformed
    value = extra_args[SCHEDULE_KEY]
    schedule = parse(value) if isinstance(value, str) else None
    if schedule is None:
        return cap, True
    k = min(k_at(schedule, batch), max_k)
    return (k if cap is None else min(cap, k)), malformed
