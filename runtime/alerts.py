"""Alert delivery: drift alerts to webhooks (Alertmanager v4, Slack or plain JSON), signed with the Standard
Webhooks scheme, and optionally pushed to an Alertmanager. The wire formats and signing are in
backends/webhooks.py; this module queues, retries and counts.

Each receiver has its own bounded queue and worker, so a slow or dead receiver never delays the others and never
holds memory without bound: a full queue drops the new message and counts it. A delivery is retried with
exponential backoff and full jitter on network errors and 5xx answers only; 4xx means the receiver refuses this
message and retrying would not change that. `webhook-id` stays the same across the retries of one message so that
receivers can deduplicate; the timestamp and signature are made fresh for each attempt (receivers reject
signatures older than five minutes, and a backoff can be longer than that).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from dataclasses import dataclass

import httpx
import orjson
from specgate.backends.webhooks import ZERO_TIME, Alert, render, sign
from specgate.runtime.metrics import GatewayMetrics

from specgate.config import AlertsConfig, ReceiverConfig

__all__ = ["AlertDispatcher"]

log = logging.getLogger("specgate.alerts")


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

    def carry_from(self, old: AlertDispatcher) -> None:
        """Take over from the dispatcher a reload replaces: the alerts firing (Alertmanager keeps hearing of them)
        and the resolutions not yet pushed. Messages queued for receivers stay with the old one, which delivers them
        before it stops."""
        self.active = dict(old.active)
        self._resolved_unpushed = dict(old._resolved_unpushed)
        self.sent_total = old.sent_total

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
                if item["endsAt"] == ZERO_TIME:
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
