"""The FastAPI application: ingest, and (as they land) incident history, subscriptions and the catalog."""

from __future__ import annotations

from fastapi import FastAPI, Response
from fastapi.responses import JSONResponse

from api.fleet import fleet_router
from api.history import history_router
from api.ingest import ingest_router
from api.limits import BodyLimit
from api.scopes import ReadScope
from api.slack_actions import SlackActions, slack_actions_router
from api.subscriptions import subscriptions_router
from api.verification import verification_router
from api.web import static_files, web_router
from catalog.loader import Catalog, default_catalog
from config.settings import Settings
from config.version import __version__
from ingest.dispatch import Dispatcher
from notifiers.slack_post import SlackPost
from notifiers.webhook_policy import WebhookPolicy
from notifiers.wiring import notify_settings
from pipeline import metrics
from runtime.health import EMBEDDED, checks, readiness
from store.actions import ActionStore
from store.gauges import depths
from store.incidents import Store


def create_app(settings: Settings, dispatcher: Dispatcher, store: Store,
               needs: tuple[str, ...] = EMBEDDED, catalog: Catalog | None = None) -> FastAPI:
    """`needs`: the dependencies /readyz checks (runtime/health.py: the embedded mode's database, or the
    distributed mode's database, Redis and Kafka). `catalog`: the one the process's Pipeline matches with (serve
    passes its matcher's), so that the pages and the posts name what the scans found; loaded when not given."""
    app = FastAPI(title="firstfault", version=__version__,
                  description="Which rank or node failed first, why, what to do, and how to verify the fix.")
    app.state.settings, app.state.store = settings, store
    app.add_middleware(BodyLimit)  # every body bounded before a route reads it (api/limits.py)
    if settings.api_read_token:  # reads need a token too (api/scopes.py); writes always need the write token
        app.add_middleware(ReadScope, read=settings.api_read_token, write=settings.api_token)
    app.include_router(ingest_router(dispatcher, settings.api_token))
    catalog = catalog if catalog is not None else default_catalog()
    app.state.catalog = catalog
    app.include_router(history_router(store, catalog, settings.api_token))
    app.include_router(fleet_router(store, catalog, settings.public_url))
    policy = WebhookPolicy.parse(settings.webhook_allow_hosts, settings.webhook_allow_http_loopback)
    app.include_router(subscriptions_router(store, settings.api_token, policy))
    app.include_router(verification_router(store, catalog, settings.api_token))
    app.include_router(web_router(store, catalog))
    if settings.slack_signing_secret:  # Slack's interactivity Request URL (api/slack_actions.py)
        app.include_router(slack_actions_router(SlackActions(
            store, ActionStore(store), SlackPost(notify_settings(settings)), catalog, settings.slack_signing_secret)))
    app.mount("/static", static_files(), name="static")

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    ready = checks(settings, store, needs)
    metrics.watch_store(lambda: depths(store))

    @app.get("/readyz", tags=["ops"], responses={503: {"description": "a dependency is unreachable"}})
    def readyz() -> JSONResponse:
        """200 when every dependency answers; 503 naming the ones that did not (a probe takes it out of service)."""
        found = readiness(ready)
        failed = sorted(name for name, state in found.items() if state != "ok")
        body = {"status": "ok" if not failed else "unavailable", "failed": failed, "checks": found}
        return JSONResponse(body, status_code=503 if failed else 200)

    @app.get("/metrics", tags=["ops"], include_in_schema=False)
    def prometheus() -> Response:
        return Response(metrics.scrape(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return app
