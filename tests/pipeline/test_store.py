"""The store on SQLite and on PostgreSQL: one suite, both engines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlmodel import SQLModel

from correlator.shards import SourceKey
from schemas.diagnosis import Diagnosis, RootCause
from schemas.incident import Incident, incident_id
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


def test_a_redelivered_shard_is_kept_once(store: Store) -> None:
    store.record_job(failed_job("j"), T0)
    assert store.record_shard("j", KEY, 0, False, SCANNED, T0).fresh is True
    assert store.record_shard("j", KEY, 0, False, SCANNED, T0).fresh is False
    assert store.record_shard("j", KEY, 1, True, SCANNED, T0).fresh is True
    view = store.job("j")
    assert sorted((s.seq, s.eof) for s in view.shards) == [(0, False), (1, True)]
    assert view.shards[0].key == KEY


def test_failed_at_is_when_the_failure_arrived_not_redeliveries(store: Store) -> None:
    store.record_job(failed_job("j"), T0)
    store.record_job(failed_job("j"), T0 + timedelta(minutes=5))
    assert store.job("j").failed_at == T0
    store.record_job(failed_job("j", attempt=1), T0 + timedelta(minutes=9))
    assert store.job("j").failed_at == T0 + timedelta(minutes=9)
    store.record_job(failed_job("j", attempt=0, state="succeeded"), T0 + timedelta(minutes=10))
    assert store.job("j").event.attempt == 1  # type: ignore[union-attr]


def test_schedule_enqueues_only_an_earlier_correlation(store: Store) -> None:
    store.record_job(failed_job("j"), T0)
    assert store.schedule("j", T0 + timedelta(seconds=30), T0)
    assert not store.schedule("j", T0 + timedelta(seconds=40), T0)
    assert store.schedule("j", T0 + timedelta(seconds=5), T0)
    store.unschedule("j")
    assert store.job("j").correlate_at is None
    assert store.schedule("j", T0 + timedelta(seconds=40), T0 + timedelta(seconds=6))


def _incident(revision: int, rank: int) -> Incident:
    diag = Diagnosis(verdict="diagnosed", root_cause=RootCause(signature="xid.79", title="t", category="gpu",
                                                               rank=rank, host="n1", confidence=0.9, tags=["xid"]))
    return Incident(id=incident_id("j"), job_id="j", team="llm", revision=revision, created_at=T0,
                    updated_at=T0 + timedelta(seconds=revision), diagnosis=diag,
                    changes=[f"rev {revision}"] if revision > 1 else [])


def test_incident_revisions_are_kept_and_the_hook_runs_in_the_transaction(store: Store) -> None:
    store.record_job(failed_job("j"), T0)
    seen: list[tuple[int, int | None]] = []
    hook = lambda session, new, old: seen.append((new.revision, old.revision if old else None))  # noqa: E731
    store.save_incident("j", lambda cur: _incident(1, 3), hook)
    store.save_incident("j", lambda cur: None, hook)  # nothing changed: nothing written, no hook
    store.save_incident("j", lambda cur: _incident(cur.revision + 1, 5) if cur else None, hook)
    inc = store.incident_for_job("j")
    assert inc is not None and inc.revision == 2 and inc.rank == 5 and inc.tags == ["xid"]
    assert seen == [(1, None), (2, 1)]
    assert [r[0] for r in store.revisions(inc.id)] == [1, 2]
    assert store.incidents()[0].id == inc.id


def test_a_failing_hook_rolls_the_incident_back(store: Store) -> None:
    store.record_job(failed_job("j"), T0)

    def boom(*_: object) -> None:
        raise RuntimeError("outbox write failed")

    with pytest.raises(RuntimeError):
        store.save_incident("j", lambda cur: _incident(1, 3), boom)
    assert store.incident_for_job("j") is None


def test_an_overdue_correlation_is_not_enqueued_again_until_it_looks_lost(store: Store) -> None:
    # A busy worker holds the countdown task past its due time; every shard it then stores must not add another.
    store.record_job(failed_job("j"), T0)
    assert store.schedule("j", T0 + timedelta(seconds=30), T0)
    later = T0 + timedelta(seconds=45)
    assert not store.schedule("j", T0 + timedelta(seconds=30), later)
    lost = T0 + timedelta(minutes=30)
    assert store.schedule("j", T0 + timedelta(seconds=30), lost)


def test_settled_means_pending_and_this_source_still_incomplete(store: Store) -> None:
    store.record_job(failed_job("j"), T0)
    assert not store.record_shard("j", KEY, 0, False, SCANNED, T0).settled  # nothing pending: the caller decides
    store.schedule("j", T0 + timedelta(seconds=30), T0)
    assert store.record_shard("j", KEY, 1, False, SCANNED, T0).settled
    store.record_shard("j", KEY, 4, True, SCANNED, T0)
    assert store.record_shard("j", KEY, 2, False, SCANNED, T0).settled  # eof arrived, seq 3 still missing
    assert not store.record_shard("j", KEY, 3, False, SCANNED, T0).settled  # the gap is filled: it completed


def test_a_job_view_without_scans_carries_no_findings(store: Store) -> None:
    store.record_job(failed_job("j"), T0)
    store.record_shard("j", KEY, 0, True, SCANNED, T0)
    assert store.job("j", scans=False).shards[0].scanned == {}
    assert store.job("j").shards[0].scanned == SCANNED


def test_pending_progress_counts_sources_the_ended_ones_and_their_ranks(store: Store) -> None:
    store.record_job(failed_job("j", world_size=4), T0)
    other = SourceKey("stdout", 5, "node002", "node002/rank5.log")
    dmesg = SourceKey("dmesg", None, "node001", "node001.dmesg")
    store.record_shard("j", KEY, 0, False, SCANNED, T0)
    store.record_shard("j", KEY, 2, True, SCANNED, T0)  # ended, seq 1 missing: counted as ended all the same
    store.record_shard("j", other, 0, False, SCANNED, T0)
    assert store.record_shard("j", dmesg, 0, True, SCANNED, T0).pending is None  # nothing pending: must look
    store.schedule("j", T0 + timedelta(seconds=30), T0)
    found = store.record_shard("j", dmesg, 1, True, SCANNED, T0).pending
    assert found is not None
    event, progress = found
    assert event is not None and event.world_size == 4
    assert (progress.sources, progress.ended, progress.ended_ranks) == (3, 2, 1)
    lost = store.record_shard("j", dmesg, 2, True, SCANNED, T0 + timedelta(hours=1))
    assert lost.pending is None  # overdue that long: taken as lost


def test_recording_a_shard_says_in_the_same_transaction_what_deciding_needs(store: Store) -> None:
    store.record_job(failed_job("j", world_size=4), T0)
    first = store.record_shard("j", KEY, 0, False, SCANNED, T0)
    assert (first.fresh, first.settled, first.pending) == (True, False, None)  # nothing pending: look
    assert not store.record_shard("j", KEY, 0, False, SCANNED, T0).fresh  # a redelivery
    store.schedule("j", T0 + timedelta(seconds=30), T0)
    assert store.record_shard("j", KEY, 1, False, SCANNED, T0).settled  # its source is still open
    ended = store.record_shard("j", KEY, 2, True, SCANNED, T0)
    assert ended.fresh and not ended.settled and ended.pending is not None
    event, progress = ended.pending
    assert event is not None and (progress.sources, progress.ended, progress.ended_ranks) == (1, 1, 1)
    assert len(store.job("j").shards) == 3  # every fresh shard was kept, the redelivery once


def _counts(store: Store, job_id: str) -> tuple[object, ...]:
    found = store.job_progress(job_id)
    return found.counts, found.seen, found.complete, found.changes


def test_a_batch_of_shards_counts_as_the_same_shards_one_by_one(store: Store) -> None:
    """accept_shards stores a queue's shards in one transaction: the job's counters and sources must come out
    as storing them one at a time leaves them, batch boundaries anywhere (two sources of one rank, a gap filled
    in a later batch, a source without a rank), and a redelivery among them is kept once."""
    import random

    keys = [SourceKey(stream, rank, f"node{rank // 4}", f"node{rank // 4}/rank{rank}.{stream}")
            for rank in range(8) for stream in ("stdout", "stderr")] + [SourceKey("dmesg", None, "node0", "dmesg")]
    shards = [(key, seq, seq == 2, SCANNED) for key in keys for seq in range(3)]
    random.Random(7).shuffle(shards)
    for job_id in ("one", "batched"):
        store.record_job(failed_job(job_id, world_size=8), T0)
        store.schedule(job_id, T0 + timedelta(seconds=30), T0)
    held = [s for s in shards if s[0].rank == 5 and s[1] == 1]  # rank 5's middle shards, in the last batch
    rest = [s for s in shards if s not in held]
    for key, seq, eof, scanned in rest + held:
        store.record_shard("one", key, seq, eof, scanned, T0)
    fresh, _ = store.record_shards("batched", rest[:20], T0)
    assert fresh == [True] * 20
    store.record_shards("batched", rest[20:], T0)
    waiting = store.job_progress("batched")
    assert waiting.counts.ended_ranks == 8 and len(waiting.seen) == len(keys)  # the counts allow the check
    assert {k.rank for k in waiting.seen - waiting.complete} == {5}  # rank 5 ended, its middle shards missing
    fresh, decides = store.record_shards("batched", [*held, rest[0]], T0)  # rest[0] again: a redelivery
    assert fresh == [True, True, False] and decides
    assert _counts(store, "batched") == _counts(store, "one")
    assert len(store.job("batched").shards) == len(shards)


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
