"""Shared fixtures: a real CPU vLLM engine (once per session) and gateways on free loopback ports."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import uvicorn
from opentelemetry.sdk.trace.export import SpanExporter
from specgate.backends.launcher import EngineProcess, EngineSpec
from specgate.backends.testbed import DRAFTER_DIR
from specgate.gateway.app import create_app

from specgate.config import GatewayConfig, validate_config
from tests.otlp_sink import OtlpSink

MODEL = "specgate-tiny"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _engine_fixture(tmp_path_factory: pytest.TempPathFactory, reuse_env: str, **spec_args: Any) -> Iterator[EngineSpec]:
    """Start a real vLLM server for the session, or reuse the one at $reuse_env (same flags) while developing."""
    reuse = os.environ.get(reuse_env)
    if reuse:
        parts = urlsplit(reuse)
        yield EngineSpec(host=parts.hostname or "127.0.0.1", port=parts.port or 80, **spec_args)
        return
    spec = EngineSpec(port=free_port(), **spec_args)
    log = tmp_path_factory.mktemp("engine") / "vllm.log"
    proc = EngineProcess(spec, log)
    proc.start()
    try:
        proc.wait_healthy(420)
    except Exception:
        proc.stop()
        print(Path(log).read_text()[-5000:])
        raise
    yield spec
    proc.stop()


@pytest.fixture(scope="session")
def otlp_sink() -> Iterator[OtlpSink]:
    """Where the session engine sends its OpenTelemetry spans (OTLP/HTTP). A reused engine must have been
    started with `--otlp-traces-endpoint http://127.0.0.1:$SPECGATE_TEST_OTLP_PORT/v1/traces`."""
    sink = OtlpSink(port=int(os.environ.get("SPECGATE_TEST_OTLP_PORT", "0")))
    yield sink
    sink.close()


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory, otlp_sink: OtlpSink) -> Iterator[EngineSpec]:
    """A real vLLM server: tiny model, ngram speculation (max k 4), specgate's scheduler plugin, exporting its
    traces to `otlp_sink`.

    SPECGATE_TEST_ENGINE_URL=http://127.0.0.1:8100 reuses one started by `specgate engine up`;
    CI always starts its own.
    """
    yield from _engine_fixture(tmp_path_factory, "SPECGATE_TEST_ENGINE_URL", otlp_traces_endpoint=otlp_sink.traces_url)


@pytest.fixture(scope="session")
def plain_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineSpec]:
    """A second real vLLM server, without speculation (pool tiers).

    SPECGATE_TEST_PLAIN_ENGINE_URL reuses one started with `specgate engine up --speculation none`.
    """
    yield from _engine_fixture(tmp_path_factory, "SPECGATE_TEST_PLAIN_ENGINE_URL", speculation="none", max_k=0)


@pytest.fixture(scope="session")
def draft_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineSpec]:
    """A real vLLM server with a draft model: the trained drafter (models/specgate-tiny-drafter, distilled from the
    tiny model on another mix) drafts for the tiny model. vLLM's CPU platform turns async scheduling off, so it runs
    the plugin's synchronous class; the async class is tested on vLLM's own AsyncScheduler code in
    tests/backends/test_vllm_scheduler.py.

    SPECGATE_TEST_DRAFT_ENGINE_URL reuses one started with `specgate engine up --speculation draft_model`.
    """
    yield from _engine_fixture(
        tmp_path_factory, "SPECGATE_TEST_DRAFT_ENGINE_URL", speculation="draft_model", draft_model_dir=DRAFTER_DIR
    )


# Module-scoped, unlike the engines many modules share: each vLLM server holds ~3 GB, and CI's machine (24 GiB) ran
# out of memory (the kernel killed engine workers mid-run) with every engine kept for the whole session.
@pytest.fixture(scope="module")
def eagle3_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineSpec]:
    """A real vLLM server started from a Red Hat Speculators EAGLE-3 checkpoint made for the tiny model
    (backends/testbed.py): vLLM takes the verifier (the tiny model) and k = 3 from the checkpoint. The head is
    untrained: it drafts, and nothing is accepted.

    SPECGATE_TEST_EAGLE3_ENGINE_URL reuses one started with `specgate engine up --testbed eagle3 --served-name
    specgate-tiny`.
    """
    from specgate.backends.testbed import ensure_eagle3_checkpoint

    yield from _engine_fixture(
        tmp_path_factory,
        "SPECGATE_TEST_EAGLE3_ENGINE_URL",
        model_dir=ensure_eagle3_checkpoint(),
        speculation="speculators",
        max_k=3,
    )


@pytest.fixture(scope="module")  # one module uses it; see eagle3_engine
def embeddings_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineSpec]:
    """A real vLLM server answering `/v1/embeddings` from the tiny model (`--runner pooling --convert embed`), for the
    semantic cache's embeddings endpoint. SPECGATE_TEST_EMBEDDINGS_ENGINE_URL reuses one started with those flags."""
    yield from _engine_fixture(
        tmp_path_factory,
        "SPECGATE_TEST_EMBEDDINGS_ENGINE_URL",
        speculation="none",
        extra_args=("--runner", "pooling", "--convert", "embed"),
    )


class GatewayServer:
    def __init__(self, config: GatewayConfig, span_exporter: SpanExporter | None = None, **app_kwargs: Any) -> None:
        self.config = config
        self.app = create_app(config, span_exporter, **app_kwargs)
        self.server = uvicorn.Server(
            uvicorn.Config(
                self.app,
                host=config.server.host,
                port=config.server.port,
                log_config=None,
                access_log=False,
                loop="asyncio",
                lifespan="on",
            )
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.config.server.host}:{self.config.server.port}"

    @property
    def gateway(self) -> Any:
        return self.app.state.gateway

    def start(self) -> GatewayServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("gateway did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture
def start_gateway() -> Iterator[Callable[..., GatewayServer]]:
    started: list[GatewayServer] = []

    def start(
        pools: list[dict[str, Any]], span_exporter: SpanExporter | None = None, **overrides: Any
    ) -> GatewayServer:
        # The controller drains the observation sink each tick; tests that read the sink themselves get a
        # tick too long to race them, and controller tests pass their own `controller` block.
        # Discovery without its probe requests: a probe's tokens would land in the counters tests measure (an
        # engine's generated tokens after a client left). tests/backends/test_capabilities_vllm.py turns them on.
        data: dict[str, Any] = {
            "server": {"port": free_port()},
            "pools": pools,
            "controller": {"tick_s": 3600},
            "discovery": {"probe": False},
        }
        for key, value in overrides.items():
            data[key] = value if key != "server" else {**data["server"], **value}
        server = GatewayServer(validate_config(data), span_exporter).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def engine_pool(engine: EngineSpec, *extra_urls: str, name: str = "cpu") -> dict[str, Any]:
    return {
        "name": name,
        "model": MODEL,
        "endpoints": [*extra_urls, engine.url],
        "speculation": {"method": "ngram", "max_k": engine.max_k, "per_request_k": True},
    }


@pytest.fixture
def gateway(engine: EngineSpec, start_gateway: Callable[..., GatewayServer]) -> GatewayServer:
    return start_gateway([engine_pool(engine)])


def engine_gauge(url: str, name: str) -> float:
    from specgate.backends.vllm_metrics import parse_vllm_metrics

    snap = parse_vllm_metrics(httpx.get(f"{url}/metrics", timeout=5).text)
    return float(getattr(snap, name))


def run(coro: Any) -> Any:
    return asyncio.run(coro)
