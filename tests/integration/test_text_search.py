"""Incident text search on PostgreSQL: pg_trgm's indexes serve it, and a server that refuses the extension still
migrates and searches (by scanning)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from sqlmodel import select

from schemas.diagnosis import Diagnosis, RootCause
from schemas.incident import Incident, incident_id
from store.incidents import Store
from store.queries import IncidentFilter, conditions, list_incidents
from store.tables import IncidentRow
from tests.conftest import PG_ADMIN, _pg_admin_connect
from tests.pipeline.helpers import failed_job

pytestmark = pytest.mark.integration
T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
INDEXES = {"ix_incidents_diagnosis_trgm", "ix_incidents_job_id_trgm"}


def _save(store: Store, job: str, title: str) -> None:
    store.record_job(failed_job(job), T0)
    diag = Diagnosis(verdict="diagnosed", root_cause=RootCause(signature="xid.79", title=title, category="gpu",
                                                               rank=3, host="n1", confidence=0.9))
    store.save_incident(job, lambda _cur: Incident(id=incident_id(job), job_id=job, created_at=T0, updated_at=T0,
                                                   diagnosis=diag))


def _indexes(store: Store) -> set[str]:
    with store.engine.connect() as conn:
        return {r[0] for r in conn.execute(sa.text("SELECT indexname FROM pg_indexes WHERE tablename = 'incidents'"))}


def test_the_text_query_is_one_the_trigram_indexes_serve(fresh_pg_url: str) -> None:
    store = Store.open(fresh_pg_url)
    try:
        _save(store, "job-a", "GPU fell off the bus")
        _save(store, "job-b", "NCCL watchdog timeout")
        assert _indexes(store) >= INDEXES
        query = select(IncidentRow.id).where(*conditions(IncidentFilter(text="fell off")))
        sql = str(query.compile(store.engine, compile_kwargs={"literal_binds": True}))
        with store.engine.begin() as conn:
            conn.execute(sa.text("SET LOCAL enable_seqscan = off"))  # few rows: make the planner show its options
            plan = "\n".join(r[0] for r in conn.execute(sa.text(f"EXPLAIN {sql}")))
        # an index whose expression differed from the query's by a cast or a lower() would never be used
        assert "ix_incidents_diagnosis_trgm" in plan and "ix_incidents_job_id_trgm" in plan, plan
        page = list_incidents(store, IncidentFilter(text="fell off"))
        assert [i.job_id for i in page.items] == ["job-a"]
    finally:
        store.close()


@pytest.fixture
def url_without_extension_rights() -> Iterator[str]:
    """A database whose owner-less login may create tables but not extensions."""
    name, role = f"ff_noext_{uuid.uuid4().hex[:8]}", f"ff_noext_{uuid.uuid4().hex[:8]}"
    with _pg_admin_connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'REVOKE CREATE ON DATABASE "{name}" FROM PUBLIC')
    base = PG_ADMIN.rsplit("/", 1)[0]
    import psycopg

    with psycopg.connect(f"{base}/{name}", autocommit=True) as conn:
        conn.execute(f'GRANT CREATE, USAGE ON SCHEMA public TO "{role}"')
    yield base.replace("postgres@", f"{role}@", 1) + f"/{name}"
    with _pg_admin_connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_a_server_that_refuses_pg_trgm_still_migrates_and_searches(url_without_extension_rights: str) -> None:
    store = Store.open(url_without_extension_rights)
    try:
        assert not INDEXES & _indexes(store)
        _save(store, "job-a", "GPU fell off the bus")
        assert [i.job_id for i in list_incidents(store, IncidentFilter(text="FELL OFF")).items] == ["job-a"]
    finally:
        store.close()
