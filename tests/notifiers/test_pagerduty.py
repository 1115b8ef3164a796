"""PagerDuty Events v2 through httpx against the local fake: one alert per incident, resolved when it is."""

from __future__ import annotations

import json

import httpx
import pytest

from notifiers.base import RateLimited
from notifiers.pagerduty import MAX_EVENT_BYTES, PagerDutyNotifier, build_event
from tests.fakes.http import Response
from tests.fakes.pagerduty_api import FakePagerDuty
from tests.notifiers.conftest import ROUTING_KEY, make_incident, settings_for


def test_an_incident_triggers_one_alert_and_revisions_do_not_page_again(pagerduty_server: FakePagerDuty) -> None:
    notifier = PagerDutyNotifier(settings_for(pagerduty=pagerduty_server))
    incident = make_incident(severity="critical")
    assert notifier.send(incident, ROUTING_KEY, None, "d-1").ref == incident.id
    notifier.send(make_incident(severity="critical", revision=2, changes=["more evidence"]), ROUTING_KEY,
                  incident.id, "d-2")
    [alert] = pagerduty_server.alerts.values()
    assert alert.dedup_key == incident.id and alert.pages == 1 and len(alert.events) == 2
    payload = alert.events[0]["payload"]
    assert payload["severity"] == "critical" and payload["source"] == "node004"
    assert payload["summary"].startswith("Linux OOM killer") and "rank 37 on node004" in payload["summary"]
    assert "node004/dmesg.log:3" in payload["custom_details"]["evidence"][0]
    assert alert.events[0]["links"][0]["href"] == f"https://firstfault.example.org/incidents/{incident.id}"
    notifier.send(make_incident(state="resolved", revision=3), ROUTING_KEY, incident.id, "d-3")
    assert alert.status == "resolved"
    notifier.close()


def test_a_429_without_retry_after_waits_a_minute(pagerduty_server: FakePagerDuty) -> None:
    pagerduty_server.inject(Response.json({"status": "throttle event", "message": "Requests for this service are "
                                           "arriving too quickly. Please retry later."}, 429))
    notifier = PagerDutyNotifier(settings_for(pagerduty=pagerduty_server))
    with pytest.raises(RateLimited) as caught:
        notifier.send(make_incident(), ROUTING_KEY, None, "d-1")
    assert caught.value.retry_after == 60.0
    notifier.close()


def test_huge_evidence_is_cut_to_fit_512_kb_and_is_accepted(pagerduty_server: FakePagerDuty) -> None:
    incident = make_incident(evidence=["NCCL WARN " + "x" * 2000] * 2000, job_id="j" * 400)
    event = build_event(incident, ROUTING_KEY, "https://x")
    assert len(json.dumps(event).encode()) <= MAX_EVENT_BYTES
    assert event["payload"]["custom_details"]["evidence_truncated"] is True
    assert len(event["payload"]["summary"]) <= 1024 and len(event["dedup_key"]) <= 255
    notifier = PagerDutyNotifier(settings_for(pagerduty=pagerduty_server))
    notifier.send(incident, ROUTING_KEY, None, "d-1")
    assert len(pagerduty_server.alerts) == 1
    notifier.close()


def test_secrets_in_evidence_never_reach_pagerduty(pagerduty_server: FakePagerDuty) -> None:
    notifier = PagerDutyNotifier(settings_for(pagerduty=pagerduty_server))
    notifier.send(make_incident(evidence=["HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"]), ROUTING_KEY, None, "d")
    assert "hf_AbCdEf" not in json.dumps([a.events for a in pagerduty_server.alerts.values()])
    notifier.close()


def test_the_fake_refuses_what_pagerduty_refuses(pagerduty_server: FakePagerDuty) -> None:
    with httpx.Client(base_url=pagerduty_server.base) as http:
        big = {"routing_key": ROUTING_KEY, "event_action": "trigger", "payload": {
            "summary": "s", "source": "h", "severity": "error", "custom_details": {"x": "y" * 600_000}}}
        assert http.post("/v2/enqueue", json=big).status_code == 400
        bad = http.post("/v2/enqueue", json={"routing_key": ROUTING_KEY, "event_action": "trigger",
                                             "payload": {"summary": "s" * 1025, "severity": "fatal"}})
        assert bad.status_code == 400 and set(bad.json()["errors"]) == {
            "'payload.source' is missing or blank", "'payload.summary' must be at most 1024 characters",
            "'payload.severity' is invalid (must be critical, error, warning or info)"}
        assert http.post("/v2/enqueue", json={"routing_key": ROUTING_KEY, "event_action": "resolve"}
                         ).status_code == 400  # resolve needs the dedup_key
        short = http.post("/v2/enqueue", json={"routing_key": "e+23rschqsESqk9Q6_-g", "event_action": "resolve",
                                               "dedup_key": "k"})
        assert short.json()["errors"] == ["Length of 'routing_key' is incorrect (should be 32 characters)",
                                          "'routing_key' cannot contain non-alphanumeric characters."]
