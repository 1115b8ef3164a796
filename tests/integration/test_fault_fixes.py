"""Regression tests for what bench/faults.py found the pipeline doing wrong under faults, on the real PostgreSQL
(the harness's own run is tests/benches/test_faults.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from store.incidents import Store
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of

pytestmark = pytest.mark.integration


@pytest.fixture
def store(fresh_pg_url: str) -> Iterator[Store]:
    opened = Store.open(fresh_pg_url)
    yield opened
    opened.close()


def _waiting_on_a_lock(url: str) -> bool:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return bool(conn.execute("select count(*) from pg_stat_activity where datname = current_database() "
                                 "and wait_event_type = 'Lock'").fetchone()[0])  # type: ignore[index]


def test_two_deliveries_of_a_new_jobs_event_at_once_both_succeed(store: Store, fresh_pg_url: str) -> None:
    # pg_cut in bench/faults.py: a job's event redelivered while its first delivery was still storing it; both
    # found no row to lock, both inserted, and the loser's UniqueViolation dead-lettered the event
    import psycopg

    errors: list[BaseException] = []

    def deliver() -> None:
        try:
            store.record_job(failed_job("race-1"), datetime.now(UTC))
        except BaseException as exc:  # the assertion below reports it
            errors.append(exc)

    with psycopg.connect(fresh_pg_url) as first:  # the first delivery, its insert not yet committed
        first.execute("insert into jobs (job_id, attempt, state, event, created_at, updated_at) "
                      "values ('race-1', 0, 'running', '{}', now(), now())")
        second = threading.Thread(target=deliver)
        second.start()
        deadline = time.monotonic() + 30
        while not _waiting_on_a_lock(fresh_pg_url):  # the second's insert waits on the first's key
            assert time.monotonic() < deadline and second.is_alive(), errors
            time.sleep(0.05)
        first.commit()
    second.join(timeout=30)
    assert errors == []
    view = store.job("race-1", scans=False)
    assert view.event is not None and view.event.state == "failed"


def test_a_correlation_whose_delivery_kick_misses_the_broker_is_not_dead_lettered(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    # redis_restart in bench/faults.py: the incident was saved, then sending the "deliver now" task hit the
    # restarting Redis, and the whole correlation failed for good (a dead letter) though nothing was lost
    from kombu.exceptions import OperationalError

    from config.settings import load_settings
    from runtime.build import pipeline_for
    from store.dead_letters import listed
    from tests.pipeline.helpers import RecordingScheduler
    from workers import tasks

    pipeline = pipeline_for(load_settings(environ={}, path="/dev/null"), store, RecordingScheduler())
    pipeline.accept_job(failed_job("kick-1"))
    for shard in shards_of("kick-1", EXAMPLE):
        pipeline.accept_shard(shard)
    monkeypatch.setattr(tasks, "pipeline", lambda: pipeline)

    def broker_down(*_a: object, **_k: object) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.correlate_job.app, "send_task", broker_down)
    result = tasks.correlate_job.apply(args=("kick-1",))
    assert result.successful(), result.traceback
    assert store.incident_for_job("kick-1") is not None
    assert listed(store) == []


def test_serve_stores_a_job_event_itself_so_no_lost_task_can_lose_the_job(
        fresh_pg_url: str, store: Store, broker_prefix: str, kafka_bootstrap: str, tmp_path: Path) -> None:
    # worker_unaimed in bench/faults.py: a worker killed between kombu's pop of a record_job task and its record of
    # it lost the job's event, so the job never had a row, nothing was pending, and it never got an incident. Now
    # the consumer stores the event before committing its offset: no worker runs here at all, and the job is there
    # with its correlation noted for the sweep
    import subprocess
    import sys
    import uuid

    from ingest.kafka import WireProducer
    from tests.conftest import BROKER
    from tests.integration.celery_worker import ROOT, service_env, wait_for

    env = service_env(fresh_pg_url, BROKER, FIRSTFAULT_BROKER_PREFIX=broker_prefix,
                      FIRSTFAULT_QUEUE=f"{broker_prefix}firstfault", FIRSTFAULT_KAFKA_BOOTSTRAP=kafka_bootstrap,
                      FIRSTFAULT_KAFKA_GROUP=f"g-{uuid.uuid4().hex[:8]}")
    job_id = f"stored-{uuid.uuid4().hex[:8]}"
    producer = WireProducer(kafka_bootstrap)
    producer.send_job(failed_job(job_id))
    producer.flush()
    producer.close()
    with (tmp_path / "serve.log").open("wb") as log:
        serve = subprocess.Popen([sys.executable, "-m", "firstfault.cli", "serve", "--no-http"], cwd=ROOT, env=env,
                                 stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: store.job(job_id, scans=False).event is not None, 90, "the job stored by serve")
        finally:
            serve.terminate()
            assert serve.wait(timeout=30) == 0, (tmp_path / "serve.log").read_text()[-3000:]
    # (a new group reads the shared topic from its start: other tests' jobs may be stored too)
    assert job_id in [j for j, _due in store.pending_correlations()]
