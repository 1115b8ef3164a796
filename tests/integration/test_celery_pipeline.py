"""The distributed pipeline's workers: real Celery worker processes on the local Redis, PostgreSQL as the store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from config.settings import load_settings
from store.incidents import Store
from tests.conftest import BROKER
from tests.integration.celery_worker import Worker, wait_for
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of
from workers.celery_app import make_app
from workers.dispatch import CeleryDispatcher

pytestmark = pytest.mark.integration


@pytest.fixture
def store(fresh_pg_url: str) -> Iterator[Store]:
    opened = Store.open(fresh_pg_url)
    yield opened
    opened.close()


def _dispatcher(env: dict[str, str], store: Store) -> CeleryDispatcher:
    return CeleryDispatcher(make_app(load_settings(environ=env)), store.payloads)


def _counts(store: Store) -> tuple[int, int, int]:
    with store.engine.connect() as conn:
        return tuple(conn.execute(sa.text(f"select count(*) from {t}")).scalar_one()  # type: ignore[return-value]
                     for t in ("shards", "incidents", "incident_revisions"))


def _named_cause(store: Store, job_id: str):  # type: ignore[no-untyped-def]
    incident = store.incident_for_job(job_id)
    return incident if incident is not None and incident.signature == "host.oom_killer" else None


def _named_rank(store: Store, job_id: str, rank: int):  # type: ignore[no-untyped-def]
    incident = _named_cause(store, job_id)
    return incident if incident is not None and incident.rank == rank else None


def _broker_state(env: dict[str, str]) -> str:
    """The Redis side of redelivery: unacknowledged tasks, the sweep's lock and its time to live."""
    import redis

    prefix = env.get("FIRSTFAULT_BROKER_PREFIX", "")
    client = redis.Redis.from_url(BROKER)
    try:
        return (f"unacked={client.hlen(prefix + 'unacked')} queued={client.llen(env['FIRSTFAULT_QUEUE'])} "
                f"mutex_ttl={client.ttl(prefix + 'unacked_mutex')}")
    finally:
        client.close()


@contextmanager
def _inserts_blocked(url: str) -> Iterator[None]:
    """Until the block ends, a shard INSERT waits (reads do not): a worker storing a shard stays in its task."""
    import psycopg

    with psycopg.connect(url) as conn:  # not autocommit: the lock lasts until this transaction ends
        conn.execute("LOCK TABLE shards IN SHARE ROW EXCLUSIVE MODE")
        try:
            yield
        finally:
            conn.rollback()


def _held_in_a_task(log: Path) -> bool:
    """The worker's latest task line says "received", and a second later it still does."""
    def latest() -> str:
        tasks = [ln for ln in log.read_text(errors="replace").splitlines() if "Task firstfault." in ln]
        return tasks[-1] if tasks else ""

    before = latest()
    if not before.endswith("received"):
        return False
    time.sleep(1.0)
    return latest() == before


def _ship(dispatcher: CeleryDispatcher, job_id: str) -> int:
    dispatcher.submit_job(failed_job(job_id), {})
    shards = shards_of(job_id, EXAMPLE, chunk=16 * 1024)
    for shard in shards:
        dispatcher.submit_shard(shard, {})
    return len(shards)


def test_a_failed_job_becomes_one_incident(env: dict[str, str], store: Store, tmp_path: Path) -> None:
    worker = Worker(env, tmp_path / "worker.log")
    try:
        _ship(_dispatcher(env, store), "job-1")
        # under load group_wait may pass before the last shard: then a revision names the cause; wait for it
        incident = wait_for(lambda: _named_cause(store, "job-1"), 90, "the incident naming the OOM kill")
    finally:
        worker.stop()
    assert (incident.signature, incident.rank, incident.host) == ("host.oom_killer", 37, "node004")


