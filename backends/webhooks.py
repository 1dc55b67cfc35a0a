"""Webhook wire formats: the `Alert` value, its bodies for Alertmanager (webhook v4 and API v2), Slack and plain
JSON receivers, and Standard Webhooks signing (`sign` for the sender, `verify` as a receiver does it)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from specgate.config import ReceiverConfig

__all__ = ["TOLERANCE_S", "ZERO_TIME", "Alert", "render", "sign", "verify"]

# What Alertmanager itself sends as endsAt for an alert that is still firing.
ZERO_TIME = "0001-01-01T00:00:00Z"
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
            "endsAt": _iso(self.ends_at) if self.ends_at is not None else ZERO_TIME,
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
