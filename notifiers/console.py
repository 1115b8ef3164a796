"""The embedded mode's notifier: a short summary on the terminal (or any text stream) instead of a post."""

from __future__ import annotations

import sys
from typing import TextIO

from notifiers.base import Delivery
from notifiers.redact import redact_incident
from notifiers.slack_message import initiator_of, not_sure, title_of
from schemas.incident import Incident
from schemas.subscription import TargetKind


def summary(incident: Incident, url: str | None = None) -> str:
    incident = redact_incident(incident)
    rc = incident.diagnosis.root_cause
    state = "RESOLVED" if incident.state == "resolved" else f"rev {incident.revision}"
    lines = [f"[firstfault] {incident.id} ({state}) job {incident.job_id}: {title_of(incident)}",
             f"  {'who' if not_sure(incident) else 'initiating'}: {initiator_of(incident)}"
             + (f"  signature {rc.signature}  confidence {rc.confidence:.0%}" if rc and rc.signature else "")]
    collateral = sum(g.count for g in incident.diagnosis.collateral)
    if collateral:
        lines.append(f"  collateral: {collateral} line(s) on other ranks, consequences only")
    if incident.diagnosis.verification:
        lines.append(f"  verify: {incident.diagnosis.verification}")
    lines += [f"  changed: {c}" for c in incident.changes]
    if url:
        lines.append(f"  {url}")
    return "\n".join(lines) + "\n"


class ConsoleNotifier:
    kind: TargetKind = "slack"  # stands in for Slack when no token is set

    def __init__(self, stream: TextIO | None = None, base_url: str | None = None) -> None:
        self.stream = stream or sys.stdout
        self.base_url = base_url

    def send(self, incident: Incident, address: str, root_ref: str | None, delivery_id: str) -> Delivery:
        url = f"{self.base_url.rstrip('/')}/incidents/{incident.id}" if self.base_url else None
        self.stream.write(summary(incident, url))
        self.stream.flush()
        return Delivery(ref=root_ref or f"console/{incident.id}", detail=f"printed for {address}")

    def close(self) -> None:
        pass  # nothing held open: each call is its own request

    def find_sent(self, incident: Incident, address: str, root_ref: str | None, delivery_id: str) -> Delivery | None:
        return None
