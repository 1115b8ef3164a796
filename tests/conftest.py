"""Fixtures shared across the suite: databases (SQLite files, a fresh PostgreSQL database per session), and a
private cache directory so that no test writes to the user's own."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.store.backends import sql_store

BROKER = "redis://127.0.0.1:6379/9"  # Celery tests: each uses its own key prefix and queue
PG_ADMIN = os.environ.get("FIRSTFAULT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def _pg_admin_connect():  # type: ignore[no-untyped-def]
    import psycopg

    try:
        return psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:  # CI starts PostgreSQL; a laptop may not have it
        pytest.skip(f"PostgreSQL not reachable at {PG_ADMIN}: {exc}")


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A new, empty PostgreSQL database for this test session, dropped afterwards."""
    name = f"ff_test_{uuid.uuid4().hex[:10]}"
    with _pg_admin_connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    with _pg_admin_connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'firstfault.db'}"


@pytest.fixture
def fresh_pg_url(pg_url: str) -> Iterator[str]:
    """pg_url with every table emptied first, so each test starts from nothing."""
    import sqlalchemy as sa

    from store.db import make_engine

    engine = make_engine(pg_url)
    with engine.begin() as conn:
        tables = [r[0] for r in conn.execute(sa.text(
            "select tablename from pg_tables where schemaname = 'public' and tablename <> 'alembic_version'"))]
        if tables:
            conn.execute(sa.text("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " CASCADE"))
    engine.dispose()
    yield pg_url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each store test runs on SQLite (embedded) and on PostgreSQL (distributed)."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    request.applymarker(pytest.mark.integration)
    return str(request.getfixturevalue("fresh_pg_url"))


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def notify_store(request: pytest.FixtureRequest) -> Iterator[object]:
    """Each NotifyStore implementation (store/ports.py): the in-memory one, SQLite, and PostgreSQL (integration)."""
    from store.testing import MemoryNotifyStore

    if request.param == "memory":
        yield MemoryNotifyStore()
        return
    opened = sql_store(request)
    yield opened
    opened.close()


@pytest.fixture(autouse=True, scope="session")
def _private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The scanner cache ($XDG_CACHE_HOME/firstfault) goes to a temporary directory, for the CLI run in a
    subprocess as well."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A test that runs the CLI or `serve` in-process has pipeline.logs.configure point the root logger at that
    test's captured stderr, which is closed once the test ends: a client thread another test left behind (a Kafka
    producer retrying a stopped broker) would then print "--- Logging error ---" into whichever test runs next."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def broker_prefix() -> Iterator[str]:
    """A key prefix and queue of this test's own: other runs may share the machine's Redis."""
    client = redis.Redis.from_url(BROKER)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        pytest.skip(f"Redis not reachable at {BROKER}: {exc}")
    prefix = f"fftest-{uuid.uuid4().hex[:8]}-"
    yield prefix
    for key in client.scan_iter(match=f"{prefix}*"):
        client.delete(key)
    client.close()
