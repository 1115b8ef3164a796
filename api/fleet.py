"""The fleet API: GET /v1/fleet/hosts/{host} (one host's incidents across jobs, oldest first) and
GET /v1/fleet/hosts/{host}/rma (its hardware evidence for a vendor return, JSON or Markdown). Reads, like the
history API: open unless a read token is set (api/scopes.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import PlainTextResponse, Response

from api.history import TROUBLE, NowDep, answers
from catalog.loader import Catalog
from store.fleet import HostIncident, RmaBundle, host_incidents, rma_bundle, rma_markdown
from store.incidents import Store
from store.queries import IncidentFilter, parse_since

Since = Annotated[str | None, Query(description="7d, 24h, 30m, 2w or an ISO date")]


def fleet_router(store: Store, catalog: Catalog, public_url: str) -> APIRouter:
    router = APIRouter(prefix="/v1/fleet")

    @router.get("/hosts/{host}", tags=["fleet"], response_model=list[HostIncident], responses=TROUBLE)
    def get_host(host: str, now: NowDep, cluster: str | None = None, since: Since = None) -> list[HostIncident]:
        with answers():
            f = IncidentFilter(since=parse_since(since, now) if since else None)
            return host_incidents(store, catalog, host, public_url, cluster, f)

    @router.get("/hosts/{host}/rma", tags=["fleet"], response_model=RmaBundle,
                responses={**TROUBLE, 404: {"description": "no hardware incident on this host"},
                           200: {"content": {"text/markdown": {}}}})
    def get_rma(host: str, now: NowDep, cluster: str | None = None, since: Since = None,
                format: Literal["json", "markdown"] = "json") -> Response | RmaBundle:
        with answers():
            f = IncidentFilter(since=parse_since(since, now) if since else None)
            bundle = rma_bundle(store, catalog, host, now, public_url, cluster, f)
        if bundle is None:
            raise HTTPException(status_code=404, detail=f"no hardware incident on {host}")
        if format == "markdown":
            return PlainTextResponse(rma_markdown(bundle), media_type="text/markdown; charset=utf-8",
                                     headers={"Content-Disposition": f'attachment; filename="rma-{_file(host)}.md"'})
        return bundle

    return router


def _file(host: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in host)[:100]