def test_shards_handed_on_in_groups_are_stored_together_and_a_bad_one_alone(env: dict[str, str], store: Store,
                                                                           tmp_path: Path) -> None:
    """The consumer's groups (CeleryDispatcher.submit_shards, one match_shards task each): every shard stored
    once, the same incident; a shard that does not validate in the worker is a dead letter of its own, replayable
    as the one-shard task, and does not cost the others."""
    from store.dead_letters import listed

    dispatcher = _dispatcher(env, store)
    dispatcher.submit_job(failed_job("job-g"), {})
    shards = shards_of("job-g", EXAMPLE, chunk=16 * 1024)
    bad = {**shards[0].model_dump(mode="json"), "seq": -1}  # past the producer's check: the worker's
    dispatcher.app.send_task("firstfault.match_shards", ([bad, shards[0].model_dump(mode="json")], [{}, {}]))
    for start in range(0, len(shards), 7):
        group = shards[start:start + 7]
        dispatcher.submit_shards(group, [{}] * len(group))
    worker = Worker(env, tmp_path / "worker.log")
    try:
        incident = wait_for(lambda: _named_cause(store, "job-g"), 90, "the incident naming the OOM kill")
        wait_for(lambda: listed(store), 30, "the bad shard's dead letter")
    finally:
        worker.stop()
    assert (incident.rank, incident.host) == (37, "node004")
    assert _counts(store)[0] == len(shards)
    [letter] = listed(store)
    assert (letter.kind, letter.where) == ("shard", "firstfault.match_shard") and letter.payload["seq"] == -1


def test_a_worker_killed_mid_task_leaves_exactly_one_incident(env: dict[str, str], store: Store,
                                                              tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    worker = Worker(env, log)
    try:
        total = _ship(_dispatcher(env, store), "job-2")
        wait_for(lambda: _counts(store)[0] >= total // 3, 90, "a third of the shards")
        # SIGKILL with a task in hand, never acknowledged: the test holds the worker inside one (its INSERT waits
        # on a table lock), because a kill in the instant between Redis popping a task and kombu recording it as
        # unacknowledged loses that task outright (kombu's ack emulation is two commands; see docs/operations.md)
        with _inserts_blocked(env["FIRSTFAULT_DATABASE_URL"]):
            wait_for(lambda: _held_in_a_task(log), 60, "the worker held inside a task")
            worker.kill()
        stored_at_kill = _counts(store)[0]
        assert stored_at_kill < total
        worker = Worker(env, log)  # the unacknowledged task comes back after the visibility timeout
        try:
            wait_for(lambda: _counts(store)[0] == total, 120, "every shard, the lost one redelivered")
        except AssertionError as lost:
            raise AssertionError(f"{lost}; {_broker_state(env)}; worker log tail:\n"
                                 + "\n".join(log.read_text(errors="replace").splitlines()[-15:])) from None
        wait_for(lambda: _named_cause(store, "job-2"), 60, "the incident naming the OOM kill")
        # then kill the worker right after the incident is written, before it can acknowledge anything more
        worker.kill()
        worker = Worker(env, log)
        wait_for(lambda: "ready." in log.read_text(errors="replace"), 30, "the restarted worker")
        # the incident first written may predate the last shards (group_wait ran out while the worker was dead:
        # the kernel's line names the host, not yet the rank); the revision that names rank 37 must follow
        wait_for(lambda: _named_rank(store, "job-2", 37), 60, "the incident naming rank 37")
    finally:
        worker.stop()
    shards, incidents, revisions = _counts(store)
    final = store.incident_for_job("job-2")
    assert final is not None
    # one incident; a revision only if group_wait ran out while the worker was dead, never a duplicate
    assert (shards, incidents, revisions) == (total, 1, final.revision)
    assert (final.signature, final.rank) == ("host.oom_killer", 37)


def test_a_worker_killed_inside_the_redelivery_sweep_holds_redelivery_back_seconds_not_minutes(
        env: dict[str, str]) -> None:
    # kombu's sweep lock outlives the worker holding it; its default 300 s would stall every redelivery that long
    app = make_app(load_settings(environ=env))
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        assert channel.unacked_mutex_expire <= 30
        assert channel.unacked_mutex_expire > channel.unacked_restore_interval
