"""Tasks by reference on the real services: a job shipped over HTTP to the distributed mode's app (its ingest
handing on through serve's StoringDispatcher), real Celery workers on the local Redis, PostgreSQL as the store.
The broker carries a few hundred bytes a shard; every payload is gone once its shard is recorded; a payload whose
task the broker lost is sent again by the sweep and its shard still arrives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa

from api.app import create_app
from config.settings import Settings, load_settings
from ingest.ship import HttpTransport, Overrides, ship_logs
from pipeline.sweep import resend_payloads
from runtime.build import pipeline_for
from runtime.health import DISTRIBUTED
from store.dead_letters import listed
from store.incidents import Store
from tests.api.server import serving
from tests.conftest import BROKER
from tests.integration.celery_worker import Worker, wait_for
from tests.pipeline.helpers import EXAMPLE, failed_job
from workers.celery_app import make_app
from workers.dispatch import CeleryScheduler, StoringDispatcher

pytestmark = pytest.mark.integration


@pytest.fixture
def settings(env: dict[str, str]) -> Settings:
    return load_settings(environ=env, path="/dev/null")


@pytest.fixture
def store(fresh_pg_url: str) -> Iterator[Store]:
    opened = Store.open(fresh_pg_url)
    yield opened
    opened.close()


def _ship_over_http(settings: Settings, store: Store, job_id: str) -> tuple[int, StoringDispatcher]:
    """The example job, shipped as `firstfault ship --url` does (zstd shards), to distributed serve's HTTP app."""
    app = make_app(settings)
    dispatcher = StoringDispatcher(app, pipeline_for(settings, store, CeleryScheduler(app)))
    with serving(create_app(settings, dispatcher, store, needs=DISTRIBUTED)) as url:
        transport = HttpTransport(url)
        try:
            transport.send_job(failed_job(job_id))
            shipped = ship_logs(transport, job_id, [str(EXAMPLE)], Overrides(), "zstd", lambda _: None)
        finally:
            transport.close()
    return shipped.shards, dispatcher


def _queue_key(env: dict[str, str]) -> str:
    return env["FIRSTFAULT_BROKER_PREFIX"] + env["FIRSTFAULT_QUEUE"]  # kombu's global_keyprefix, then the queue


def _queued(env: dict[str, str], task: str) -> list[bytes]:
    """The messages of `task` waiting on the queue, as Redis holds them (kombu's JSON envelope)."""
    client = redis.Redis.from_url(BROKER)
    try:
        return [m for m in client.lrange(_queue_key(env), 0, -1) if json.loads(m)["headers"]["task"] == task]
    finally:
        client.close()


def _count(store: Store, table: str) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(sa.text(f"select count(*) from {table}")).scalar_one())


def _named(store: Store, job_id: str):  # type: ignore[no-untyped-def]
    incident = store.incident_for_job(job_id)
    return incident if incident is not None and (incident.signature, incident.rank) == ("host.oom_killer", 37) \
        else None


def test_shards_shipped_over_http_go_to_the_workers_by_reference(env: dict[str, str], settings: Settings,
                                                                  store: Store, tmp_path: Path) -> None:
    total, _ = _ship_over_http(settings, store, "ref-1")
    queued = _queued(env, "firstfault.match_shard")
    # the job's event was stored by the edge; each shard is one task on Redis naming its stored payload
    assert len(queued) == total and _count(store, "shard_payloads") == total
    assert max(len(m) for m in queued) < 2000, max(len(m) for m in queued)
    worker = Worker(env, tmp_path / "worker.log")
    try:
        incident = wait_for(lambda: _named(store, "ref-1"), 120, "the incident naming rank 37")
        wait_for(lambda: _count(store, "shards") == total, 60, "every shard recorded")
    finally:
        worker.stop()
    assert (incident.host, incident.signature) == ("node004", "host.oom_killer")
    assert _count(store, "shard_payloads") == 0  # each dropped with its shard's recording
    assert listed(store) == []


def test_a_payload_whose_task_the_broker_lost_is_sent_again_by_the_sweep(env: dict[str, str], settings: Settings,
                                                                         store: Store, tmp_path: Path) -> None:
    total, dispatcher = _ship_over_http(settings, store, "ref-2")
    client = redis.Redis.from_url(BROKER)
    try:
        # three shard tasks gone with the broker's queue (a Redis that kept nothing)
        for message in _queued(env, "firstfault.match_shard")[:3]:
            assert client.lrem(_queue_key(env), 1, message) == 1
    finally:
        client.close()
    worker = Worker(env, tmp_path / "worker.log")
    try:
        wait_for(lambda: _count(store, "shards") == total - 3, 120, "the shards whose tasks arrived")
        assert _count(store, "shard_payloads") == 3
        grace = timedelta(seconds=settings.payload_grace_s)
        later = dispatcher.clock() + grace + timedelta(seconds=1)
        assert len(resend_payloads(store.payloads, dispatcher.resend, later, grace)) == 3
        wait_for(lambda: _count(store, "shards") == total, 60, "the lost shards, re-sent")
        wait_for(lambda: _named(store, "ref-2"), 120, "the incident naming rank 37")
    finally:
        worker.stop()
    assert _count(store, "shard_payloads") == 0
