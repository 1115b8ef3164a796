"""Signed webhooks: a receiver can tell ours from a forgery or a replay, and sees each delivery once."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from notifiers.webhook import DELIVERY_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookNotifier, sign, verify
from tests.fakes.webhook_receiver import FakeWebhookReceiver
from tests.notifiers.conftest import WEBHOOK_SECRET, make_incident, settings_for

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def signed(body: bytes, at: datetime = NOW, secret: str = WEBHOOK_SECRET) -> dict[str, str]:
    ts = int(at.timestamp())
    return {TIMESTAMP_HEADER: str(ts), SIGNATURE_HEADER: sign(secret, ts, body)}


def test_verify_accepts_our_signature_and_refuses_tampering_replays_and_other_secrets() -> None:
    body = b'{"event":"incident.opened"}'
    assert verify(WEBHOOK_SECRET, signed(body), body, NOW)
    assert not verify(WEBHOOK_SECRET, signed(body), body + b" ", NOW)
    assert not verify(WEBHOOK_SECRET, signed(body, NOW - timedelta(minutes=10)), body, NOW)
    assert not verify(WEBHOOK_SECRET, signed(body, secret="other"), body, NOW)
    assert not verify(WEBHOOK_SECRET, {SIGNATURE_HEADER: "sha256=00"}, body, NOW)


def test_the_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    import hashlib
    import hmac

    expected = hmac.new(b"k", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert sign("k", 1700000000, b"{}") == f"sha256={expected}"


def test_a_receiver_stores_each_delivery_once_even_when_sent_twice(webhook_server: FakeWebhookReceiver) -> None:
    notifier = WebhookNotifier(settings_for())
    incident = make_incident(evidence=["password=hunter2 in the launcher line"])
    notifier.send(incident, webhook_server.url, None, "inc-1:r1:webhook")
    notifier.send(incident, webhook_server.url, None, "inc-1:r1:webhook")  # e.g. a retry after a lost answer
    assert list(webhook_server.deliveries) == ["inc-1:r1:webhook"]
    body = webhook_server.deliveries["inc-1:r1:webhook"]
    assert body["event"] == "incident.opened" and body["incident"]["id"] == incident.id
    assert "hunter2" not in json.dumps(body)
    assert webhook_server.requests[0].header(DELIVERY_HEADER) == "inc-1:r1:webhook"
    notifier.close()
