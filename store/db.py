"""Engines and migrations. SQLite by default (a file, no service), PostgreSQL by URL; Alembic owns the schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Engine

from correlator.shards import ScanJSON
from schemas.errors import TransportError, UsageError

MIGRATIONS = Path(__file__).with_name("migrations")


def normalize_url(url: str) -> str:
    """postgresql:// means psycopg 3 here (the driver we install), not psycopg2."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")  # readers (the CLI, the API) never block the pipeline's writer
    # WAL's NORMAL: a commit no longer waits for fsync (the WAL is synced at checkpoints). A crash of the process
    # loses nothing committed; a power cut may lose the last commits, never corrupts. The embedded mode's queue
    # is in memory anyway, so a power cut loses its queued shards whatever the database does; at one commit a
    # shard, FULL's fsync was 0.7 ms of each.
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _json(value: Any) -> str:
    """A JSON column's value as text: a scan's JSON made where it was scanned (correlator.shards.ScanJSON) as it
    is, anything else as SQLAlchemy's default serializer writes it."""
    return value.text if isinstance(value, ScanJSON) else json.dumps(value)


def make_engine(url: str) -> Engine:
    url = normalize_url(url)
    try:
        if url.startswith("sqlite"):
            path = sa.engine.make_url(url).database
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            engine = sa.create_engine(url, connect_args={"check_same_thread": False}, json_serializer=_json)
            sa.event.listen(engine, "connect", _sqlite_pragmas)
            return engine
        return sa.create_engine(url, pool_pre_ping=True, json_serializer=_json)
    except (sa.exc.ArgumentError, ImportError) as exc:
        raise UsageError(f"database URL {url!r}: {exc}") from exc


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
    except sa.exc.OperationalError as exc:
        raise TransportError(f"database unreachable: {exc.orig}") from exc
