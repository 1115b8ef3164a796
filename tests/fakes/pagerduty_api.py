"""A fake of PagerDuty's Events API v2 (``POST /v2/enqueue``), faithful to what a client sees:
202 ``{"status": "success", "message": "Event processed", "dedup_key": ...}``; 400 ``{"status": "invalid event",
"message": "Event object is invalid", "errors": [...]}`` for a bad event (a routing key not of 32 letters and
digits, missing summary, source or severity, summary over 1,024, dedup_key over 255, an event over 512 KB), and
"Invalid routing key" for a well-formed key of no integration; alerts deduplicated by
(routing key, dedup_key): a second trigger updates the open alert and pages nobody, resolve closes it."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.http import FakeServer, Request, Response

SEVERITIES = {"critical", "error", "warning", "info"}
ACTIONS = {"trigger", "acknowledge", "resolve"}


@dataclass
class Alert:
    routing_key: str
    dedup_key: str
    status: str
    summary: str
    events: list[dict[str, Any]] = field(default_factory=list)
    pages: int = 0  # how many times someone was notified


class FakePagerDuty(FakeServer):
    def __init__(self, routing_keys: set[str] | None = None) -> None:
        super().__init__()
        self.routing_keys = routing_keys if routing_keys is not None else {"R" * 32}
        self.alerts: dict[tuple[str, str], Alert] = {}

    def handle(self, request: Request) -> Response:
        if request.method != "POST" or request.path != "/v2/enqueue":
            return Response.json({"status": "not found"}, 404)
        if len(request.body) > 512 * 1024:
            return _invalid(["Event payload exceeds 512 KB"])
        try:
            event = json.loads(request.body)
        except ValueError:
            return _invalid(["Request body is not valid JSON"])
        errors = _problems(event)
        if errors:
            return _invalid(errors)
        if event["routing_key"] not in self.routing_keys:  # well formed, but no such integration
            return _invalid(["Invalid routing key"], "Invalid routing key")
        with self.lock:
            key = self._apply(event)
        return Response.json({"status": "success", "message": "Event processed", "dedup_key": key}, 202)

    def _apply(self, event: dict[str, Any]) -> str:
        key = event.get("dedup_key") or uuid.uuid4().hex
        rk = event["routing_key"]
        alert = self.alerts.get((rk, key))
        action = event["event_action"]
        if action == "trigger":
            if alert is None or alert.status == "resolved":
                alert = Alert(rk, key, "triggered", event["payload"]["summary"], pages=1)
                self.alerts[(rk, key)] = alert
            else:
                alert.summary = event["payload"]["summary"]
        elif alert is not None and alert.status != "resolved":
            alert.status = "resolved" if action == "resolve" else "acknowledged"
        if alert is not None:
            alert.events.append(event)
        return str(key)


def _problems(event: Any) -> list[str]:
    if not isinstance(event, dict):
        return ["Event object must be a JSON object"]
    errors = []
    key = str(event.get("routing_key") or "")
    if len(key) != 32:
        errors.append("Length of 'routing_key' is incorrect (should be 32 characters)")
    if not key.isalnum():
        errors.append("'routing_key' cannot contain non-alphanumeric characters.")
    if event.get("event_action") not in ACTIONS:
        errors.append("'event_action' is missing or invalid")
    if len(str(event.get("dedup_key") or "")) > 255:
        errors.append("'dedup_key' must be at most 255 characters")
    if event.get("event_action") == "trigger":
        payload = event.get("payload") or {}
        for name in ("summary", "source", "severity"):
            if not payload.get(name):
                errors.append(f"'payload.{name}' is missing or blank")
        if len(str(payload.get("summary") or "")) > 1024:
            errors.append("'payload.summary' must be at most 1024 characters")
        if payload.get("severity") and payload["severity"] not in SEVERITIES:
            errors.append("'payload.severity' is invalid (must be critical, error, warning or info)")
    elif event.get("event_action") in ("acknowledge", "resolve") and not event.get("dedup_key"):
        errors.append("'dedup_key' is required for acknowledge and resolve")
    return errors


def _invalid(errors: list[str], message: str = "Event object is invalid") -> Response:
    return Response.json({"status": "invalid event", "message": message, "errors": errors}, 400)
