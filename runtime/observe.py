"""Turn an engine's answer into an Observation, and keep engine-internal fields from the client.

Non-streaming: the JSON answer is parsed once; `metrics` (vLLM's per-request numbers) is removed unless
the operator exposes it. Streaming: ordinary chunks are passed through as bytes, untouched; only the
final usage chunk is parsed, then dropped if the client did not ask for usage, or stripped of `metrics`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson
from specgate.backends.vllm_response import is_usage_event, parse_spec_metrics, parse_usage
from specgate.controllers.observations import Observation, Source, SpecStats
from specgate.runtime.dispatch import Plan

from specgate.sse import DONE, encode_event, event_data

__all__ = ["StreamObserver", "observe_body"]


def observe_body(
    body: bytes, plan: Plan, endpoint: str, batch: float, *, expose_metrics: bool, n: int, e2e_s: float | None = None
) -> tuple[bytes, Observation | None]:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body, None
    if not isinstance(obj, dict):
        return body, None
    spec = parse_spec_metrics(obj) if n == 1 else None
    prompt, completion = parse_usage(obj)
    if "metrics" in obj and not expose_metrics:
        del obj["metrics"]
        body = orjson.dumps(obj)
    obs = Observation(
        route=plan.route,
        pool=plan.pool.name,
        endpoint=endpoint,
        k_applied=plan.k,
        source="engine" if spec else "none",
        spec=spec,
        prompt_tokens=prompt,
        completion_tokens=completion,
        ttft_s=None,
        decode_s=None,
        batch_at_dispatch=batch,
        stream=False,
        e2e_s=e2e_s,
        scheduled=plan.schedule is not None,
    )
    return body, obs


@dataclass(slots=True)
class StreamObserver:
    plan: Plan
    endpoint: str
    batch: float
    started: float
    expose_metrics: bool
    n: int
    on_done: Callable[[Observation], None]
    chat: bool = False
    first_at: float | None = None
    last_at: float | None = None
    spec: SpecStats | None = None
    usage: tuple[int, int] = (0, 0)
    _saw_usage: bool = field(default=False)

    def take(self, events: list[bytes]) -> bytes:
        """The bytes to send on for events that arrived together (in order, usage chunk handled)."""
        out = [kept for event in events if (kept := self._inspect(event)) is not None]
        return out[0] if len(out) == 1 else b"".join(out)

    def finish(self) -> None:
        """The stream is over (whatever the reason): hand on what was observed."""
        self.on_done(self._observation())

    def _inspect(self, event: bytes) -> bytes | None:
        data = event_data(event)
        if data is None or data == DONE:
            return event
        if is_usage_event(data):
            return self._usage_event(data, event)
        now = time.monotonic()
        if self.first_at is None:
            self.first_at = now
        self.last_at = now
        return event

    def _usage_event(self, data: bytes, event: bytes) -> bytes | None:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            return event
        self._saw_usage = True
        self.spec = parse_spec_metrics(obj) if self.n == 1 else None
        self.usage = parse_usage(obj)
        if not self.plan.client_usage:
            return None
        if "metrics" in obj and not self.expose_metrics:
            del obj["metrics"]
            return encode_event(orjson.dumps(obj))
        return event

    def _observation(self) -> Observation:
        prompt, completion = self.usage
        source: Source = "engine" if self.spec is not None else "none"
        decode = self.last_at - self.first_at if self.first_at and self.last_at else None
        return Observation(
            route=self.plan.route,
            pool=self.plan.pool.name,
            endpoint=self.endpoint,
            k_applied=self.plan.k,
            source=source,
            spec=self.spec,
            prompt_tokens=prompt,
            completion_tokens=completion,
            ttft_s=(self.first_at - self.started) if self.first_at else None,
            decode_s=decode,
            batch_at_dispatch=self.batch,
            stream=True,
            e2e_s=(self.last_at - self.started) if self.last_at else None,
            scheduled=self.plan.schedule is not None,
        )
