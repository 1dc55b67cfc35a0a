"""Alert delivery: drift alerts to webhooks (Alertmanager v4, Slack or plain JSON), signed with the Standard
Webhooks scheme, and optionally pushed to an Alertmanager.

Each receiver has its own bounded queue and worker, so a slow or dead receiver never delays the others and never
holds memory without bound: a full queue drops the new message and counts it. A delivery is retried with
exponential backoff and full jitter on network errors and 5xx answers only; 4xx means the receiver refuses this
message and retrying would not change that. `webhook-id` stays the same across the retries of one message so that
receivers can deduplicate; the timestamp and signature are made fresh for each attempt (receivers reject
signatures older than five minutes, and a backoff can be longer than that).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import logging
import random
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

import httpx
import orjson
from specgate.runtime.metrics import GatewayMetrics

from specgate.config import AlertsConfig, ReceiverConfig

__all__ = ["Alert", "AlertDispatcher", "render", "sign", "verify"]

log = logging.getLogger("specgate.alerts")

# What Alertmanager itself sends as endsAt for an alert that is still firing.
_ZERO_TIME = "0001-01-01T00:00:00Z"
TOLERANCE_S = 300


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Alert:
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    status: Literal["firing", "resolved"]
    starts_at: float
    ends_at: float | None = None
    generator_url: str = ""
    fingerprint: str = field(default="")

    def __post_init__(self) -> None:
        if not self.fingerprint:
            ident = "\x00".join(f"{k}={v}" for k, v in sorted({**self.labels, "alertname": self.name}.items()))
            object.__setattr__(self, "fingerprint", hashlib.sha256(ident.encode()).hexdigest()[:16])

    def resolved(self, at: float, annotations: dict[str, str] | None = None) -> Alert:
        return replace(self, status="resolved", ends_at=at, annotations=annotations or self.annotations)

    def all_labels(self) -> dict[str, str]:
        return {"alertname": self.name, **self.labels}

    def am_alert(self) -> dict[str, Any]:
        """One alert as Alertmanager's webhook payload v4 and its API v2 describe it."""
        return {
            "status": self.status,
            "labels": self.all_labels(),
            "annotations": self.annotations,
            "startsAt": _iso(self.starts_at),
            "endsAt": _iso(self.ends_at) if self.ends_at is not None else _ZERO_TIME,
            "generatorURL": self.generator_url,
            "fingerprint": self.fingerprint,
        }


