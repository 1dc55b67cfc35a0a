"""Alert delivery against real HTTP receivers: formats, Standard Webhooks signatures, retries, drops."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import socket
import time
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from specgate.backends.webhooks import Alert, render, sign, verify
from specgate.runtime.alerts import AlertDispatcher
from specgate.runtime.metrics import GatewayMetrics

from specgate.config import AlertsConfig, ConfigError, ReceiverConfig, validate_config
from tests.receiver import WebhookReceiver

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    r = WebhookReceiver()
    yield r
    r.close()


def alert(status: str = "firing") -> Alert:
    a = Alert("SpecgateRouteAcceptanceDrift", {"route": "code", "kind": "shift"}, {"summary": "s"}, "firing", 1e9)
    return a if status == "firing" else a.resolved(1e9 + 60)


def config(url: str, **kw: object) -> AlertsConfig:
    receiver = {"name": "ops", "url": url, "secret": SECRET, **kw.pop("receiver", {})}  # type: ignore[dict-item]  # receiver overrides as a loose dict
    return AlertsConfig.model_validate(
        {"receivers": [receiver], "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "max_attempts": 4, **kw}
    )


def value(metrics: GatewayMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def deliver(cfg: AlertsConfig, *alerts: Alert) -> GatewayMetrics:
    metrics = GatewayMetrics(CollectorRegistry())
    dispatcher = AlertDispatcher(cfg, metrics)
    await dispatcher.start()
    for a in alerts:
        dispatcher.publish(a)
    await dispatcher.stop(grace_s=10)
    return metrics


def own_signature(msg_id: str, timestamp: str, body: bytes) -> str:
    # Independent of gateway.alerts: the Standard Webhooks recipe, written out.
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    return (
        "v1,"
        + base64.b64encode(hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()).decode()
    )


def test_signed_alertmanager_payload_then_resolved(receiver: WebhookReceiver) -> None:
    metrics = asyncio.run(deliver(config(receiver.url + "/hook"), alert(), alert("resolved")))
    firing, resolved = receiver.wait_for(2)
    for got in (firing, resolved):
        h = got.headers
        assert got.path == "/hook" and h["content-type"] == "application/json"
        assert h["webhook-id"].startswith("msg_") and abs(int(h["webhook-timestamp"]) - time.time()) < 30
        assert h["webhook-signature"] == own_signature(h["webhook-id"], h["webhook-timestamp"], got.body)
        assert verify(SECRET, h, got.body)
        assert not verify(SECRET, h, got.body + b" ")
    body = firing.json()
    assert body["version"] == "4" and body["status"] == "firing" and body["receiver"] == "ops"
    assert body["groupLabels"] == {"alertname": "SpecgateRouteAcceptanceDrift", "route": "code"}
    (a,) = body["alerts"]
    assert a["labels"]["alertname"] == "SpecgateRouteAcceptanceDrift" and a["labels"]["route"] == "code"
    assert a["endsAt"] == "0001-01-01T00:00:00Z" and a["startsAt"].startswith("2001-09-09T01:46:40")
    done = resolved.json()
    assert done["status"] == "resolved" and done["alerts"][0]["fingerprint"] == a["fingerprint"]
    assert done["alerts"][0]["endsAt"].startswith("2001-09-09T01:47:40")
    assert value(metrics, "specgate_alert_deliveries_total", receiver="ops", outcome="delivered") == 2


def test_5xx_is_retried_with_the_same_message_id(receiver: WebhookReceiver) -> None:
    receiver.statuses = [500, 503]
    metrics = asyncio.run(deliver(config(receiver.url), alert()))
    got = receiver.wait_for(3)
    assert len(got) == 3 and len({g.headers["webhook-id"] for g in got}) == 1
    assert all(verify(SECRET, g.headers, g.body) for g in got)
    assert value(metrics, "specgate_alert_delivery_retries_total", receiver="ops") == 2
    assert value(metrics, "specgate_alert_deliveries_total", receiver="ops", outcome="delivered") == 1


def test_4xx_is_not_retried(receiver: WebhookReceiver) -> None:
    receiver.statuses = [400]
    metrics = asyncio.run(deliver(config(receiver.url), alert()))
    time.sleep(0.2)
    assert len(receiver.received) == 1
    assert value(metrics, "specgate_alert_deliveries_total", receiver="ops", outcome="rejected") == 1
    assert value(metrics, "specgate_alert_delivery_retries_total", receiver="ops") == 0


def test_network_errors_are_retried_then_given_up() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    metrics = asyncio.run(deliver(config(f"http://127.0.0.1:{port}"), alert()))
    assert value(metrics, "specgate_alert_delivery_retries_total", receiver="ops") == 3
    assert value(metrics, "specgate_alert_deliveries_total", receiver="ops", outcome="failed") == 1


def test_a_full_queue_drops_and_counts(receiver: WebhookReceiver) -> None:
    async def scenario() -> GatewayMetrics:
        metrics = GatewayMetrics(CollectorRegistry())
        dispatcher = AlertDispatcher(config(receiver.url, queue_size=2), metrics)
        # Not started: nothing drains the queue, so the third message has no room.
        for _ in range(3):
            dispatcher.publish(alert())
        await dispatcher.stop(grace_s=0)
        return metrics

    metrics = asyncio.run(scenario())
    # one dropped at publish, two left undelivered when stopped: all three counted, none silently lost
    assert value(metrics, "specgate_alert_deliveries_total", receiver="ops", outcome="dropped") == 3


def test_unsigned_slack_and_json_formats(receiver: WebhookReceiver) -> None:
    cfg = AlertsConfig.model_validate(
        {
            "receivers": [
                {"name": "slack", "url": receiver.url + "/slack", "format": "slack"},
                {"name": "json", "url": receiver.url + "/json", "format": "json"},
            ]
        }
    )
    asyncio.run(deliver(cfg, alert()))
    got = {r.path: r for r in receiver.wait_for(2)}
    assert "webhook-signature" not in got["/slack"].headers
    assert "FIRING" in got["/slack"].json()["text"] and "route=code" in got["/slack"].json()["text"]
    plain = got["/json"].json()
    assert plain["status"] == "firing" and plain["labels"]["route"] == "code" and plain["source"] == "specgate"


def test_alertmanager_push_resends_active_alerts(receiver: WebhookReceiver) -> None:
    async def scenario() -> None:
        cfg = AlertsConfig.model_validate({"alertmanager": {"url": receiver.url, "resend_s": 0.2}})
        dispatcher = AlertDispatcher(cfg, GatewayMetrics(CollectorRegistry()))
        await dispatcher.start()
        dispatcher.publish(alert())
        await asyncio.sleep(0.7)
        dispatcher.publish(alert("resolved"))
        await asyncio.sleep(0.5)
        await dispatcher.stop()

    asyncio.run(scenario())
    pushes = [r.json() for r in receiver.received]
    assert all(r.path == "/api/v2/alerts" for r in receiver.received)
    firing = [p for p in pushes if "endsAt" not in p[0]]
    assert len(firing) >= 2, "re-sent while active"
    assert firing[0][0]["labels"] == {"alertname": "SpecgateRouteAcceptanceDrift", "route": "code", "kind": "shift"}
    assert any("endsAt" in p[0] for p in pushes[len(firing) :]), "the resolution is pushed with endsAt"
    assert "endsAt" in pushes[-1][0]


def test_signature_helpers_reject_stale_and_malformed() -> None:
    body = b"{}"
    ts = int(time.time())
    headers = {
        "webhook-id": "msg_1",
        "webhook-timestamp": str(ts),
        "webhook-signature": sign(SECRET, "msg_1", ts, body),
    }
    assert verify(SECRET, headers, body)
    assert not verify(SECRET, headers, body, now=ts + 400)
    assert not verify(SECRET, {**headers, "webhook-timestamp": "soon"}, body)
    assert not verify(SECRET, {"webhook-id": "x"}, body)
    other = "whsec_" + base64.b64encode(b"another secret of 32 bytes......").decode()
    assert not verify(other, headers, body)


def test_render_is_valid_json_for_every_format() -> None:
    for fmt in ("alertmanager", "slack", "json"):
        r = ReceiverConfig(name="r", url="http://x", format=fmt)  # type: ignore[arg-type]  # an unknown format on purpose
        assert render(alert(), r, "http://gw").startswith(b"{")


@pytest.mark.parametrize(
    ("receiver", "message"),
    [
        ({"name": "a", "url": "ftp://x"}, "http(s) URL"),
        ({"name": "a", "url": "http://x", "secret": "plain"}, "whsec_"),
        ({"name": "a", "url": "http://x", "secret": "whsec_!!!"}, "base64"),
        ({"name": "a", "url": "http://x", "secret": "whsec_" + base64.b64encode(b"short").decode()}, "16"),
        ({"name": "a", "url": "http://x", "format": "teams"}, "format"),
    ],
)
def test_receiver_config_errors(receiver: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate_config({"alerts": {"receivers": [receiver]}})
    assert message in str(err.value)


def test_secrets_do_not_leak_through_the_config_repr() -> None:
    cfg = validate_config({"alerts": {"receivers": [{"name": "a", "url": "http://x", "secret": SECRET}]}})
    assert SECRET not in repr(cfg) and SECRET not in str(cfg.model_dump())
