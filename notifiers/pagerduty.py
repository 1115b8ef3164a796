"""PagerDuty Events API v2 through httpx: ``trigger`` while the incident is open (every revision re-triggers the
same alert: PagerDuty deduplicates by ``dedup_key`` = incident id and does not page again), ``resolve`` once it
is resolved. 202 is success; 429 and 5xx are retried with backoff (by the outbox); 400 is never retried.

Limits: dedup_key ≤ 255, summary ≤ 1,024 characters, the whole event ≤ 512 KB (evidence is cut to fit).
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from notifiers.base import Delivery, RateLimited, Rejected, retry_after_seconds
from notifiers.redact import redact_incident
from notifiers.settings import NotifySettings
from notifiers.slack_message import clip, initiator_of, title_of
from schemas.errors import TransportError
from schemas.incident import Incident
from schemas.subscription import TargetKind

ENQUEUE = "/v2/enqueue"
SUMMARY_CHARS = 1024
DEDUP_CHARS = 255
MAX_EVENT_BYTES = 512 * 1024
DEFAULT_429_DELAY = 60.0  # PagerDuty sends no Retry-After; its docs advise retrying after about a minute


class PagerDutyNotifier:
    kind: TargetKind = "pagerduty"

    def __init__(self, settings: NotifySettings, client: httpx.Client | None = None) -> None:
        self.settings = settings
        self.client = client or httpx.Client(base_url=settings.pagerduty_url, timeout=settings.timeout_s)

    def send(self, incident: Incident, address: str, root_ref: str | None, delivery_id: str) -> Delivery:
        event = build_event(incident, address, self.settings.incident_url(incident.id))
        try:
            response = self.client.post(ENQUEUE, json=event)
        except httpx.HTTPError as exc:  # refused, reset, timeout: the event may or may not have arrived
            raise TransportError(f"pagerduty unreachable: {exc}") from exc
        return _outcome(response, event["dedup_key"])

    def close(self) -> None:
        self.client.close()

    def find_sent(self, incident: Incident, address: str, root_ref: str | None, delivery_id: str) -> Delivery | None:
        return None  # sending again is harmless: PagerDuty deduplicates by dedup_key


def dedup_key(incident: Incident) -> str:
    return incident.id[:DEDUP_CHARS]


def build_event(incident: Incident, routing_key: str, url: str) -> dict[str, Any]:
    key = dedup_key(incident)
    if incident.state == "resolved":
        return {"routing_key": routing_key, "event_action": "resolve", "dedup_key": key}
    incident = redact_incident(incident)
    summary = clip(f"{title_of(incident)}: job {incident.job_id}, {initiator_of(incident)}", SUMMARY_CHARS)
    rc = incident.diagnosis.root_cause
    details: dict[str, Any] = {
        "job_id": incident.job_id, "attempt": incident.attempt, "revision": incident.revision,
        "signature": incident.signature, "category": incident.category, "rank": incident.rank,
        "host": incident.host, "confidence": rc.confidence if rc else None,
        "explanation": rc.explanation if rc else [], "fix": incident.diagnosis.fix,
        "verification": incident.diagnosis.verification,
        "collateral": [f"{g.count}x {g.signature}" for g in incident.diagnosis.collateral],
        "evidence": [f"{e.source}:{e.line}  {e.text}" for e in (rc.evidence if rc else [])],
        "verdict": incident.diagnosis.verdict,
        "suspects": [{"rank": x.rank, "host": x.host, "signature": x.signature, "confidence": x.confidence}
                     for x in incident.diagnosis.suspects],
        "labels": incident.labels,
        "regression_of": incident.regression_of,  # the resolved incident whose fix did not hold
    }
    event: dict[str, Any] = {
        "routing_key": routing_key, "event_action": "trigger", "dedup_key": key,
        "payload": {"summary": summary, "source": incident.host or incident.cluster or incident.job_id,
                    "severity": incident.severity, "component": incident.job_id, "group": incident.cluster,
                    "class": incident.signature or incident.category, "custom_details": details},
        "links": [{"href": url, "text": f"firstfault incident {incident.id}"}],
    }
    _fit(event)
    return event


def _fit(event: dict[str, Any]) -> None:
    """Drop evidence lines, then cut the explanation, until the event is under PagerDuty's 512 KB."""
    details = event["payload"]["custom_details"]
    while len(json.dumps(event).encode()) > MAX_EVENT_BYTES:
        if details["evidence"]:
            details["evidence"] = details["evidence"][: len(details["evidence"]) // 2]
            details["evidence_truncated"] = True
        elif details["explanation"]:
            details["explanation"] = details["explanation"][: len(details["explanation"]) // 2]
        else:
            details["fix"] = clip(str(details["fix"] or ""), 10_000)
            details["verification"] = clip(str(details["verification"] or ""), 10_000)
            return


def _outcome(response: httpx.Response, key: str) -> Delivery:
    status = response.status_code
    if status == 202:
        body = _json(response)
        return Delivery(ref=str(body.get("dedup_key") or key), detail=str(body.get("message", "accepted")))
    if status == 429:
        raise RateLimited("pagerduty rate limited", retry_after=retry_after_seconds(response.headers,
                                                                                     DEFAULT_429_DELAY))
    if status >= 500:
        raise TransportError(f"pagerduty HTTP {status}", retry_after=retry_after_seconds(response.headers))
    body = _json(response)
    errors = body.get("errors") or []
    detail = "; ".join(str(e) for e in errors) if isinstance(errors, list) else str(errors)
    raise Rejected(str(body.get("message") or f"HTTP {status}"), detail)


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
