"""One trace from the ingest request through match, correlate and store — across threads and a Celery hop."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from config.settings import load_settings
from firstfault.serve import build_embedded
from ingest.topics import Topics
from pipeline import tracing
from tests.api.server import serving
from tests.integration.celery_worker import wait_for
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    yield exporter


def _names_in_trace(exporter: InMemorySpanExporter) -> set[str]:
    return {s.name for s in exporter.get_finished_spans() if f"{s.context.trace_id:032x}" == TRACE_ID}


def test_embedded_pipeline_is_one_trace(spans: InMemorySpanExporter, sqlite_url: str) -> None:
    spans.clear()
    # a long group_wait: the shard that completes the job, not a timer, must start the correlation
    settings = load_settings(environ={"FIRSTFAULT_DATABASE_URL": sqlite_url, "FIRSTFAULT_GROUP_WAIT_S": "600",
                                      "FIRSTFAULT_VISIBILITY_TIMEOUT_S": "900"}, path="/dev/null")
    service = build_embedded(settings)
    service.runner.start()
    try:
        with serving(service.app) as url, httpx.Client(base_url=url, timeout=30) as http:
            http.post("/v1/jobs", json=failed_job("t1").model_dump(mode="json"))
            shards = shards_of("t1", EXAMPLE, chunk=1 << 20)
            for i, shard in enumerate(shards):
                # the last shard, which completes the job, carries the producer's trace context
                headers = {"traceparent": TRACEPARENT} if i == len(shards) - 1 else {}
                http.post("/v1/shards", json=shard.model_dump(mode="json"), headers=headers)
            wait_for(lambda: service.store.incident_for_job("t1"), 60, "the incident")
    finally:
        service.runner.stop()
        service.store.close()
    wait_for(lambda: "firstfault.store_incident" in _names_in_trace(spans), 10, "the store span")
    assert {"firstfault.ingest_http", "firstfault.match_shard", "firstfault.correlate_job",
            "firstfault.store_incident"} <= _names_in_trace(spans)


def test_the_kafka_consumer_continues_the_producers_trace(spans: InMemorySpanExporter, kafka_bootstrap: str,
                                                          topics: Topics) -> None:
    from ingest.kafka import WireProducer
    from ingest.testing import RecordingDispatcher
    from tests.integration.kafka_helpers import drive, make_loop

    spans.clear()
    producer = WireProducer(kafka_bootstrap)
    producer.send_job(failed_job("t3"), topics, {"traceparent": TRACEPARENT})
    producer.flush()
    producer.close()
    dispatcher = RecordingDispatcher()
    loop = make_loop(kafka_bootstrap, topics, dispatcher, "g-trace")
    try:
        drive(loop, lambda: len(dispatcher.jobs) == 1)
    finally:
        loop.close()
    [consume] = [s for s in spans.get_finished_spans() if s.name == "firstfault.consume"]
    assert f"{consume.context.trace_id:032x}" == TRACE_ID
    [(_, headers)] = dispatcher.jobs
    # the worker's span will be a child of the consume span, in the producer's trace
    assert headers["traceparent"] == f"00-{TRACE_ID}-{consume.context.span_id:016x}-01"


@pytest.mark.integration
def test_trace_context_crosses_the_celery_hop(spans: InMemorySpanExporter) -> None:
    import uuid

    import redis
    from celery.contrib.testing.worker import start_worker

    from workers import tasks
    from workers.celery_app import make_app

    broker, prefix = "redis://127.0.0.1:6379/10", f"fftest-{uuid.uuid4().hex[:8]}-"
    try:
        redis.Redis.from_url(broker).ping()
    except redis.ConnectionError as exc:
        pytest.skip(f"Redis not reachable: {exc}")
    app = make_app(load_settings(environ={"FIRSTFAULT_BROKER_URL": broker, "FIRSTFAULT_BROKER_PREFIX": prefix,
                                          "FIRSTFAULT_QUEUE": f"{prefix}q"}, path="/dev/null"))
    seen: list[dict[str, str]] = []

    class _Recording:
        def accept_job(self, event: object, headers: dict[str, str]) -> None:
            with tracing.span("firstfault.record_job", headers):
                seen.append(headers)

    spans.clear()
    tasks.pipeline.cache_clear()
    original = tasks.pipeline
    tasks.pipeline = lambda: _Recording()  # type: ignore[assignment,return-value]
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            from store.testing import MemoryPayloadStore
            from workers.dispatch import CeleryDispatcher

            CeleryDispatcher(app, MemoryPayloadStore()).submit_job(failed_job("t2"), {"traceparent": TRACEPARENT})
            wait_for(lambda: seen, 30, "the task")
    finally:
        tasks.pipeline = original
    assert seen[0] == {"traceparent": TRACEPARENT}
    assert "firstfault.record_job" in _names_in_trace(spans)
