"""Recording a fix's verification on its incident, in one transaction with its notifications.

A pass resolves the incident (a verified fix is a resolved one), a fail reopens it; either way the incident's
revision moves on, so that the outbox (keyed by revision and state) sends the change: the Slack root is edited
(chat.update) and the thread says what was run, PagerDuty resolves or triggers again. The revision's change line
is what the thread reply and `incidents show` print.
"""

from __future__ import annotations

from datetime import datetime

from schemas.incident import Incident
from schemas.verification import Verification
from store.incidents import OnSaved, Store, _fill, _incident, _locked_incident
from store.notify_sql import SqlNotifyTx
from store.tables import RevisionRow


def change_line(v: Verification, was: str) -> str:
    where = "reported" if v.reported else "ran"
    what = f"`{v.command}`" if v.command else "the verification"
    if v.status == "passed":
        return f"Verified: {v.by} {where} {what}: passed ({v.reason}; pass means {v.criterion})"
    reopened = "; reopened" if was != "open" else "; still open"
    return f"Verification failed: {v.by} {where} {what}: {v.reason} (pass means {v.criterion}){reopened}"


def record_verification(store: Store, incident_id: str, verification: Verification, now: datetime,
                        on_saved: OnSaved | None = None) -> Incident | None:
    """Store the verification as the incident's new revision; None for an unknown id."""
    with store.session() as s:
        found = _locked_incident(s, incident_id)
        if found is None:
            return None
        current = _incident(found)
        state = "resolved" if verification.status == "passed" else "open"
        new = current.model_copy(update={
            "state": state, "revision": current.revision + 1, "updated_at": now, "verification": verification,
            "changes": [change_line(verification, current.state)]})
        _fill(found, new)
        s.add(found)
        s.add(RevisionRow(incident_id=new.id, revision=new.revision, diagnosis=new.diagnosis.model_dump(mode="json"),
                          changes=new.changes, created_at=now))
        if on_saved is not None:
            s.flush()
            on_saved(SqlNotifyTx(s), new, current)
        return new
