"""SGLang engines: their load and speculation metrics, and what discovery can learn of them.

What SGLang offers a gateway (read from sglang 0.5.5's source; no SGLang server runs here: the CPU build needs its
kernels compiled from source, docs/engines.md):
- the OpenAI API (`/v1/completions`, `/v1/chat/completions`), relayed as for vLLM; its answers carry no
  per-request speculation figures (only the native `/generate` API's `meta_info` does);
- `/metrics` (`--enable-metrics`): gauges `sglang:num_running_reqs`, `sglang:num_queue_reqs`, `sglang:token_usage`
  (share of the KV pool), `sglang:spec_accept_length` (mean tokens per verify step, the bonus token included),
  refreshed every `decode_log_interval` decode steps, with labels `model_name`, `engine_type`, `tp_rank`,
  `pp_rank` (and `dp_rank` with data parallelism): one series per rank of the same numbers for tensor/pipeline
  ranks, so only rank 0 of those is read, and data-parallel ranks are added up;
- `/server_info` (`/get_server_info` before 2026): the server's arguments (`speculative_algorithm`,
  `speculative_num_steps`, ...) and `version`.
No per-request k: an SGLang pool is a stock engine (pool tiers), and `--speculative-adaptive` lets it choose its
own steps by batch size, which specgate does not override (docs/engines.md says how the two combine).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import httpx
import orjson
from prometheus_client.parser import text_string_to_metric_families
from specgate.backends.vllm_metrics import EngineSnapshot
from specgate.controllers.capabilities import EngineFacts

__all__ = ["SGLANG_SERIES", "discover_sglang", "parse_sglang_metrics"]

_GAUGES = {
    "sglang:num_running_reqs": "running",
    "sglang:num_queue_reqs": "waiting",
}
_TOKEN_USAGE = "sglang:token_usage"
_ACCEPT_LENGTH = "sglang:spec_accept_length"
SGLANG_SERIES = frozenset({*_GAUGES, _TOKEN_USAGE, _ACCEPT_LENGTH})


def _first_rank(labels: Mapping[str, str]) -> bool:
    return labels.get("tp_rank", "0") == "0" and labels.get("pp_rank", "0") == "0"


def parse_sglang_metrics(text: str) -> EngineSnapshot:
    """Raises ValueError on text that is not Prometheus exposition format."""
    snap = EngineSnapshot()
    usage: list[float] = []
    accept: list[float] = []
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("sglang:"):
            continue
        for sample in family.samples:
            if not _first_rank(sample.labels):
                continue
            name = sample.name
            if name in _GAUGES:
                attr = _GAUGES[name]
                setattr(snap, attr, getattr(snap, attr) + sample.value)
            elif name == _TOKEN_USAGE:
                usage.append(sample.value)
            elif name == _ACCEPT_LENGTH:
                accept.append(sample.value)
    if usage:
        snap.kv_usage = max(usage)  # the fullest data-parallel rank decides whether a request fits
    if accept:
        snap.accept_length = sum(accept) / len(accept)
    return snap


async def _server_info(
    client: httpx.AsyncClient, base: str, headers: Mapping[str, str], timeout_s: float
) -> tuple[dict[str, Any] | None, str | None]:
    error = None
    for path in ("/server_info", "/get_server_info"):
        try:
            resp = await client.get(f"{base}{path}", headers=headers, timeout=timeout_s)
        except httpx.HTTPError as exc:
            error = error or f"GET {base}{path} failed: {type(exc).__name__}"
            continue
        if resp.status_code != 200:
            error = error or f"GET {base}{path} answered HTTP {resp.status_code}"
            continue
        try:
            data = orjson.loads(resp.content)
        except orjson.JSONDecodeError:
            error = error or f"GET {base}{path} did not answer JSON"
            continue
        if isinstance(data, dict):
            return data, None
    return None, error


async def _models(
    client: httpx.AsyncClient, base: str, headers: Mapping[str, str], timeout_s: float
) -> tuple[tuple[str, ...], str | None]:
    try:
        resp = await client.get(f"{base}/v1/models", headers=headers, timeout=timeout_s)
        data = orjson.loads(resp.content) if resp.status_code == 200 else None
    except (httpx.HTTPError, orjson.JSONDecodeError) as exc:
        return (), f"GET {base}/v1/models failed: {type(exc).__name__}"
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return (), f"GET {base}/v1/models: no model list"
    return tuple(m["id"] for m in items if isinstance(m, dict) and isinstance(m.get("id"), str)), None


async def discover_sglang(
    client: httpx.AsyncClient, base: str, *, timeout_s: float = 30.0, headers: Mapping[str, str] | None = None
) -> EngineFacts:
    """Version, models, speculation and its steps from the server's own description. No probes: SGLang takes no
    per-request k (there is no plugin to verify) and its OpenAI answers carry no per-request speculation figures."""
    headers = headers or {}
    info, error = await _server_info(client, base, headers, timeout_s)
    models, models_error = await _models(client, base, headers, timeout_s)
    speculation: bool | None = None
    max_k: int | None = None
    version: str | None = None
    if info is not None:
        algorithm = info.get("speculative_algorithm")
        speculation = isinstance(algorithm, str) and algorithm.upper() not in ("", "NONE")
        steps = info.get("speculative_num_steps")
        max_k = steps if speculation and isinstance(steps, int) and steps > 0 else None
        raw_version = info.get("version")
        version = raw_version if isinstance(raw_version, str) else None
    return EngineFacts(
        "sglang",
        version,
        models,
        speculation,
        max_k,
        per_request_metrics=False if info is not None else None,
        plugin=False if info is not None else None,
        error=error or models_error,
        checked_at=time.time(),
    )
