"""A verification result, judged and recorded: what `firstfault verify` and POST /v1/incidents/{id}/verification
share. The judging is the catalog's (catalog/expect.py: the entry's `expect`, else exit status 0); the command and
the output are redacted before they are stored (correlator/redact.py), as a diagnosis is."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from catalog.expect import judge
from catalog.loader import Catalog
from correlator.redact import redact
from schemas.errors import UsageError
from schemas.incident import Incident
from schemas.verification import Verification, excerpt
from store.incidents import OnSaved, Store
from store.verification import record_verification


@dataclass(frozen=True)
class Report:
    """What was run and what came of it. ``result`` set: the reporter says pass or fail and nothing is judged
    (exit_code and output are kept when given)."""

    by: str
    command: str = ""
    exit_code: int | None = None
    output: str = ""
    result: Literal["pass", "fail"] | None = None
    reported: bool = False  # run elsewhere
    timed_out_after: float | None = None  # seconds: killed at its timeout, a fail whatever it printed


def judged(incident: Incident, catalog: Catalog, report: Report, now: datetime) -> Verification:
    sig = catalog.get(incident.signature) if incident.signature else None
    expect = sig.expect if sig else None
    if report.timed_out_after is not None:
        passed, reason = False, f"timed out after {report.timed_out_after:g} s and was killed"
        criterion = expect.describe() if expect else "exit status 0 (fallback: no structured `expect`)"
        fallback = expect is None
    elif report.result is not None:
        passed, reason = report.result == "pass", f"stated {report.result} by {report.by}"
        criterion = expect.describe() if expect else "exit status 0 (fallback: no structured `expect`)"
        fallback = expect is None
    elif report.exit_code is None:
        raise UsageError("a verification needs an exit code (or a stated result: pass or fail)")
    else:
        verdict = judge(expect, report.exit_code, report.output)
        passed, reason, criterion, fallback = verdict.passed, verdict.reason, verdict.criterion, verdict.fallback
    return Verification(status="passed" if passed else "failed", by=report.by, at=now,
                        command=redact(report.command), exit_code=report.exit_code,
                        output_excerpt=excerpt(redact(report.output)), criterion=criterion, reason=redact(reason),
                        fallback=fallback, reported=report.reported, stated=report.result is not None)


def verify(store: Store, catalog: Catalog, incident_id: str, report: Report, now: datetime,
           on_saved: OnSaved | None = None) -> Incident | None:
    """Judge ``report`` by the incident's catalog entry and record it (None: no such incident)."""
    incident = store.incident(incident_id)
    if incident is None:
        return None
    return record_verification(store, incident_id, judged(incident, catalog, report, now), now, on_saved)
