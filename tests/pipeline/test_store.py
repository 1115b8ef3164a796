"""What only the SQL store has, on SQLite and on PostgreSQL: its migrations and the counters' tables. What every
JobStore promises (the in-memory one too) is tests/store/test_job_contract.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlmodel import SQLModel

from correlator.shards import SourceKey
from store.incidents import Store
from tests.pipeline.helpers import failed_job

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
TEXT_SEARCH_INDEXES = {"ix_incidents_diagnosis_trgm", "ix_incidents_job_id_trgm"}
KEY = SourceKey("stdout", 3, "node001", "node001/rank3.log")
SCANNED = {"lines": 10, "bytes": 100, "findings": [], "context": []}


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = Store.open(db_url)
    yield opened
    opened.close()


def test_migrations_create_exactly_the_models(store: Store) -> None:
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    # PostgreSQL's trigram indexes (migration 0004) are expressions with an operator class: not in the models
    assert [d for d in diff if not (d[0] == "remove_index" and d[1].name in TEXT_SEARCH_INDEXES)] == []


def test_migrating_twice_is_harmless(db_url: str) -> None:
    Store.open(db_url).close()
    again = Store.open(db_url)
    again.record_job(failed_job("j"), T0)
    again.close()


def test_the_shards_stored_before_the_sources_table_are_counted_by_its_migration(db_url: str) -> None:
    """Migration 0009 fills job_sources and the jobs' counters from the shards already stored: a job in flight
    during the upgrade is decided as if it had been counted all along."""
    import sqlalchemy as sa
    from alembic import command
    from alembic.config import Config

    from store.db import MIGRATIONS, make_engine

    engine = make_engine(db_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
        command.downgrade(cfg, "0008")  # (its downgrade works too)
    event = failed_job("j", world_size=2).model_dump(mode="json")
    rows = [(KEY, 0, False), (KEY, 1, True), (SourceKey("stdout", 5, "node002", "node002/rank5.log"), 1, True)]
    with engine.begin() as conn:
        conn.execute(sa.text("insert into jobs (job_id, attempt, state, event, created_at, updated_at) values "
                             "('j', 0, 'failed', :event, :t, :t)"), {"event": json.dumps(event), "t": T0})
        for key, seq, eof in rows:
            conn.execute(sa.text(
                "insert into shards (job_id, source_token, stream, rank, host, name, seq, eof, lines, bytes, "
                "scanned, received_at) values ('j', :token, :stream, :rank, :host, :name, :seq, :eof, 1, 1, '{}', :t)"),
                {"token": key.token, "stream": key.stream, "rank": key.rank, "host": key.host, "name": key.name,
                 "seq": seq, "eof": eof, "t": T0})
    engine.dispose()
    store = Store.open(db_url)
    try:
        found = store.job_progress("j")
        assert (found.counts.sources, found.counts.ended, found.counts.ended_ranks) == (2, 2, 2)
        assert found.complete == {KEY} and len(found.seen) == 2  # rank 5 ended with seq 0 missing
        assert found.changes == 3
        store.record_shard("j", rows[2][0], 0, False, SCANNED, T0)
        assert store.job_progress("j").complete == found.seen  # and goes on counting from there
    finally:
        store.close()
