"""Observation capture from streams and bodies, without an engine (synthetic vLLM-shaped events)."""

from __future__ import annotations

import orjson
from specgate.backends.pool import Pool
from specgate.controllers.observations import Observation
from specgate.runtime.dispatch import Plan
from specgate.runtime.observe import StreamObserver, observe_body

from specgate.config import PoolConfig
from specgate.sse import encode_event

POOL = Pool(PoolConfig(name="p", model="m", endpoints=["http://127.0.0.1:9"]), [], 6.0)


def chunk(text: str) -> bytes:
    return encode_event(orjson.dumps({"id": "x", "choices": [{"index": 0, "text": text}]}))


def usage(metrics: dict | None) -> bytes:
    body: dict = {"id": "x", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 12}}
    if metrics is not None:
        body["metrics"] = metrics
    return encode_event(orjson.dumps(body).replace(b'"choices": []', b'"choices":[]'))


def relay(items: list[bytes], client_usage: bool) -> tuple[list[bytes], list[Observation]]:
    """Feed events one batch each; returns what would be sent on (per batch) and the observation."""
    seen: list[Observation] = []
    plan = Plan("code", POOL, 3, 3, client_usage=client_usage)
    obs = StreamObserver(plan, "e", 2.0, 0.0, False, 1, seen.append)
    out = [sent for item in items if (sent := obs.take([item]))]
    assert seen == []
    obs.finish()
    return out, seen


def test_events_that_arrive_together_are_sent_together() -> None:
    seen: list[Observation] = []
    obs = StreamObserver(Plan("code", POOL, 3, 3, client_usage=False), "e", 2.0, 0.0, False, 1, seen.append)
    done = encode_event(b"[DONE]")
    assert obs.take([chunk("a"), chunk("b"), usage(SPEC), done]) == chunk("a") + chunk("b") + done
    obs.finish()
    assert seen[0].spec is not None and seen[0].completion_tokens == 12


SPEC = {
    "speculative_decoding": {
        "num_draft_tokens": 9,
        "num_accepted_draft_tokens": 6,
        "num_spec_steps": 3,
        "acceptance_histogram": [0, 1, 1, 1],
    }
}


def test_engine_metrics_from_the_usage_chunk_which_the_client_did_not_ask_for() -> None:
    out, (obs,) = relay([chunk("a"), chunk("bcd"), usage(SPEC), encode_event(b"[DONE]")], client_usage=False)
    assert out == [chunk("a"), chunk("bcd"), encode_event(b"[DONE]")]  # usage chunk dropped, bytes untouched
    assert obs.source == "engine" and obs.spec is not None and obs.spec.accepted_tokens == 6
    assert obs.completion_tokens == 12 and obs.k_applied == 3 and obs.batch_at_dispatch == 2.0


def test_usage_kept_but_metrics_stripped_when_client_asked() -> None:
    out, _ = relay([chunk("a"), usage(SPEC), encode_event(b"[DONE]")], client_usage=True)
    kept = orjson.loads(out[1][6:-2])
    assert kept["usage"]["completion_tokens"] == 12 and "metrics" not in kept


def test_no_engine_metrics_means_no_acceptance_evidence() -> None:
    # An engine without per-request metrics: the observation says so (source "none", no spec) and still carries
    # usage and timing; acceptance then has to come from the engine's counters.
    _, (obs,) = relay(
        [chunk("a"), chunk("b"), chunk("c"), chunk("d"), usage(None), encode_event(b"[DONE]")], client_usage=False
    )
    assert obs.source == "none" and obs.spec is None and obs.completion_tokens == 12


def test_body_observation_strips_metrics() -> None:
    body = orjson.dumps(
        {"choices": [{"text": "x"}], "usage": {"prompt_tokens": 1, "completion_tokens": 4}, "metrics": SPEC}
    )
    plan = Plan("code", POOL, 2, 2, client_usage=True)
    out, obs = observe_body(body, plan, "e", 0.0, expose_metrics=False, n=1, e2e_s=0.5)
    assert "metrics" not in orjson.loads(out)
    assert obs is not None and obs.source == "engine" and obs.e2e_s == 0.5
    _, none = observe_body(b"not json", plan, "e", 0.0, expose_metrics=False, n=1)
    assert none is None
