"""/metrics and /readyz of `firstfault serve`, over real HTTP: what an operator alerts on moves when a job is
shipped, and readiness names the dependency that is down."""

from __future__ import annotations

import socket

import httpx
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from config.settings import Settings
from pipeline.embedded import EmbeddedRunner
from runtime.health import DISTRIBUTED
from store.incidents import Store
from tests.api.server import serving
from tests.integration.celery_worker import wait_for
from tests.notifiers.helpers import embedded_service
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of

TOKEN = "s3cret-test-token"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(http: httpx.Client) -> Samples:
    answer = http.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(answer.text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def drained(samples: Samples) -> Samples | None:
    waiting = sum(value(samples, "firstfault_outbox_rows", status=s) for s in ("pending", "held", "sending"))
    return samples if not waiting else None


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once it is closed


def test_a_shipped_job_moves_the_counters_an_operator_alerts_on(sqlite_url: str) -> None:
    shards = list(shards_of("m1", EXAMPLE, chunk=32 * 1024))
    with embedded_service(sqlite_url, FIRSTFAULT_API_TOKEN=TOKEN) as running, httpx.Client(
            base_url=running.url, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        before = scrape(http)
        http.post("/v1/jobs", json=failed_job("m1").model_dump(mode="json")).raise_for_status()
        for shard in shards:
            http.post("/v1/shards", json=shard.model_dump(mode="json")).raise_for_status()
        assert http.post("/v1/shards", content=b"{not json").status_code == 400
        assert httpx.post(f"{running.url}/v1/shards", json=shards[0].model_dump(mode="json")).status_code == 401
        assert http.post("/v1/shards", content=b"x" * (2 << 20)).status_code == 413
        wait_for(lambda: running.slack.posts("#ml-oncall"), 60, "the Slack post")
        wait_for(running.service.runner.idle, 30, "the pipeline to settle")
        # a revision's follow-up may wait on Slack's pacing (1/s per channel): the depth gauge drains to 0
        after = wait_for(lambda: drained(scrape(http)), 30, "the outbox to drain")
        ready = http.get("/readyz")

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("firstfault_ingest_accepted_total", kind="shard", via="http") == len(shards)
    assert moved("firstfault_ingest_accepted_total", kind="job", via="http") == 1
    assert moved("firstfault_ingest_shard_bytes_total", via="http") == sum(len(s.data) for s in shards)
    assert moved("firstfault_ingest_rejected_total", kind="shard", via="http", reason="invalid") == 1
    assert moved("firstfault_ingest_rejected_total", kind="shard", via="http", reason="unauthorized") == 1
    assert moved("firstfault_ingest_rejected_total", kind="shard", via="http", reason="too_large") == 1
    assert moved("firstfault_shards_scanned_total", outcome="stored") == len(shards)
    assert moved("firstfault_scan_seconds_count") == len(shards)
    assert moved("firstfault_scan_seconds_sum") > 0
    assert moved("firstfault_correlate_seconds_count") >= 1
    assert moved("firstfault_incidents_saved_total", change="created") == 1
    # the failure event came first, group_wait is 1 s: the incident followed it within seconds, not at +Inf
    assert moved("firstfault_failure_to_incident_seconds_count") == 1
    assert moved("firstfault_failure_to_incident_seconds_bucket", le="60.0") == 1
    # the root post and any revision's follow-up in its thread; only the first post times incident -> post
    assert moved("firstfault_notifications_total", kind="slack", outcome="sent") >= 1
    assert moved("firstfault_notifications_total", kind="slack", outcome="failed") == 0
    assert moved("firstfault_incident_to_post_seconds_count", kind="slack") == 1
    # gauges read from the store at scrape time: the post went out, nothing waits, nothing dead-lettered
    assert ("firstfault_outbox_rows", frozenset({("status", "held")})) in after  # every status, 0 included
    assert value(after, "firstfault_correlations_pending") == 0
    assert value(after, "firstfault_embedded_queue_depth") == 0
    assert ready.status_code == 200 and ready.json()["checks"] == {"database": "ok"}


def test_readyz_is_503_naming_the_database_when_postgresql_is_unreachable(sqlite_url: str) -> None:
    url = f"postgresql://firstfault:x@127.0.0.1:{closed_port()}/firstfault"
    store = Store.open(url, migrate_schema=False)  # the engine connects lazily: the probe is the first to try
    app = create_app(Settings(database_url=url), EmbeddedRunner(), store)
    try:
        with serving(app) as base, httpx.Client(base_url=base, timeout=30) as http:
            answer = http.get("/readyz")
            assert http.get("/healthz").status_code == 200  # alive, just not ready: restart would not help
            metrics = http.get("/metrics")  # still answers: the store's gauges are left out, not an error
    finally:
        store.close()
    assert answer.status_code == 503
    body = answer.json()
    assert body["failed"] == ["database"]
    assert "refused" in body["checks"]["database"].lower()
    assert metrics.status_code == 200 and "firstfault_ingest_accepted_total" in metrics.text


def test_distributed_readyz_checks_redis_and_kafka_too(sqlite_url: str) -> None:
    dead = closed_port()
    settings = Settings(database_url=sqlite_url, broker_url=f"redis://127.0.0.1:{dead}/0",
                        kafka_bootstrap=f"127.0.0.1:{dead}")
    store = Store.open(sqlite_url)
    app = create_app(settings, EmbeddedRunner(), store, needs=DISTRIBUTED)
    try:
        with serving(app) as base, httpx.Client(base_url=base, timeout=30) as http:
            answer = http.get("/readyz")
    finally:
        store.close()
    assert answer.status_code == 503
    assert answer.json()["failed"] == ["kafka", "redis"]
    assert answer.json()["checks"]["database"] == "ok"


def test_readiness_answers_in_bounded_time_naming_a_dependency_that_hangs() -> None:
    import time

    from runtime.health import readiness

    started = time.monotonic()
    found = readiness({"database": lambda: time.sleep(30), "redis": lambda: None}, timeout_s=0.5)
    assert time.monotonic() - started < 5
    assert found == {"database": "no answer within 0.5 s", "redis": "ok"}
