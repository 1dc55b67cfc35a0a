"""OpenTelemetry traces: a SERVER span per request and a CLIENT span for the upstream call, with the trace context
sent on to vLLM in `traceparent` (vLLM started with `--otlp-traces-endpoint` continues the trace).

Attributes follow the OpenTelemetry GenAI semantic conventions **v1.37.0** (status: development): span name
`{gen_ai.operation.name} {gen_ai.request.model}`, `gen_ai.operation.name` (`chat` / `text_completion`),
`gen_ai.provider.name` = `vllm`, `gen_ai.request.*`, `gen_ai.response.id`, `gen_ai.response.finish_reasons`,
`gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`; plus specgate's own `specgate.route`, `specgate.pool`,
`specgate.spec.k`, `specgate.spec.explored`, `specgate.spec.draft_tokens`, `specgate.spec.accepted_tokens`.
Prompts and completions are never put on spans.

With `tracing.exporter: none` (the default) nothing is created per request; the client's own `traceparent` and
`tracestate` still pass through to the engine unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping
from typing import Any

from opentelemetry.propagators.textmap import default_getter, default_setter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from specgate.controllers.observations import Observation

from specgate.config import TracingConfig

__all__ = ["SEMCONV_VERSION", "Tracing"]

SEMCONV_VERSION = "1.37.0"
log = logging.getLogger("specgate.tracing")
_PROPAGATOR = TraceContextTextMapPropagator()
_OPERATIONS = {"chat": "chat", "completions": "text_completion"}


def _exporter(config: TracingConfig) -> SpanExporter:
    if config.exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if config.exporter == "otlp-grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=config.endpoint, insecure=config.endpoint.startswith("http://"))
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=config.endpoint)


class Tracing:
    def __init__(self, config: TracingConfig, exporter: SpanExporter | None = None) -> None:
        """`exporter` replaces the configured one (tests pass the SDK's in-memory exporter)."""
        self.enabled = exporter is not None or config.exporter != "none"
        self._provider: TracerProvider | None = None
        if not self.enabled:
            return
        sampler = ParentBased(TraceIdRatioBased(config.sample_ratio))
        provider = TracerProvider(resource=Resource.create({"service.name": config.service_name}), sampler=sampler)
        if exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(exporter))
        else:
            provider.add_span_processor(BatchSpanProcessor(_exporter(config)))
        self._provider = provider
        self._tracer = provider.get_tracer("specgate", schema_url=f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}")

    def server_span(self, method: str, path: str, headers: Mapping[str, str]) -> Span | None:
        if not self.enabled:
            return None
        parent = _PROPAGATOR.extract(headers, getter=default_getter)
        return self._tracer.start_span(
            f"{method} {path}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": path},
        )

    def client_span(
        self, server: Span | None, api: str, body: Mapping[str, Any], route: str, pool: str, k: int, explored: bool
    ) -> Span | None:
        if server is None:
            return None
        operation = _OPERATIONS.get(api, api)
        model = body.get("model")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": "vllm",
            "gen_ai.request.stream": bool(body.get("stream")),
            "specgate.route": route,
            "specgate.pool": pool,
            "specgate.spec.k": k,
            "specgate.spec.explored": explored,
        }
        if isinstance(model, str):
            attributes["gen_ai.request.model"] = model
        for key, attr in (
            ("max_tokens", "gen_ai.request.max_tokens"),
            ("max_completion_tokens", "gen_ai.request.max_tokens"),
            ("temperature", "gen_ai.request.temperature"),
            ("top_p", "gen_ai.request.top_p"),
            ("seed", "gen_ai.request.seed"),
        ):
            value = body.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                attributes[attr] = value
        server.set_attribute("specgate.route", route)
        return self._tracer.start_span(
            f"{operation} {model}" if isinstance(model, str) else operation,
            context=set_span_in_context(server),
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )

    @staticmethod
    def inject(span: Span | None, headers: MutableMapping[str, str]) -> None:
        """Put the client span's context into the upstream headers (replacing the client's own)."""
        if span is not None:
            _PROPAGATOR.inject(headers, context=set_span_in_context(span), setter=default_setter)

    @staticmethod
    def end_client(
        span: Span | None,
        endpoint: str = "",
        obs: Observation | None = None,
        response: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        if span is None:
            return
        if endpoint:
            span.set_attribute("server.address", endpoint)
        if obs is not None:
            span.set_attribute("gen_ai.usage.input_tokens", obs.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", obs.completion_tokens)
            if obs.spec is not None:
                span.set_attribute("specgate.spec.draft_tokens", obs.spec.draft_tokens)
                span.set_attribute("specgate.spec.accepted_tokens", obs.spec.accepted_tokens)
        if response is not None:
            rid = response.get("id")
            if isinstance(rid, str):
                span.set_attribute("gen_ai.response.id", rid)
            choices = response.get("choices")
            if isinstance(choices, list):
                reasons = [c.get("finish_reason") for c in choices if isinstance(c, dict)]
                span.set_attribute("gen_ai.response.finish_reasons", [r for r in reasons if isinstance(r, str)])
        if error:
            span.set_status(Status(StatusCode.ERROR, error))
            span.set_attribute("error.type", error)
        span.end()

    @staticmethod
    def end_server(span: Span | None, status: int) -> None:
        if span is None:
            return
        span.set_attribute("http.response.status_code", status)
        if status >= 500:
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    def shutdown(self) -> None:
        if self._provider is not None:
            self._provider.shutdown()
