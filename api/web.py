"""Web pages served by the app itself (Jinja2, one CSS and one JS file, no CDN): the incident list with filters,
an incident with its cross-rank timeline, repeat offenders, and the catalog encyclopedia.

Everything from a log is escaped by Jinja's autoescape; the timeline SVG escapes its own text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.staticfiles import StaticFiles

from api.history import clock_of
from api.subscriptions import out
from api.timeline import timeline_svg
from catalog.loader import Catalog
from schemas.errors import RetryableError, UsageError
from schemas.text import rank_ranges, spans_text
from store.fleet import host_incidents, rma_bundle
from store.incidents import Store
from store.offenders import offenders
from store.queries import IncidentFilter, incident_detail, list_incidents, parse_since

HERE = Path(__file__).parent
FILTERS = ("since", "tag", "signature", "cluster", "host", "team", "state", "severity", "q")


def static_files() -> StaticFiles:
    return StaticFiles(directory=HERE / "static")


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
    env.filters["ranks"] = rank_ranges
    env.filters["rank_spans"] = lambda g: spans_text(g.rank_spans, g.rank_count)
    env.filters["when"] = lambda t: t.strftime("%Y-%m-%d %H:%M:%S") + "Z" if t else "no clock"
    env.filters["pct"] = lambda x: f"{x:.0%}" if x is not None else "-"
    return env


def _filter_of(values: dict[str, str], request: Request) -> IncidentFilter:
    since = values.get("since")
    state, severity = values.get("state") or None, values.get("severity") or None
    if state not in (None, "open", "resolved"):
        raise UsageError(f"state {state!r}: open or resolved")
    if severity not in (None, "critical", "error", "warning", "info"):
        raise UsageError(f"severity {severity!r}: critical, error, warning or info")
    return IncidentFilter(since=parse_since(since, clock_of(request)) if since else None,
                          tag=values.get("tag") or None, signature=values.get("signature") or None,
                          cluster=values.get("cluster") or None, host=values.get("host") or None,
                          team=values.get("team") or None, state=state, severity=severity,
                          text=values.get("q") or None)


def web_router(store: Store, catalog: Catalog) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    env = _environment()

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**context), status_code=status)

    def trouble(exc: Exception) -> HTMLResponse:
        status = 503 if isinstance(exc, RetryableError) else 400
        return page("error.html", status=status, message=str(exc))

    @router.get("/")
    def home() -> Response:
        return RedirectResponse("/incidents", status_code=303)

    @router.get("/incidents")
    def incidents(request: Request) -> HTMLResponse:
        values = {k: request.query_params.get(k, "") for k in FILTERS}
        try:
            f = _filter_of(values, request)
            result = list_incidents(store, f, 50, request.query_params.get("cursor") or None)
        except (UsageError, RetryableError) as exc:
            return page("incidents.html", status=400 if isinstance(exc, UsageError) else 503, values=values,
                        page=None, error=str(exc), next_url=None)
        next_url = str(request.url.include_query_params(cursor=result.next_cursor)) if result.next_cursor else None
        return page("incidents.html", values=values, page=result, error=None, next_url=next_url)

    @router.get("/incidents/{incident_id}")
    def incident(incident_id: str) -> HTMLResponse:
        try:
            detail = incident_detail(store, incident_id)
        except RetryableError as exc:
            return trouble(exc)
        if detail is None:
            return page("error.html", status=404, message=f"No incident {incident_id}.")
        d = detail.incident.diagnosis
        sig = catalog.get(d.root_cause.signature) if d.root_cause and d.root_cause.signature else None
        svg = Markup(timeline_svg(d))  # safe: timeline_svg escapes every text it draws
        return page("incident.html", detail=detail, inc=detail.incident, d=d, rc=d.root_cause, sig=sig, svg=svg)

    @router.get("/offenders")
    def offenders_page(request: Request) -> HTMLResponse:
        values = {k: request.query_params.get(k, "") for k in FILTERS}
        try:
            found = offenders(store, catalog, _filter_of(values, request))
        except (UsageError, RetryableError) as exc:
            return trouble(exc)
        return page("offenders.html", offenders=found, values=values)

    @router.get("/fleet/{host}")
    def host_page(request: Request, host: str) -> HTMLResponse:
        cluster = request.query_params.get("cluster") or None
        try:
            found = host_incidents(store, catalog, host, "", cluster)
            bundle = rma_bundle(store, catalog, host, clock_of(request), "", cluster)
        except RetryableError as exc:
            return trouble(exc)
        if not found:
            return page("error.html", status=404, message=f"No incident has its root cause on {host}.")
        return page("fleet_host.html", host=host, cluster=cluster, incidents=found, bundle=bundle)

    @router.get("/subscriptions")
    def subscriptions_page() -> HTMLResponse:
        try:
            with store.notify() as tx:
                found = [out(x) for x in tx.subscriptions()]  # masked as the API shows them
        except RetryableError as exc:
            return trouble(exc)
        return page("subscriptions.html", subscriptions=found)

    @router.get("/catalog")
    def catalog_page(q: str = "") -> HTMLResponse:
        found = catalog.search(q) if q.strip() else list(catalog.signatures)
        return page("catalog.html", signatures=found, q=q, total=len(catalog))

    @router.get("/catalog/{signature_id}")
    def signature_page(signature_id: str) -> HTMLResponse:
        sig = catalog.get(signature_id)
        if sig is None:
            return page("error.html", status=404, message=f"No catalog entry {signature_id}.")
        related = [r for r in (catalog.get(i) for i in sig.related) if r is not None]
        return page("signature.html", s=sig, related=related)

    return router
