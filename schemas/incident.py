"""An incident: one failed job attempt's diagnosis as the service keeps it, revised as late evidence arrives."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.diagnosis import Diagnosis
from schemas.verification import Verification

IncidentState = Literal["open", "resolved"]
Severity = Literal["critical", "error", "warning", "info"]


def incident_id(job_id: str, attempt: int = 0) -> str:
    """Stable id of a job attempt's incident: every redelivery and revision lands on the same row."""
    digest = hashlib.sha256(f"{job_id}\x00{attempt}".encode()).hexdigest()[:16]
    return f"inc-{digest}"


class Incident(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    job_id: str
    attempt: int = 0
    cluster: str | None = None
    team: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    state: IncidentState = "open"
    revision: int = Field(default=1, ge=1)
    severity: Severity = "error"
    created_at: datetime
    updated_at: datetime
    diagnosis: Diagnosis
    changes: list[str] = Field(default_factory=list, description="what this revision changed, for a follow-up")
    verification: Verification | None = Field(None, description="the latest verification of the fix")
    repeats: int = Field(0, ge=0, description="earlier attempts of this job that failed the same way, in a row")
    regression_of: str | None = Field(None, description=(
        "a resolved incident of another job or attempt with the same signature on the same host: this one is "
        "its regression (the fix did not hold, or the node came back unfixed)"))
    regressed_by: str | None = Field(None, description=(
        "the newest later incident that is this one's regression: the earlier thread is told it failed again"))

    @property
    def signature(self) -> str | None:
        rc = self.diagnosis.root_cause
        return rc.signature if rc else None

    @property
    def tags(self) -> list[str]:
        rc = self.diagnosis.root_cause
        return list(rc.tags) if rc else []

    @property
    def category(self) -> str | None:
        rc = self.diagnosis.root_cause
        return rc.category if rc else None

    @property
    def rank(self) -> int | None:
        rc = self.diagnosis.root_cause
        return rc.rank if rc else None

    @property
    def host(self) -> str | None:
        rc = self.diagnosis.root_cause
        return rc.host if rc else None

    @property
    def hosts(self) -> list[str]:
        """Every host the diagnosis names: the initiator's and the collateral's."""
        seen: dict[str, None] = {}
        if self.host:
            seen[self.host] = None
        for group in self.diagnosis.collateral:
            for h in group.hosts:
                seen[h] = None
        return list(seen)
