"""One retry/outcome table for every notifier: what each server behaviour becomes (error class, retry_after).

Each notifier runs against its real local fake server through its real client (slack-sdk, httpx).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from notifiers.base import Delivery, Notifier, RateLimited, Rejected
from notifiers.pagerduty import PagerDutyNotifier
from notifiers.slack import SlackNotifier
from notifiers.webhook import WebhookNotifier
from schemas.errors import PermanentError, RetryableError, TransportError
from tests.fakes.http import FakeServer, Response
from tests.fakes.pagerduty_api import FakePagerDuty
from tests.fakes.slack_api import FakeSlack
from tests.fakes.webhook_receiver import FakeWebhookReceiver
from tests.notifiers.conftest import ROUTING_KEY, WEBHOOK_SECRET, make_incident, settings_for


@dataclass
class Case:
    behaviour: str
    error: type[Exception] | None  # None: delivered
    retry_after: float | None = None
    reason: str | None = None  # Rejected.reason, per notifier below


# (behaviour, expected error class, expected retry_after)
TABLE = [
    Case("success", None),
    Case("429 with Retry-After", RateLimited, 7.0),
    Case("503", TransportError, None),
    Case("rejected", Rejected),
    Case("auth failure", Rejected),
    Case("connection refused", TransportError, None),
]
REASONS = {
    ("slack", "rejected"): "channel_not_found", ("slack", "auth failure"): "invalid_auth",
    ("pagerduty", "rejected"): "Event object is invalid", ("pagerduty", "auth failure"): "Invalid routing key",
    ("webhook", "rejected"): "HTTP 400", ("webhook", "auth failure"): "HTTP 401",
}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Harness:
    notifier: Notifier
    address: str
    server: FakeServer

    def deliveries(self) -> int:
        if isinstance(self.server, FakeSlack):
            return len(self.server.messages)
        if isinstance(self.server, FakePagerDuty):
            return sum(len(a.events) for a in self.server.alerts.values())
        assert isinstance(self.server, FakeWebhookReceiver)
        return len(self.server.deliveries)


def _slack(behaviour: str) -> Iterator[Harness]:
    server = FakeSlack().start()
    token = "xoxb-revoked" if behaviour == "auth failure" else "xoxb-test-token"
    url = f"http://127.0.0.1:{_closed_port()}/api/" if behaviour == "connection refused" else server.url
    settings = settings_for(server, token=token).model_copy(update={"slack_api_url": url})
    address = "#no-such-channel" if behaviour == "rejected" else "#ml-oncall"
    yield Harness(SlackNotifier(settings), address, server)
    server.stop()


def _pagerduty(behaviour: str) -> Iterator[Harness]:
    server = FakePagerDuty(routing_keys={ROUTING_KEY}).start()
    url = f"http://127.0.0.1:{_closed_port()}" if behaviour == "connection refused" else server.base
    address = "X" * 32 if behaviour == "auth failure" else ROUTING_KEY  # an unknown integration key
    if behaviour == "rejected":
        server.inject(Response.json({"status": "invalid event", "message": "Event object is invalid",
                                     "errors": ["'payload.summary' is missing or blank"]}, 400))
    settings = settings_for(pagerduty=server).model_copy(update={"pagerduty_url": url})
    yield Harness(PagerDutyNotifier(settings), address, server)
    server.stop()


def _webhook(behaviour: str) -> Iterator[Harness]:
    server = FakeWebhookReceiver(WEBHOOK_SECRET).start()
    secret = "a-secret-the-receiver-does-not-know" if behaviour == "auth failure" else WEBHOOK_SECRET
    address = f"http://127.0.0.1:{_closed_port()}/hooks" if behaviour == "connection refused" else server.url
    if behaviour == "rejected":
        server.inject(Response.json({"error": "unknown event"}, 400))
    yield Harness(WebhookNotifier(settings_for(secret=secret)), address, server)
    server.stop()


HARNESSES = {"slack": _slack, "pagerduty": _pagerduty, "webhook": _webhook}
COMMON = {"429 with Retry-After": Response.json({"ok": False, "error": "ratelimited"}, 429, {"Retry-After": "7"}),
          "503": Response(503, b"<html>Service Unavailable</html>", {"Content-Type": "text/html"})}


@pytest.fixture(params=list(HARNESSES), ids=list(HARNESSES))
def kind(request: Any) -> str:
    return str(request.param)


@pytest.mark.parametrize("case", TABLE, ids=[c.behaviour for c in TABLE])
def test_every_notifier_turns_each_server_behaviour_into_the_same_outcome(kind: str, case: Case) -> None:
    harness_gen = HARNESSES[kind](case.behaviour)
    harness = next(harness_gen)
    try:
        if case.behaviour in COMMON:
            harness.server.inject(COMMON[case.behaviour])
        incident = make_incident()
        if case.error is None:
            delivery = harness.notifier.send(incident, harness.address, None, "d-1")
            assert isinstance(delivery, Delivery) and delivery.ref
            assert harness.deliveries() == 1
            return
        with pytest.raises(case.error) as caught:
            harness.notifier.send(incident, harness.address, None, "d-1")
        exc = caught.value
        assert isinstance(exc, RetryableError if case.error is not Rejected else PermanentError)
        if isinstance(exc, RetryableError):
            assert exc.retry_after == case.retry_after
        if isinstance(exc, Rejected):
            assert exc.reason == REASONS[(kind, case.behaviour)]
        assert harness.deliveries() == 0
    finally:
        harness.notifier.close()
        next(harness_gen, None)
