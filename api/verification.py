"""POST /v1/incidents/{id}/verification: a verification someone ran elsewhere (a CI job, a runbook), judged here by
the incident's catalog entry (its `expect`, else exit status 0) and recorded: a pass resolves the incident as
verified, a fail reopens it; the Slack post and the PagerDuty alert follow through the outbox. Needs the bearer
token."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, Field

from api.history import TROUBLE, NowDep, answers
from api.ingest import bearer_guard
from catalog.loader import Catalog
from notifiers.outbox import collateral_ids, on_saved
from pipeline.verification import Report, verify
from schemas.incident import Incident
from schemas.verification import Verification
from store.incidents import Store

MAX_OUTPUT_CHARS = 1 << 20


class VerificationIn(BaseModel):
    by: str = Field(min_length=1, max_length=200, description="who ran it")
    command: str = Field(default="", max_length=4_000, description="what was run")
    exit_code: int | None = Field(None, description="its exit status: judged with the output")
    output: str = Field(default="", max_length=MAX_OUTPUT_CHARS, description="its output (the end matters most)")
    result: Literal["pass", "fail"] | None = Field(None, description="stated instead of judged")


class Verified(BaseModel):
    incident: Incident
    verification: Verification


def verification_router(store: Store, catalog: Catalog, token: str | None = None) -> APIRouter:
    router = APIRouter(prefix="/v1")
    collateral = collateral_ids(catalog)

    @router.post("/incidents/{incident_id}/verification", tags=["history"], response_model=Verified,
                 dependencies=[Depends(bearer_guard(token))],
                 responses={400: {"description": "neither an exit code nor a stated result"},
                            401: {"description": "missing or wrong bearer token"},
                            404: {"description": "no such incident"}, 503: TROUBLE[503]})
    def post_verification(incident_id: str, body: VerificationIn, now: NowDep) -> Verified:
        """Judge and record the result; the incident's new revision says what was run and what came of it."""
        report = Report(by=body.by, command=body.command, exit_code=body.exit_code, output=body.output,
                        result=body.result, reported=True)
        with answers():
            done = None if "\x00" in incident_id else verify(store, catalog, incident_id, report, now,
                                                               on_saved(lambda: now, collateral))
        if done is None or done.verification is None:
            raise HTTPException(status_code=404, detail=f"no incident {incident_id!r}")
        return Verified(incident=done, verification=done.verification)

    return router
