"""The history API: GET /v1/incidents (filtered, paginated), /v1/incidents/{id}, /v1/stats, /v1/offenders,
/v1/catalog and /v1/catalog/{id}; POST /v1/incidents/{id}/resolve. Reads are open; writes (ingest, subscriptions,
resolve) need the bearer token.

Bad filters answer 400 with the reason, an unknown id 404, an unreachable database 503 with Retry-After.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import BaseModel, Field

from api.ingest import bearer_guard
from catalog.loader import Catalog
from catalog.model import Signature
from notifiers.outbox import collateral_ids, on_saved
from schemas.clock import Clock, system_clock
from schemas.errors import RetryableError, UsageError
from schemas.incident import Incident
from schemas.wire import JobEvent
from store.impact_stats import CostStats, stats_with_cost
from store.incidents import Store
from store.offenders import Offender, offenders
from store.queries import (
    MAX_LIMIT,
    IncidentDetail,
    IncidentFilter,
    IncidentPage,
    incident_detail,
    list_incidents,
    parse_since,
)


class IncidentList(IncidentPage):
    next: str | None = None  # this query's next page, as a URL relative to the server


class ResolveIn(BaseModel):
    note: str = Field(default="", max_length=2000, description="what was done; the Slack thread reply says it")


class Resolved(BaseModel):
    incident: Incident
    resolved_now: bool = Field(description="false when it was already resolved: nothing was sent again")


class CatalogEntry(BaseModel):
    id: str
    title: str
    category: str
    severity: str
    role: str
    scope: str
    tags: list[str]
    generic: bool


@dataclass(frozen=True)
class Filters:
    """The query parameters every history endpoint shares, parsed once."""

    since: str | None
    tag: str | None
    signature: str | None
    cluster: str | None
    host: str | None
    team: str | None
    state: Literal["open", "resolved"] | None
    severity: Literal["critical", "error", "warning", "info"] | None
    q: str | None

    def parse(self, now: datetime) -> IncidentFilter:
        return IncidentFilter(since=parse_since(self.since, now) if self.since else None, tag=self.tag,
                              signature=self.signature, cluster=self.cluster, host=self.host, team=self.team,
                              state=self.state, severity=self.severity, text=self.q)


def filters(
    since: Annotated[str | None, Query(description="7d, 24h, 30m, 2w or an ISO date")] = None,
    tag: Annotated[str | None, Query(description="a catalog tag: nccl, xid, ecc, ib …")] = None,
    signature: Annotated[str | None, Query(description="a catalog id or glob: nccl.*")] = None,
    cluster: str | None = None,
    host: Annotated[str | None, Query(description="the initiating host or any host named")] = None,
    team: str | None = None,
    state: Literal["open", "resolved"] | None = None,
    severity: Literal["critical", "error", "warning", "info"] | None = None,
    q: Annotated[str | None, Query(description="words anywhere in the diagnosis or the job id")] = None,
) -> Filters:
    return Filters(since, tag, signature, cluster, host, team, state, severity, q)


@contextmanager
def answers() -> Iterator[None]:
    """Our errors as HTTP answers: a bad query is the caller's (400), a database hiccup is transient (503)."""
    try:
        yield
    except UsageError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from exc
    except RetryableError as exc:
        raise HTTPException(status_code=503, detail=str(exc), headers={"Retry-After": "5"}) from exc


def clock_of(request: Request) -> datetime:
    clock: Clock = getattr(request.app.state, "clock", system_clock)  # tests set a ManualClock
    return clock()


TROUBLE: dict[int | str, dict[str, object]] = {
    400: {"description": "a bad filter or cursor, with the reason"},
    503: {"description": "the database is unreachable; retry after Retry-After seconds"},
}
FiltersDep = Annotated[Filters, Depends(filters)]
NowDep = Annotated[datetime, Depends(clock_of)]


def entry(s: Signature) -> CatalogEntry:
    return CatalogEntry(id=s.id, title=s.title, category=s.category.value, severity=s.severity.value,
                        role=s.role.value, scope=s.scope.value, tags=list(s.tags), generic=s.generic)


