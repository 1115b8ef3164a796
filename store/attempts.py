"""A job's next attempt succeeding closes its chain of failed attempts, in one transaction with its notifications.

The latest incident of an earlier attempt hears of it: an open one is resolved by the success (its thread says
so, its page stops); one already resolved by hand (a fix applied) gets a revision saying the fix held. An
incident of the succeeding attempt itself, or of a later one, is left alone: a success does not undo a failure
that came after it.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import col, select

from schemas.incident import Incident
from store.incidents import Store, _fill, _incident, _locked_incident
from store.notify_sql import SqlNotifyTx
from store.ports import OnSaved
from store.tables import IncidentRow, RevisionRow


def close_chain(store: Store, job_id: str, attempt: int, now: datetime,
                on_saved: OnSaved | None = None) -> Incident | None:
    """Mark the job's latest earlier-attempt incident as closed by attempt `attempt`'s success; None when
    there is none to close (no incident, one of this attempt or later, or one already told)."""
    with store.session() as s:
        latest = s.exec(select(IncidentRow).where(IncidentRow.job_id == job_id, IncidentRow.attempt < attempt)
                        .order_by(col(IncidentRow.attempt).desc())).first()
        if latest is None:
            return None
        newer = s.exec(select(IncidentRow.id).where(IncidentRow.job_id == job_id,
                                                    IncidentRow.attempt >= attempt)).first()
        found = _locked_incident(s, latest.id) if newer is None else None
        if found is None:
            return None
        current = _incident(found)
        line = f"Attempt {attempt} of job {job_id} succeeded"
        if any(c.startswith(line) for c in current.changes):
            return None  # this success was told already (a redelivered event)
        if current.state == "resolved":
            new = current.model_copy(update={"revision": current.revision + 1, "updated_at": now,
                                              "changes": [f"{line}: the fix held"]})
            s.add(RevisionRow(incident_id=new.id, revision=new.revision,
                              diagnosis=new.diagnosis.model_dump(mode="json"), changes=new.changes, created_at=now))
        else:  # resolving is not a new diagnosis: the revision stays, as store.resolve keeps it
            new = current.model_copy(update={"state": "resolved", "updated_at": now,
                                              "changes": [f"{line}: resolved by the job's own recovery"]})
        _fill(found, new)
        s.add(found)
        if on_saved is not None:
            s.flush()
            on_saved(SqlNotifyTx(s), new, current)
        return new
