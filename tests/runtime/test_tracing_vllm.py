"""OpenTelemetry on real vLLM: spans captured with the SDK's in-memory exporter carry the GenAI and specgate
attributes, and the trace continues inside vLLM (its own span arrives at an OTLP receiver with our parent)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from specgate.backends.launcher import EngineSpec
from specgate.runtime.tracing import SEMCONV_VERSION

from tests.conftest import MODEL, GatewayServer, engine_pool
from tests.otlp_sink import OtlpSink

pytestmark = pytest.mark.slow

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_PARENT = "00f067aa0ba902b7"
COPY = "import os\nimport sys\nimport os\nimport sys\nimport os\nimport"


def by_kind(exporter: InMemorySpanExporter, kind: SpanKind) -> list:
    return [s for s in exporter.get_finished_spans() if s.kind == kind]


@pytest.mark.parametrize("stream", [False, True])
def test_spans_carry_genai_attributes_and_reach_vllm(
    engine: EngineSpec, otlp_sink: OtlpSink, start_gateway: Callable[..., GatewayServer], stream: bool
) -> None:
    exporter = InMemorySpanExporter()
    gw = start_gateway([engine_pool(engine)], span_exporter=exporter)
    body = {"model": MODEL, "prompt": COPY, "max_tokens": 24, "temperature": 0, "stream": stream}
    headers = {"traceparent": f"00-{CLIENT_TRACE[:-4]}{'0001' if stream else '0000'}-{CLIENT_PARENT}-01"}
    with httpx.Client(timeout=60) as http:
        r = http.post(f"{gw.url}/v1/completions", json=body, headers=headers)
        assert r.status_code == 200
    gw.stop()  # ends the streamed spans for sure and flushes
    (server,) = by_kind(exporter, SpanKind.SERVER)
    (client,) = by_kind(exporter, SpanKind.CLIENT)
    trace_id = format(server.context.trace_id, "032x")
    assert trace_id == headers["traceparent"].split("-")[1], "the client's trace is continued"
    assert format(server.parent.span_id, "016x") == CLIENT_PARENT
    assert client.parent.span_id == server.context.span_id and client.context.trace_id == server.context.trace_id
    assert server.name == "POST /v1/completions" and server.attributes["http.response.status_code"] == 200
    assert client.name == f"text_completion {MODEL}"
    a = client.attributes
    assert a["gen_ai.operation.name"] == "text_completion" and a["gen_ai.provider.name"] == "vllm"
    assert a["gen_ai.request.model"] == MODEL and a["gen_ai.request.max_tokens"] == 24
    assert a["gen_ai.request.temperature"] == 0 and a["gen_ai.request.stream"] is stream
    assert a["gen_ai.usage.output_tokens"] == 24 and a["gen_ai.usage.input_tokens"] > 0
    assert a["specgate.route"] == "default" and a["specgate.pool"] == "cpu" and a["specgate.spec.k"] >= 0
    assert a["specgate.spec.accepted_tokens"] >= 0 and a["server.address"] == engine.url
    if not stream:
        assert a["gen_ai.response.id"] and list(a["gen_ai.response.finish_reasons"]) == ["length"]
    assert client.instrumentation_scope.schema_url.endswith(SEMCONV_VERSION)
    # vLLM's own span: same trace, child of our client span.
    spans = otlp_sink.wait_for_trace(trace_id)
    assert spans, "vLLM exported no span for the gateway's trace"
    assert format(client.context.span_id, "016x") in {s.parent_span_id for s in spans}


def test_without_tracing_the_clients_traceparent_still_reaches_vllm(
    engine: EngineSpec, otlp_sink: OtlpSink, start_gateway: Callable[..., GatewayServer]
) -> None:
    gw = start_gateway([engine_pool(engine)])
    assert not gw.gateway.tracing.enabled
    trace = "5cf92f3577b34da6a3ce929d0e0e4799"
    body = {"model": MODEL, "prompt": COPY, "max_tokens": 8, "temperature": 0}
    r = httpx.post(
        f"{gw.url}/v1/completions", json=body, headers={"traceparent": f"00-{trace}-{CLIENT_PARENT}-01"}, timeout=60
    )
    assert r.status_code == 200
    spans = otlp_sink.wait_for_trace(trace)
    assert spans and spans[0].parent_span_id == CLIENT_PARENT