def history_router(store: Store, catalog: Catalog, token: str | None = None) -> APIRouter:
    router = APIRouter(prefix="/v1")
    collateral = collateral_ids(catalog)

    @router.get("/incidents", tags=["history"], response_model=IncidentList, responses=TROUBLE)
    def get_incidents(request: Request, f: FiltersDep, now: NowDep,
                      limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
                      cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
                      ) -> IncidentList:
        with answers():
            page = list_incidents(store, f.parse(now), limit, cursor)
        nxt = None
        if page.next_cursor:
            nxt = str(request.url.include_query_params(cursor=page.next_cursor)).removeprefix(
                str(request.base_url).rstrip("/"))
        return IncidentList(**page.model_dump(), next=nxt)

    @router.get("/incidents/{incident_id}", tags=["history"], response_model=IncidentDetail,
                responses={404: {"description": "no such incident"}, 503: TROUBLE[503]})
    def get_incident(incident_id: str) -> IncidentDetail:
        with answers():
            detail = incident_detail(store, incident_id)
        if detail is None:
            raise HTTPException(status_code=404, detail=f"no incident {incident_id!r}")
        return detail

    @router.get("/jobs/{job_id}", tags=["history"], response_model=JobEvent,
                responses={404: {"description": "no event of this job yet"}, 503: TROUBLE[503]})
    def get_job(job_id: str) -> JobEvent:
        """The job's latest event as received: `firstfault ship --follow` stops once its state is not `started`."""
        with answers():
            event = None if "\x00" in job_id else store.job_event(job_id)
        if event is None:
            raise HTTPException(status_code=404, detail=f"no job {job_id!r}")
        return event

    @router.post("/incidents/{incident_id}/resolve", tags=["history"], response_model=Resolved,
                 dependencies=[Depends(bearer_guard(token))],
                 responses={400: {"description": "a body that cannot be read (not UTF-8)"},
                            401: {"description": "missing or wrong bearer token"},
                            404: {"description": "no such incident"}, 503: TROUBLE[503]})
    def resolve_incident(incident_id: str, now: NowDep, body: ResolveIn | None = None) -> Resolved:
        """Mark it resolved; its notifications (Slack thread reply, PagerDuty resolve) are queued in the same
        transaction. Resolving again changes nothing and sends nothing."""
        with answers():
            done = None if "\x00" in incident_id else store.resolve(
                incident_id, body.note.strip() if body else "", now, on_saved(lambda: now, collateral))
        if done is None:
            raise HTTPException(status_code=404, detail=f"no incident {incident_id!r}")
        return Resolved(incident=done[0], resolved_now=done[1])

    @router.get("/stats", tags=["history"], response_model=CostStats, responses=TROUBLE)
    def get_stats(f: FiltersDep, now: NowDep, top: Annotated[int, Query(ge=1, le=100)] = 10) -> CostStats:
        with answers():
            return stats_with_cost(store, f.parse(now), top=top)

    @router.get("/offenders", tags=["history"], response_model=list[Offender], responses=TROUBLE)
    def get_offenders(f: FiltersDep, now: NowDep,
                      min_jobs: Annotated[int, Query(ge=1, le=1000)] = 2) -> list[Offender]:
        with answers():
            return offenders(store, catalog, f.parse(now), min_jobs)

    @router.get("/catalog", tags=["catalog"], response_model=list[CatalogEntry])
    def get_catalog(q: Annotated[str | None, Query(description="search ids, titles and examples")] = None,
                    tag: str | None = None, category: str | None = None) -> list[CatalogEntry]:
        found = catalog.search(q) if q else list(catalog.signatures)
        return [entry(s) for s in found
                if (tag is None or tag in s.tags) and (category is None or s.category.value == category)]

    @router.get("/catalog/{signature_id}", tags=["catalog"], response_model=Signature,
                responses={404: {"description": "no such catalog entry"}})
    def get_signature(signature_id: str) -> Signature:
        sig = catalog.get(signature_id)
        if sig is None:
            raise HTTPException(status_code=404, detail=f"no catalog entry {signature_id!r}")
        return sig

    return router
