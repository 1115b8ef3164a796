"""An app over a small seeded history (six incidents from generated logs), on SQLite and on PostgreSQL.

The history is read-only in these tests, so it is seeded once per session and engine: running the Pipeline on
six generated jobs is the slow part.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import httpx
import pytest

from api.app import create_app
from config.settings import Settings
from pipeline.embedded import EmbeddedRunner
from schemas.incident import Incident
from store.incidents import Store
from tests.api.seed import seed_history
from tests.api.server import serving
from tests.conftest import PG_ADMIN

NOW = datetime(2026, 12, 10, 12, 0, tzinfo=UTC)  # a day after the newest seeded incident
TOKEN = "s3cret-test-token"


@contextmanager
def scratch_pg() -> Iterator[str]:
    """A PostgreSQL database of our own (the session's shared one is emptied by other tests)."""
    import psycopg

    name = f"ff_hist_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {PG_ADMIN}: {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=5) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def engine_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('history') / 'firstfault.db'}"
        return
    with scratch_pg() as url:
        yield url


@pytest.fixture(scope="session")
def store(engine_url: str) -> Iterator[Store]:
    opened = Store.open(engine_url)
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def history(store: Store, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Incident]:
    return seed_history(store, tmp_path_factory.mktemp("logs"))


def history_app(store: Store, url: str):  # type: ignore[no-untyped-def]
    app = create_app(Settings(database_url=url, api_token=TOKEN), EmbeddedRunner(), store)
    app.state.clock = lambda: NOW
    return app


@pytest.fixture(scope="session")
def base_url(store: Store, history: dict[str, Incident], engine_url: str) -> Iterator[str]:
    """The app over the seeded history, served by uvicorn on 127.0.0.1; its clock reads NOW."""
    with serving(history_app(store, engine_url)) as url:
        yield url


@pytest.fixture
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30) as c:
        yield c