def render(alert: Alert, receiver: ReceiverConfig, external_url: str) -> bytes:
    """The request body for a receiver's format."""
    if receiver.format == "alertmanager":
        labels = alert.all_labels()
        group = {"alertname": alert.name, **({"route": labels["route"]} if "route" in labels else {})}
        group_key = "{}:{" + ", ".join(f'{k}="{v}"' for k, v in group.items()) + "}"
        body: Any = {
            "version": "4",
            "groupKey": group_key,
            "truncatedAlerts": 0,
            "status": alert.status,
            "receiver": receiver.name,
            "groupLabels": group,
            "commonLabels": labels,
            "commonAnnotations": alert.annotations,
            "externalURL": external_url,
            "alerts": [alert.am_alert()],
        }
    elif receiver.format == "slack":
        mark = ":red_circle: FIRING" if alert.status == "firing" else ":large_green_circle: RESOLVED"
        where = ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items()))
        text = f"{mark}: {alert.name} ({where})\n{alert.annotations.get('summary', '')}"
        if alert.annotations.get("description"):
            text += f"\n{alert.annotations['description']}"
        body = {"text": text}
    else:
        body = {"source": "specgate", "receiver": receiver.name, "externalURL": external_url, **alert.am_alert()}
        body["alertname"] = alert.name
    return orjson.dumps(body)


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix("whsec_"))


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """`webhook-signature` header value (Standard Webhooks, v1 = HMAC-SHA256)."""
    mac = hmac.new(_key(secret), f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def verify(secret: str, headers: Any, body: bytes, now: float | None = None) -> bool:
    """What a receiver does: constant-time compare against every listed signature, reject stale timestamps."""
    try:
        msg_id = headers["webhook-id"]
        timestamp = int(headers["webhook-timestamp"])
        listed = headers["webhook-signature"].split()
    except (KeyError, ValueError):
        return False
    if abs((now if now is not None else time.time()) - timestamp) > TOLERANCE_S:
        return False
    expected = sign(secret, msg_id, timestamp, body)
    return any(hmac.compare_digest(expected, candidate) for candidate in listed)


@dataclass(frozen=True)
class _Message:
    msg_id: str
    body: bytes
    alert: Alert


class AlertDispatcher:
    def __init__(self, config: AlertsConfig, metrics: GatewayMetrics, client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self.metrics = metrics
        self._client = client
        self._own_client = client is None
        self._queues: dict[str, asyncio.Queue[_Message]] = {
            r.name: asyncio.Queue(maxsize=config.queue_size) for r in config.receivers
        }
        self._tasks: list[asyncio.Task[None]] = []
        # Firing alerts by fingerprint, plus resolved ones not yet pushed to Alertmanager.
        self.active: dict[str, Alert] = {}
        self._resolved_unpushed: dict[str, Alert] = {}
        self._push_now = asyncio.Event()
        self.sent_total = 0

    @property
    def enabled(self) -> bool:
        return bool(self.config.receivers) or self.config.alertmanager is not None

    async def start(self) -> None:
        if not self.enabled:
            return
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.config.timeout_s)
        for receiver in self.config.receivers:
            self._tasks.append(asyncio.create_task(self._worker(receiver), name=f"alerts-{receiver.name}"))
        if self.config.alertmanager is not None:
            self._tasks.append(asyncio.create_task(self._push_loop(), name="alerts-alertmanager"))

    async def stop(self, grace_s: float = 5.0) -> None:
        """Give queued messages up to `grace_s` to go out, then cancel; whatever is left is counted as dropped."""
        if self._tasks:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(q.join() for q in self._queues.values())), grace_s)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for name, queue in self._queues.items():
            while not queue.empty():
                queue.get_nowait()
                self.metrics.alert_deliveries.labels(name, "dropped").inc()
            self.metrics.alert_queue_depth.labels(name).set(0)
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    def publish(self, alert: Alert) -> None:
        """Queue an alert (firing or resolved) for every receiver; never blocks, never raises."""
        if alert.status == "firing":
            self.active[alert.fingerprint] = alert
            self._resolved_unpushed.pop(alert.fingerprint, None)
        else:
            self.active.pop(alert.fingerprint, None)
            self._resolved_unpushed[alert.fingerprint] = alert
        self._push_now.set()
        for receiver in self.config.receivers:
            message = _Message(f"msg_{uuid.uuid4().hex}", render(alert, receiver, self.config.external_url), alert)
            queue = self._queues[receiver.name]
            try:
                queue.put_nowait(message)
            except asyncio.QueueFull:
                self.metrics.alert_deliveries.labels(receiver.name, "dropped").inc()
                log.warning(
                    "alert dropped: receiver queue full",
                    extra={"receiver": receiver.name, "alert": alert.name, "status": alert.status},
                )
                continue
            self.metrics.alert_queue_depth.labels(receiver.name).set(queue.qsize())

    async def _worker(self, receiver: ReceiverConfig) -> None:
        queue = self._queues[receiver.name]
        while True:
            message = await queue.get()
            try:
                await self._deliver(receiver, message)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug here must not kill the worker and silently stop all alerts
                self.metrics.alert_deliveries.labels(receiver.name, "failed").inc()
                log.exception("alert delivery crashed", extra={"receiver": receiver.name})
            finally:
                queue.task_done()
                self.metrics.alert_queue_depth.labels(receiver.name).set(queue.qsize())

    def _headers(self, receiver: ReceiverConfig, message: _Message) -> dict[str, str]:
        headers = {k: v.get_secret_value() for k, v in receiver.headers.items()}
        headers["content-type"] = "application/json"
        headers["user-agent"] = "specgate-alerts"
        if receiver.secret is not None:
            ts = int(time.time())
            headers["webhook-id"] = message.msg_id
            headers["webhook-timestamp"] = str(ts)
            headers["webhook-signature"] = sign(receiver.secret.get_secret_value(), message.msg_id, ts, message.body)
        return headers

    def _backoff(self, attempt: int) -> float:
        cap = min(self.config.backoff_max_s, self.config.backoff_initial_s * 2**attempt)
        return random.uniform(0, cap)  # full jitter: receivers coming back are not hit in lockstep

    async def _deliver(self, receiver: ReceiverConfig, message: _Message) -> None:
        assert self._client is not None
        info = {"receiver": receiver.name, "alert": message.alert.name, "status": message.alert.status}
        for attempt in range(self.config.max_attempts):
            if attempt:
                self.metrics.alert_retries.labels(receiver.name).inc()
                await asyncio.sleep(self._backoff(attempt - 1))
            try:
                r = await self._client.post(
                    receiver.url, content=message.body, headers=self._headers(receiver, message)
                )
            except httpx.HTTPError as exc:
                log.warning("alert delivery failed; will retry", extra={**info, "error": type(exc).__name__})
                continue
            if r.status_code < 300:
                self.sent_total += 1
                self.metrics.alert_deliveries.labels(receiver.name, "delivered").inc()
                return
            if r.status_code < 500:
                self.metrics.alert_deliveries.labels(receiver.name, "rejected").inc()
                log.error("alert rejected by receiver; not retried", extra={**info, "http_status": r.status_code})
                return
            log.warning("alert delivery got a server error; will retry", extra={**info, "http_status": r.status_code})
        self.metrics.alert_deliveries.labels(receiver.name, "failed").inc()
        log.error("alert delivery gave up", extra={**info, "attempts": self.config.max_attempts})

    async def _push_loop(self) -> None:
        """Alertmanager expects firing alerts to be re-sent (else it resolves them itself after its timeout)."""
        am = self.config.alertmanager
        assert am is not None and self._client is not None
        url = f"{am.url}/api/v2/alerts"
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._push_now.wait(), timeout=am.resend_s)
            self._push_now.clear()
            batch = [a.am_alert() for a in [*self.active.values(), *self._resolved_unpushed.values()]]
            if not batch:
                continue
            for item in batch:
                item.pop("status", None)
                item.pop("fingerprint", None)
                if item["endsAt"] == _ZERO_TIME:
                    del item["endsAt"]  # still firing: Alertmanager sets its own resolve timeout
            try:
                r = await self._client.post(
                    url, content=orjson.dumps(batch), headers={"content-type": "application/json"}
                )
                ok = r.status_code < 300
            except httpx.HTTPError:
                ok = False
            self.metrics.alert_deliveries.labels("alertmanager", "delivered" if ok else "failed").inc()
            if ok:
                self._resolved_unpushed.clear()
            else:
                log.warning("alertmanager push failed; retried on the next resend", extra={"url": url})
