"""Learn what a vLLM endpoint really does (controllers/capabilities.py says what is done with it).

- `/version`: the engine's version; `/v1/models`: the names it serves.
- `/metrics`: whether it drafts at all (its `vllm:spec_decode_*` counters exist) and its drafter's k (the positions
  of the per-position acceptance counter).
- Two probe requests, only when the engine drafts and serves the pool's model: 16 greedy tokens of a copy-heavy
  prompt capped at k=0 (`vllm_xargs.num_speculative_tokens`), then at the engine's max k. The answers say whether
  per-request speculation metrics come back; the drafts say whether the cap was applied, that is whether specgate's
  scheduler plugin is loaded (a stock vLLM ignores the key). Without per-request metrics the drafts are read from
  the engine's draft counter around each probe, and only trusted when nothing else ran meanwhile.

The probes cost the engine two short requests per discovery; their drafts reach the engine's counters like any
request's. Every failure is recorded in `EngineFacts.error`, never raised: an endpoint that cannot be examined is
"unknown", and specgate keeps to its config for it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import httpx
import orjson
from specgate.backends.vllm_metrics import EngineSnapshot, parse_vllm_metrics
from specgate.backends.vllm_response import parse_spec_metrics
from specgate.controllers.capabilities import EngineFacts, Expected, plugin_verdict

from specgate.config import PoolConfig

__all__ = ["PROBE_PROMPT", "discover", "expected"]

# Copy-heavy: the answer repeats the prompt, so prompt-lookup (n-gram) drafters propose, as learnt drafters do.
PROBE_PROMPT = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\ndef add(a, b):\n"
_PROBE_TOKENS = 16


def expected(pool: PoolConfig, tested_versions: tuple[str, ...]) -> Expected:
    spec = pool.speculation
    return Expected(pool.model, spec.method != "none", spec.max_k, spec.per_request_k, tested_versions)


class _Errors:
    """The first thing that could not be learnt, named for the operator."""

    def __init__(self) -> None:
        self.first: str | None = None

    def note(self, what: str, exc: Exception | None = None) -> None:
        if self.first is None:
            self.first = f"{what}: {type(exc).__name__}" if exc is not None else what


async def _json(
    client: httpx.AsyncClient, url: str, headers: Mapping[str, str], timeout_s: float, errors: _Errors
) -> Any:
    try:
        resp = await client.get(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        errors.note(f"GET {url} failed", exc)
        return None
    if resp.status_code != 200:
        errors.note(f"GET {url} answered HTTP {resp.status_code}")
        return None
    try:
        return orjson.loads(resp.content)
    except orjson.JSONDecodeError:
        errors.note(f"GET {url} did not answer JSON")
        return None


async def _snapshot(
    client: httpx.AsyncClient, base: str, headers: Mapping[str, str], timeout_s: float, errors: _Errors
) -> EngineSnapshot | None:
    try:
        resp = await client.get(f"{base}/metrics", headers=headers, timeout=timeout_s)
        resp.raise_for_status()
        return parse_vllm_metrics(resp.text)
    except (httpx.HTTPError, ValueError) as exc:
        errors.note(f"GET {base}/metrics failed", exc)
        return None


def _version(body: Any) -> str | None:
    version = body.get("version") if isinstance(body, dict) else None
    return version if isinstance(version, str) and version else None


def _models(body: Any) -> tuple[str, ...]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return ()
    return tuple(m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str))


def _idle(snap: EngineSnapshot | None) -> bool:
    return snap is not None and snap.running == 0 and snap.waiting == 0


async def _probe(
    client: httpx.AsyncClient,
    base: str,
    model: str,
    k: int,
    headers: Mapping[str, str],
    timeout_s: float,
    errors: _Errors,
) -> tuple[bool | None, int | None]:
    """(per-request metrics came back, drafts of the probe) for one probe capped at `k`."""
    body = {
        "model": model,
        "prompt": PROBE_PROMPT,
        "max_tokens": _PROBE_TOKENS,
        "temperature": 0,
        "ignore_eos": True,
        "vllm_xargs": {"num_speculative_tokens": k},
    }
    before = await _snapshot(client, base, headers, timeout_s, errors)
    try:
        resp = await client.post(f"{base}/v1/completions", json=body, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        errors.note(f"probe request (k={k}) failed", exc)
        return None, None
    if resp.status_code != 200:
        errors.note(f"probe request (k={k}) answered HTTP {resp.status_code}")
        return None, None
    try:
        stats = parse_spec_metrics(orjson.loads(resp.content))
    except orjson.JSONDecodeError:
        errors.note(f"probe request (k={k}) did not answer JSON")
        return None, None
    if stats is not None:
        return True, stats.draft_tokens
    # No per-request metrics: the engine's draft counter around the probe, if nothing else ran meanwhile.
    after = await _snapshot(client, base, headers, timeout_s, errors)
    if not (_idle(before) and _idle(after)) or before is None or after is None:
        return False, None
    if before.draft_tokens is None or after.draft_tokens is None or after.draft_tokens < before.draft_tokens:
        return False, None
    return False, int(after.draft_tokens - before.draft_tokens)


async def discover(
    client: httpx.AsyncClient,
    base: str,
    model: str,
    *,
    probe: bool = True,
    timeout_s: float = 30.0,
    headers: Mapping[str, str] | None = None,
) -> EngineFacts:
    headers = headers or {}
    errors = _Errors()
    version = _version(await _json(client, f"{base}/version", headers, timeout_s, errors))
    models = _models(await _json(client, f"{base}/v1/models", headers, timeout_s, errors))
    snap = await _snapshot(client, base, headers, timeout_s, errors)
    speculation = snap.speculation_configured if snap is not None else None
    max_k = snap.max_k if snap is not None and snap.max_k else None
    per_request: bool | None = None
    plugin: bool | None = None
    if probe and speculation and model in models:
        per_request, capped = await _probe(client, base, model, 0, headers, timeout_s, errors)
        if capped is not None and capped > 0:
            plugin = False  # the cap of 0 was not applied; no need for the second probe
        elif per_request is not None:
            _, full = await _probe(client, base, model, max_k or 16, headers, timeout_s, errors)
            plugin = plugin_verdict(capped, full)
    return EngineFacts("vllm", version, models, speculation, max_k, per_request, plugin, errors.first, time.time())
