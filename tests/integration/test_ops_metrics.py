"""The distributed mode's readiness and Kafka metrics on the machine's own services: /readyz is 200 with
PostgreSQL, Redis and a Kafka broker up; the consumer reports its lag and counts what it took and refused."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY

from api.app import create_app
from config.settings import Settings
from ingest.kafka import WireProducer
from ingest.testing import RecordingDispatcher
from ingest.topics import Topics
from pipeline.embedded import EmbeddedRunner
from runtime.health import DISTRIBUTED
from schemas.wire import JobEvent
from store.incidents import Store
from tests.api.server import serving
from tests.conftest import BROKER
from tests.integration.celery_worker import ROOT, service_env, wait_for
from tests.integration.kafka_helpers import committed_total, drive, make_loop
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of

pytestmark = pytest.mark.integration


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_distributed_readyz_is_200_when_every_dependency_answers(fresh_pg_url: str, kafka_bootstrap: str,
                                                                 broker_prefix: str) -> None:
    settings = Settings(database_url=fresh_pg_url, broker_url=BROKER, kafka_bootstrap=kafka_bootstrap)
    store = Store.open(fresh_pg_url)
    try:
        with serving(create_app(settings, EmbeddedRunner(), store, needs=DISTRIBUTED)) as url:
            answer = httpx.get(f"{url}/readyz", timeout=30)
    finally:
        store.close()
    assert answer.status_code == 200, answer.text
    assert answer.json()["checks"] == {"database": "ok", "redis": "ok", "kafka": "ok"}


def test_the_consumer_reports_lag_and_counts_what_it_took_and_refused(kafka_bootstrap: str, topics: Topics) -> None:
    producer = WireProducer(kafka_bootstrap)
    jobs = 12
    for i in range(jobs):
        producer.send(topics.jobs, b"job-lag", JobEvent(job_id="job-lag", state="started", attempt=i)
                      .model_dump_json().encode(), {})
    producer.send(topics.jobs, b"job-lag", b"{not json", {})
    producer.flush()
    producer.close()
    accepted = sample("firstfault_ingest_accepted_total", kind="job", via="kafka")
    rejected = sample("firstfault_ingest_rejected_total", kind="job", via="kafka", reason="invalid")
    dead = sample("firstfault_dead_letters_total", where=topics.jobs)

    loop = make_loop(kafka_bootstrap, topics, RecordingDispatcher(), "g-lag", batch=2)
    lags: list[float] = []
    try:
        def done() -> bool:  # one key: every message is on one partition, read two at a time
            lags.append(max(sample("firstfault_consumer_lag", topic=topics.jobs, partition=str(p)) for p in range(3)))
            return committed_total(kafka_bootstrap, "g-lag", topics) == jobs + 1
        drive(loop, done)
        loop.step(threading.Event())  # a poll after the last commit sees the partition caught up
    finally:
        loop.close()
    assert max(lags) >= 2, lags  # behind while it worked through the backlog
    assert max(sample("firstfault_consumer_lag", topic=topics.jobs, partition=str(p)) for p in range(3)) == 0
    assert sample("firstfault_ingest_accepted_total", kind="job", via="kafka") - accepted == jobs
    assert sample("firstfault_ingest_rejected_total", kind="job", via="kafka", reason="invalid") - rejected == 1
    assert sample("firstfault_dead_letters_total", where=topics.jobs) - dead == 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_prefork_worker_serves_what_its_children_scanned(sqlite_url: str, broker_prefix: str,
                                                           tmp_path: Path) -> None:
    from config.settings import load_settings
    from workers.celery_app import make_app
    from workers.dispatch import CeleryDispatcher

    port, folder = _free_port(), tmp_path / "metrics"
    folder.mkdir()
    env = service_env(sqlite_url, BROKER, FIRSTFAULT_BROKER_PREFIX=broker_prefix, FIRSTFAULT_QUEUE=f"{broker_prefix}q",
                      FIRSTFAULT_WORKER_METRICS_PORT=str(port), FIRSTFAULT_WORKER_METRICS_HOST="127.0.0.1",
                      PROMETHEUS_MULTIPROC_DIR=str(folder))
    payloads = Store.open(sqlite_url)  # the schema, before the workers open it
    with (tmp_path / "worker.log").open("wb") as log:
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "workers.app", "worker", "--concurrency=2",
                                   "-Q", f"{broker_prefix}q", "--without-gossip", "--without-mingle"],
                                  cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        shards = list(shards_of("w1", EXAMPLE, chunk=32 * 1024))[:6]
        dispatcher = CeleryDispatcher(make_app(load_settings(environ=env, path="/dev/null")), payloads.payloads)
        dispatcher.submit_job(failed_job("w1"), {})
        for shard in shards:
            dispatcher.submit_shard(shard, {})

        def scanned() -> str | None:
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            except httpx.HTTPError:
                return None
            return text if f'firstfault_shards_scanned_total{{outcome="stored"}} {len(shards)}.0' in text else None
        text = wait_for(scanned, 60, "the worker's /metrics to count every shard")
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        payloads.close()
    assert f"firstfault_scan_seconds_count {len(shards)}.0" in text.splitlines()
    assert len({p.name.split("_")[-1] for p in folder.glob("histogram_*.db")}) >= 1  # written by the children
