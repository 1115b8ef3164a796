"""`firstfault serve`: the embedded pipeline in one process, or the distributed consumers.

The service's imports (FastAPI, SQLAlchemy, Celery, Kafka, and the settings model with its TOML reader and
logging) happen only when a service starts: the CLI imports this module for its parser, and `firstfault
diagnose` starts 15-20 ms sooner without them.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from schemas.errors import UsageError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from config.settings import Settings
    from pipeline.embedded import EmbeddedRunner
    from pipeline.service import Pipeline
    from store.incidents import OnSaved, Store


@dataclass
class Embedded:
    app: FastAPI
    runner: EmbeddedRunner
    pipeline: Pipeline
    store: Store


def build_embedded(settings: Settings, on_saved: OnSaved | None = None) -> Embedded:
    from api.app import create_app
    from pipeline.embedded import EmbeddedRunner
    from pipeline.sweep import resume_pending
    from runtime.build import pipeline_for, scan_pool_for
    from schemas.clock import system_clock
    from store.incidents import Store

    store = Store.open(settings.database_url)
    runner = EmbeddedRunner(queue_size=settings.queue_size, clock=system_clock,  # the pipeline's clock too
                            scan_pool=scan_pool_for(settings), max_bytes=settings.queue_bytes)
    pipeline = pipeline_for(settings, store, runner, on_saved, clock=system_clock)
    runner.bind(pipeline)
    resume_pending(store, runner)  # correlations the previous process had pending, timers and all, are re-armed
    return Embedded(create_app(settings, runner, store, catalog=pipeline.matcher.catalog), runner, pipeline, store)


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser("serve", help="run the pipeline: --embedded in one process, else the Kafka consumers")
    s.add_argument("--embedded", action="store_true", help="no Kafka, no Redis: HTTP ingest, SQLite by default")
    s.add_argument("--host", default=None)
    s.add_argument("--port", type=int, default=None)
    s.add_argument("--config", default=None, help="a TOML settings file (default: $FIRSTFAULT_CONFIG)")
    s.add_argument("--no-http", action="store_true", help="distributed: consume Kafka only, no HTTP ingest")
    s.add_argument("--insecure", action="store_true",
                   help="serve a non-loopback address without FIRSTFAULT_API_TOKEN (anyone who can reach it may "
                        "ingest, subscribe and resolve)")


    m = sub.add_parser("migrate", help="bring the database's schema up to date, then exit (a deployment's Job runs "
                                       "it once before serve and the workers start)")
    m.add_argument("--config", default=None, help="a TOML settings file (default: $FIRSTFAULT_CONFIG)")


def cmd_migrate(args: argparse.Namespace) -> int:
    from config.settings import load_settings
    from store.incidents import Store

    settings = load_settings(path=args.config)
    Store.open(settings.database_url).close()  # opening migrates (Alembic upgrade head; a no-op when current)
    print("database schema is up to date")
    return 0


def loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost: only this machine can connect."""
    import ipaddress

    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None, insecure: bool) -> None:
    """Secure by default: open writes (no token) are served only to this machine unless --insecure says so."""
    if token is None and not insecure and not loopback(host):
        raise UsageError(f"refusing to serve on {host} without an API token: set FIRSTFAULT_API_TOKEN "
                         "(writes then need it), or pass --insecure to leave writes open to the network")


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from config.settings import load_settings
    from pipeline import logs, tracing

    settings = load_settings(path=args.config)
    logs.configure(settings.log_format, settings.log_level)
    tracing.setup(settings.tracing, settings.otlp_endpoint)
    host, port = args.host or settings.http_host, args.port or settings.http_port
    if args.embedded or not args.no_http:
        check_exposure(host, settings.api_token, args.insecure)
    if args.embedded:
        from notifiers.loop import DeliveryLoop
        from notifiers.wiring import Deliverer

        embedded = build_embedded(settings)
        embedded.runner.start()
        delivery = DeliveryLoop(Deliverer.from_settings(settings, embedded.store)).start()
        try:
            uvicorn.run(embedded.app, host=host, port=port, log_level="info", log_config=None)
        finally:
            delivery.stop()
            embedded.runner.stop()
        return 0
    from firstfault.serve_distributed import run_distributed

    return run_distributed(settings, host, port, http=not args.no_http)
