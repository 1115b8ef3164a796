"""The notifiers' guard at the edge: an incident is redacted again just before it leaves for a third party.

Diagnoses are redacted once, as they are made (correlator.diagnose, rules in correlator/redact.py), so what is
stored, served and printed is already clean. Redaction is idempotent, and this second pass costs microseconds:
it keeps an incident stored before that, or built by hand, from reaching Slack, PagerDuty or a webhook with a
credential in it.
"""

from __future__ import annotations

from correlator.redact import MASK, redact, redact_model
from schemas.incident import Incident

__all__ = ["MASK", "redact", "redact_incident"]


def redact_incident(incident: Incident) -> Incident:
    """A copy whose diagnosis (every string in it) and changes are redacted; ids, labels and times are the
    producer's, not log text, and stay as they are."""
    verification = redact_model(incident.verification) if incident.verification else None
    return incident.model_copy(update={"diagnosis": redact_model(incident.diagnosis),
                                       "changes": [redact(c) for c in incident.changes],
                                       "verification": verification})
