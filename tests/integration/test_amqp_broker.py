"""The pipeline's workers on RabbitMQ (AMQP 0-9-1), the broker docs/operations.md recommends where no task may be
lost: real Celery worker processes, PostgreSQL as the store.

Redis's transport emulates acknowledgements (kombu pops a task, then records it as unacknowledged: a worker
killed between the two loses the task). AMQP acknowledges in the broker: a consumer's unacknowledged deliveries
go back to the queue the moment its connection drops (AMQP 0-9-1 spec, 4.7 "message acknowledgement"; RabbitMQ
docs, Consumer Acknowledgements and Publisher Confirms: "automatically requeued" on channel or connection close).
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from config.settings import load_settings
from store.incidents import Store
from tests.integration.celery_worker import Worker, service_env, wait_for
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of
from workers.celery_app import make_app
from workers.dispatch import CeleryDispatcher

pytestmark = pytest.mark.integration

AMQP = "amqp://guest:guest@127.0.0.1:5672//"


def _rabbit_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=2).close()
    except OSError:
        return False
    return True


@pytest.fixture
def env(fresh_pg_url: str) -> Iterator[dict[str, str]]:
    if not _rabbit_up():
        pytest.skip("RabbitMQ not reachable at 127.0.0.1:5672")
    queue = f"fftest-{uuid.uuid4().hex[:8]}-firstfault"
    yield service_env(fresh_pg_url, AMQP, FIRSTFAULT_QUEUE=queue)
    from kombu import Connection

    with Connection(AMQP, connect_timeout=5) as conn:
        channel = conn.channel()
        channel.queue_delete(queue)
        channel.close()


@pytest.fixture
def store(fresh_pg_url: str) -> Iterator[Store]:
    opened = Store.open(fresh_pg_url)
    yield opened
    opened.close()


def _shards_stored(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(sa.text("select count(*) from shards")).scalar_one())


def _incidents(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(sa.text("select count(*) from incidents")).scalar_one())


def _named_rank(store: Store, job_id: str) -> object:
    incident = store.incident_for_job(job_id)
    return incident if incident is not None and (incident.signature, incident.rank) == ("host.oom_killer", 37) \
        else None


def test_workers_killed_at_unaimed_moments_lose_no_shard_on_amqp(env: dict[str, str], store: Store,
                                                                 tmp_path: Path) -> None:
    """Three SIGKILLs while the shards are being stored, each at whatever the worker was doing (the moment Redis's
    transport can lose a task in): every shard is stored, the job has one incident naming rank 37."""
    log = tmp_path / "worker.log"
    dispatcher = CeleryDispatcher(make_app(load_settings(environ=env)), store.payloads)
    dispatcher.submit_job(failed_job("job-amqp"), {})
    shards = shards_of("job-amqp", EXAMPLE, chunk=8 * 1024)
    for shard in shards:
        dispatcher.submit_shard(shard, {})
    total = len(shards)
    worker = Worker(env, log)
    try:
        for share in (4, 2):
            wait_for(lambda share=share: _shards_stored(store) >= total // share, 120, f"1/{share} of the shards")
            worker.kill()
            worker = Worker(env, log)
        wait_for(lambda: _shards_stored(store) >= total * 3 // 4 or _shards_stored(store) == total, 120,
                 "three quarters of the shards")
        worker.kill()
        worker = Worker(env, log)
        wait_for(lambda: _shards_stored(store) == total, 120, "every shard after three kills")
        incident = wait_for(lambda: _named_rank(store, "job-amqp"), 90, "the incident naming rank 37")
    finally:
        worker.stop()
    assert _shards_stored(store) == total
    assert _incidents(store) == 1
    assert (incident.host, incident.rank) == ("node004", 37)


def test_a_task_held_by_a_killed_worker_comes_back_at_once_not_after_the_visibility_timeout(
        env: dict[str, str], store: Store, tmp_path: Path) -> None:
    """The worker is SIGKILLed inside a task (its shard INSERT waits on a table lock). With a visibility timeout of
    an hour, Redis's transport would hand the task back an hour later; RabbitMQ requeues it when the connection
    drops, so the restarted worker stores every shard within a minute."""
    import psycopg

    from tests.integration.test_celery_pipeline import _held_in_a_task

    slow = {**env, "FIRSTFAULT_VISIBILITY_TIMEOUT_S": "3600"}
    log = tmp_path / "worker.log"
    dispatcher = CeleryDispatcher(make_app(load_settings(environ=slow)), store.payloads)
    dispatcher.submit_job(failed_job("job-held"), {})
    shards = shards_of("job-held", EXAMPLE, chunk=16 * 1024)
    for shard in shards:
        dispatcher.submit_shard(shard, {})
    worker = Worker(slow, log)
    try:
        wait_for(lambda: _shards_stored(store) >= len(shards) // 3, 90, "a third of the shards")
        with psycopg.connect(slow["FIRSTFAULT_DATABASE_URL"]) as conn:
            conn.execute("LOCK TABLE shards IN SHARE ROW EXCLUSIVE MODE")
            wait_for(lambda: _held_in_a_task(log), 60, "the worker held inside a task")
            worker.kill()
            conn.rollback()
        assert _shards_stored(store) < len(shards)
        worker = Worker(slow, log)
        wait_for(lambda: _shards_stored(store) == len(shards), 60, "every shard, the held one requeued at once")
    finally:
        worker.stop()
