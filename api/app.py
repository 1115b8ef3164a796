"""The FastAPI application: ingest, and (as they land) incident history, subscriptions and the catalog."""

from __future__ import annotations

from fastapi import FastAPI

from api.history import history_router
from api.ingest import ingest_router
from api.limits import BodyLimit
from api.scopes import ReadScope
from api.subscriptions import subscriptions_router
from api.web import static_files, web_router
from catalog.loader import default_catalog
from config.settings import Settings
from config.version import __version__
from ingest.dispatch import Dispatcher
from notifiers.webhook_policy import WebhookPolicy
from store.incidents import Store


def create_app(settings: Settings, dispatcher: Dispatcher, store: Store) -> FastAPI:
    app = FastAPI(title="firstfault", version=__version__,
                  description="Which rank or node failed first, why, what to do, and how to verify the fix.")
    app.state.settings, app.state.store = settings, store
    app.add_middleware(BodyLimit)  # every body bounded before a route reads it (api/limits.py)
    if settings.api_read_token:  # reads need a token too (api/scopes.py); writes always need the write token
        app.add_middleware(ReadScope, read=settings.api_read_token, write=settings.api_token)
    app.include_router(ingest_router(dispatcher, settings.api_token))
    catalog = default_catalog()
    app.include_router(history_router(store, catalog, settings.api_token))
    policy = WebhookPolicy.parse(settings.webhook_allow_hosts, settings.webhook_allow_http_loopback)
    app.include_router(subscriptions_router(store, settings.api_token, policy))
    app.include_router(web_router(store, catalog))
    app.mount("/static", static_files(), name="static")

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
