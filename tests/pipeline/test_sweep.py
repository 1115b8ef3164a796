"""Nothing waits forever (issue 27): a correlation the store says is pending whose task is gone is sent again —
by Celery beat's sweep in the distributed mode, and when `serve --embedded` starts again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from config.settings import load_settings
from firstfault.serve import build_embedded
from pipeline.sweep import SWEEP_GRACE, resend_overdue
from store.incidents import Store
from tests.integration.celery_worker import wait_for
from tests.pipeline.helpers import RecordingScheduler, failed_job

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def _pending(store: Store, job_id: str, due: datetime) -> None:
    store.record_job(failed_job(job_id), due - timedelta(seconds=30))
    assert store.schedule(job_id, due, due - timedelta(seconds=30))


def test_an_overdue_correlation_is_sent_again_once(sqlite_url: str) -> None:
    """The task vanished in a Redis restart: before, nothing re-sent it, and Store.schedule refused a new one
    for 10 minutes, and only if another message for the job came."""
    store = Store.open(sqlite_url)
    try:
        _pending(store, "lost", NOW - SWEEP_GRACE - timedelta(seconds=1))
        _pending(store, "on-time", NOW - timedelta(seconds=5))  # its countdown may still be on its way
        _pending(store, "later", NOW + timedelta(seconds=20))
        scheduler = RecordingScheduler()
        assert resend_overdue(store, scheduler, NOW) == ["lost"]
        assert scheduler.calls == [("lost", NOW)]
        # the re-sent task has its grace again: the next sweep does not send it twice
        assert resend_overdue(store, scheduler, NOW + timedelta(seconds=30)) == []
        assert set(resend_overdue(store, scheduler, NOW + SWEEP_GRACE + timedelta(seconds=1))) == {"lost", "on-time"}
        store.unschedule("lost")  # it ran
        assert "lost" not in resend_overdue(store, scheduler, NOW + 10 * SWEEP_GRACE)
    finally:
        store.close()


def test_the_celery_sweep_task_re_sends_and_beat_runs_it(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRSTFAULT_CONFIG", raising=False)
    monkeypatch.setenv("FIRSTFAULT_DATABASE_URL", sqlite_url)
    from config.settings import Settings
    from workers import tasks
    from workers.celery_app import make_app

    schedule = make_app(Settings(sweep_every_s=7.0)).conf.beat_schedule
    assert schedule["firstfault-sweep"]["task"] == "firstfault.sweep"
    assert schedule["firstfault-sweep"]["schedule"] == 7.0
    assert schedule["firstfault-deliver"]["task"] == "firstfault.deliver"
    tasks.pipeline.cache_clear()
    try:
        pipeline = tasks.pipeline()
        scheduler = RecordingScheduler()
        monkeypatch.setattr(pipeline, "scheduler", scheduler)
        _pending(pipeline.store, "lost", datetime.now(UTC) - 2 * SWEEP_GRACE)
        assert tasks.sweep.apply().get() == 1
        assert [job for job, _ in scheduler.calls] == ["lost"]
    finally:
        tasks.pipeline().store.close()
        tasks.pipeline.cache_clear()


def test_an_embedded_service_started_again_correlates_what_the_last_one_had_pending(sqlite_url: str) -> None:
    """`serve --embedded` killed while a job waited for group_wait: its timer died with it."""
    store = Store.open(sqlite_url)
    _pending(store, "waiting", datetime.now(UTC) - timedelta(seconds=1))
    store.close()
    settings = load_settings(environ={"FIRSTFAULT_DATABASE_URL": sqlite_url, "FIRSTFAULT_GROUP_WAIT_S": "0"},
                             path="/dev/null")
    embedded = build_embedded(settings)
    embedded.runner.start()
    try:
        incident = wait_for(lambda: embedded.store.incident_for_job("waiting"), 30, "the job's incident")
        assert incident.job_id == "waiting"
    finally:
        embedded.runner.stop()
        embedded.store.close()


@pytest.mark.integration
def test_two_workers_storing_a_job_s_last_shards_at_once_one_sees_them_all(fresh_pg_url: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27: two workers storing the last two of 16 ranks' eof shards at once each counted 15 ended, so
    neither correlated and the job waited for group_wait. Worker A is held inside its transaction (after its
    count, before its commit) while B stores the other shard: B must wait for A and count 16."""
    import threading
    import time

    import store.progress as progress
    from correlator.shards import source_key

    store = Store.open(fresh_pg_url)
    now = datetime.now(UTC)
    try:
        store.record_job(failed_job("race", world_size=16), now)
        assert store.schedule("race", now + timedelta(seconds=30), now)
        scanned = {"lines": 1, "bytes": 1, "findings": [], "context": []}
        for rank in range(14):
            store.record_shard("race", source_key("stdout", rank, None, None), 0, True, scanned, now)
        inside, original = threading.Event(), progress.record

        def held(conn: object, shard: object, key: object, *rest: bool) -> object:
            counted = original(conn, shard, key, *rest)  # type: ignore[arg-type]
            if threading.current_thread().name == "A":
                inside.set()
                time.sleep(1.0)  # counted, not committed yet: B runs meanwhile
            return counted

        monkeypatch.setattr(progress, "record", held)
        counts: dict[str, int] = {}

        def store_rank(rank: int) -> None:
            recorded = store.record_shard("race", source_key("stdout", rank, None, None), 0, True, scanned, now)
            assert recorded.pending is not None
            counts[threading.current_thread().name] = recorded.pending[1].ended_ranks

        a = threading.Thread(target=store_rank, args=(14,), name="A")
        b = threading.Thread(target=store_rank, args=(15,), name="B")
        a.start()
        assert inside.wait(10)
        b.start()
        a.join(10)
        b.join(10)
        assert max(counts.values()) == 16, counts
    finally:
        store.close()
