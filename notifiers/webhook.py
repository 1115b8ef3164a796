"""Webhooks: a signed JSON POST of the (redacted) incident.

Headers: ``X-Firstfault-Timestamp`` (Unix seconds), ``X-Firstfault-Signature: sha256=<hex>`` where hex is
HMAC-SHA256(secret, "<timestamp>.<body>"), and ``X-Firstfault-Delivery`` (unique per incident, revision and
target: a receiver that stores it sees every delivery exactly once, even when a crash made us send twice).
Receivers check with ``verify()``. 2xx is success; 429 and 5xx are retried; any other 4xx is permanent.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from datetime import datetime

import httpx

from notifiers.base import Delivery, RateLimited, Rejected, retry_after_seconds
from notifiers.redact import redact_incident
from notifiers.settings import NotifySettings
from schemas.errors import PermanentError, TransportError
from schemas.incident import Incident
from schemas.subscription import TargetKind

SIGNATURE_HEADER = "X-Firstfault-Signature"
TIMESTAMP_HEADER = "X-Firstfault-Timestamp"
DELIVERY_HEADER = "X-Firstfault-Delivery"
TOLERANCE_S = 300


def sign(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


def verify(secret: str, headers: Mapping[str, str], body: bytes, now: datetime, tolerance_s: int = TOLERANCE_S) -> bool:
    """For receivers: True when the signature is ours and the timestamp within ``tolerance_s`` of ``now``
    (an old request replayed later is refused)."""
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        timestamp = int(lower.get(TIMESTAMP_HEADER.lower(), ""))
    except ValueError:
        return False
    if abs(now.timestamp() - timestamp) > tolerance_s:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), lower.get(SIGNATURE_HEADER.lower(), ""))


def event_body(incident: Incident, url: str) -> bytes:
    kind = "incident.resolved" if incident.state == "resolved" else (
        "incident.opened" if incident.revision == 1 else "incident.revised")
    payload = {"event": kind, "url": url, "incident": redact_incident(incident).model_dump(mode="json")}
    return json.dumps(payload, separators=(",", ":")).encode()


class WebhookNotifier:
    kind: TargetKind = "webhook"

    def __init__(self, settings: NotifySettings, client: httpx.Client | None = None) -> None:
        if settings.webhook_secret is None:
            raise PermanentError("webhook targets need a signing secret (FIRSTFAULT_WEBHOOK_SECRET)")
        self.secret = settings.webhook_secret.get_secret_value()
        self.settings = settings
        self.client = client or httpx.Client(timeout=settings.timeout_s)

    def send(self, incident: Incident, address: str, root_ref: str | None, delivery_id: str,
             now: datetime | None = None) -> Delivery:
        refused = self.settings.webhook_policy().problem(address)
        if refused is not None:  # the list may have changed since the subscription was made
            raise Rejected("webhook not allowed", refused)
        body = event_body(incident, self.settings.incident_url(incident.id))
        timestamp = int(now.timestamp()) if now else _unix_now()
        headers = {"Content-Type": "application/json", TIMESTAMP_HEADER: str(timestamp),
                   SIGNATURE_HEADER: sign(self.secret, timestamp, body), DELIVERY_HEADER: delivery_id}
        try:
            response = self.client.post(address, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise TransportError(f"webhook unreachable: {exc}") from exc
        status = response.status_code
        if 200 <= status < 300:
            return Delivery(ref=delivery_id, detail=f"HTTP {status}")
        if status == 429:
            raise RateLimited("webhook rate limited", retry_after=retry_after_seconds(response.headers, 30.0))
        if status >= 500:
            raise TransportError(f"webhook HTTP {status}", retry_after=retry_after_seconds(response.headers))
        raise Rejected(f"HTTP {status}", response.text[:200])

    def close(self) -> None:
        self.client.close()

    def find_sent(self, incident: Incident, address: str, root_ref: str | None, delivery_id: str) -> Delivery | None:
        return None  # resent with the same X-Firstfault-Delivery: the receiver deduplicates


def _unix_now() -> int:
    # the signing timestamp must be the wall clock of the moment of sending, which is I/O, not core logic
    return int(time.time())
