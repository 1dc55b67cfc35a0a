"""A real OTLP/HTTP traces receiver for tests (stdlib server in a thread): decodes the protobuf export requests
vLLM sends when started with `--otlp-traces-endpoint` and keeps (trace id, span name, attributes)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class SinkSpan:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    attributes: dict[str, Any]


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


@dataclass
class OtlpSink:
    port: int = 0
    spans: list[SinkSpan] = field(default_factory=list)

    def __post_init__(self) -> None:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("content-length", "0")))
                request = ExportTraceServiceRequest()
                request.ParseFromString(data)
                for resource_spans in request.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            attrs = {a.key: _value(a.value) for a in span.attributes}
                            sink.spans.append(
                                SinkSpan(
                                    span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(), span.name, attrs
                                )
                            )
                body = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def traces_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def wait_for_trace(self, trace_id: str, timeout_s: float = 30.0) -> list[SinkSpan]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [s for s in self.spans if s.trace_id == trace_id]
            if found:
                return found
            time.sleep(0.2)
        return []

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
