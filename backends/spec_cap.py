"""Reading a request's speculation cap from `SamplingParams.extra_args` (vLLM's `vllm_xargs`).

Pure and vLLM-free so it is tested directly; the scheduler plugin calls it on every draft update.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["K_KEY", "read_cap"]

K_KEY = "num_speculative_tokens"


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
