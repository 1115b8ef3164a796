"""One suite for every Dispatcher (ingest/dispatch.py) and every Scheduler (pipeline/service.py): what a user of
the service would notice (a job event or shard handed on arrives once, whole, with its trace headers; a
correlation scheduled for a time by the Pipeline's clock runs then, once, and not before).

In-memory implementations always (the package's ingest.testing.RecordingDispatcher and
pipeline.testing.RecordingScheduler, the embedded queue and timer, tests/fakes' FileDispatcher); Kafka (Tansu)
and Celery (Redis: CeleryDispatcher, serve's StoringDispatcher, CeleryScheduler) ones under the ``integration``
marker.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import pytest

from ingest.dispatch import Dispatcher
from ingest.testing import RecordingDispatcher
from pipeline.embedded import TICK_S, EmbeddedRunner
from pipeline.testing import RecordingScheduler
from schemas.clock import ManualClock, system_clock
from schemas.wire import JobEvent, LogShard
from tests.fakes.ingest import FileDispatcher
from tests.integration.conftest import kafka_bootstrap, topics  # noqa: F401  (Tansu, for the Kafka case)
from tests.pipeline.helpers import failed_job

HEADERS = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
Seen = tuple[str, str, int | None, dict[str, str] | None]  # kind, job id, seq, headers (None: not carried)


@dataclass
class FakePipeline:
    """What the embedded runner calls: records each call."""

    calls: list[tuple[str, str, int | None, dict[str, str]]] = field(default_factory=list)
    store: Any = None

    def accept_job(self, event: JobEvent, headers: Mapping[str, str] | None = None) -> None:
        self.calls.append(("job", event.job_id, None, dict(headers or {})))

    def accept_shard(self, shard: LogShard, headers: Mapping[str, str] | None = None) -> bool:
        self.calls.append(("shard", shard.job_id, shard.seq, dict(headers or {})))
        return True

    def correlate(self, job_id: str, headers: Mapping[str, str] | None = None) -> None:
        self.calls.append(("correlate", job_id, None, dict(headers or {})))


@dataclass
class Case:
    dispatcher: Any
    seen: Callable[[list[str]], list[Seen]]  # given the kinds handed on: what arrived (waiting a while for them)


def _embedded(clock: ManualClock | None = None) -> tuple[EmbeddedRunner, FakePipeline]:
    runner = EmbeddedRunner(clock=clock) if clock is not None else EmbeddedRunner()
    pipe = FakePipeline()
    runner.bind(pipe)  # type: ignore[arg-type]
    runner.start()
    return runner, pipe


def _until(count: int, read: Callable[[], list[Seen]], limit_s: float = 20) -> list[Seen]:
    deadline = time.monotonic() + limit_s
    while len(read()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # a duplicate would arrive about as fast as the original
    return read()


def _celery_app(broker_prefix: str) -> Any:
    from config.settings import Settings
    from tests.conftest import BROKER
    from workers.celery_app import make_app
    return make_app(Settings(broker_url=BROKER, broker_prefix=broker_prefix, queue=f"{broker_prefix}q"))


def _celery_messages(app: Any) -> list[Any]:
    """Every message waiting on the app's queue, taken off it (nothing else consumes it: no worker runs)."""
    out: list[Any] = []
    with app.connection_for_read() as conn, conn.SimpleQueue(app.conf.task_default_queue) as q:
        while True:
            try:
                msg = q.get(timeout=0.5)
            except q.Empty:
                return out
            out.append(msg)
            msg.ack()


@pytest.fixture(params=["embedded", "recording", "file", "kafka", "celery", "storing"])
def handoff(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Case]:
    kind = request.param
    if kind == "embedded":
        runner, pipe = _embedded()
        yield Case(runner, lambda kinds: _until(len(kinds), lambda: list(pipe.calls)))
        runner.stop()
    elif kind == "recording":
        rec = RecordingDispatcher()
        yield Case(rec, lambda kinds: [("job", e.job_id, None, h) for e, h in rec.jobs]
                   + [("shard", s.job_id, s.seq, h) for s, h in rec.shards])
    elif kind == "file":
        path = tmp_path / "handed.txt"

        def lines() -> list[Seen]:
            text = path.read_text() if path.exists() else ""
            return [("job", p[1], None, None) if p[0] == "job" else ("shard", p[1], int(p[2]), None)
                    for p in (line.split() for line in text.splitlines())]
        yield Case(FileDispatcher(str(path), hang=False), lambda kinds: _until(len(kinds), lines))
    elif kind == "kafka":
        request.applymarker(pytest.mark.integration)
        from ingest.kafka import KafkaDispatcher, WireProducer
        from ingest.validate import validate_message

        bootstrap, topics = request.getfixturevalue("kafka_bootstrap"), request.getfixturevalue("topics")
        producer = WireProducer(bootstrap)

        def consumed(kinds: list[str]) -> list[Seen]:
            """Both topics from their beginning, without a group, until as many messages as were handed on
            and then a second more (a duplicate would be there by then). By count, not end offset: Tansu reports
            a partition's end as one past its last batch."""
            import kafka
            from kafka import TopicPartition

            reader = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
            parts = [TopicPartition(t, p) for t in (topics.jobs, topics.shards)
                     for p in sorted(reader.partitions_for_topic(t) or ())]
            reader.assign(parts)
            reader.seek_to_beginning(*parts)
            out: list[Seen] = []
            deadline, extra = time.monotonic() + 30, None
            while time.monotonic() < (extra or deadline):
                for batch in reader.poll(timeout_ms=200).values():
                    for r in batch:
                        what: Literal["job", "shard"] = "job" if r.topic == topics.jobs else "shard"
                        m = validate_message(what, r.value, r.key)
                        out.append((what, m.job_id, getattr(m, "seq", None),
                                    {k: v.decode() for k, v in r.headers if k in HEADERS}))
                if extra is None and len(out) >= len(kinds):
                    extra = time.monotonic() + 1.0
            reader.close()
            return out
        yield Case(KafkaDispatcher(producer, topics), consumed)
        producer.close()
    else:
        request.applymarker(pytest.mark.integration)
        from store.ports import ShardRef
        from store.testing import MemoryPayloadStore
        from workers.dispatch import CeleryDispatcher, StoringDispatcher

        app = _celery_app(request.getfixturevalue("broker_prefix"))
        payloads = MemoryPayloadStore()
        # serve's: a job event is stored by the edge itself (its Pipeline's accept_job), a shard goes as a task
        pipe = FakePipeline(store=SimpleNamespace(payloads=payloads))
        pipe.clock = system_clock  # type: ignore[attr-defined]

        def published(kinds: list[str]) -> list[Seen]:
            """A shard's task names its payload, which is there, whole (the shard's data as sent, with its
            compression)."""
            out: list[Seen] = []
            for msg in _celery_messages(app):
                (arg,), _, _ = msg.payload
                kind_ = "job" if msg.headers["task"] == "firstfault.record_job" else "shard"
                if kind_ == "shard":
                    [kept] = payloads.payloads([ShardRef.from_json(arg)])
                    assert kept is not None and (kept.compression, kept.data) == ("none",
                                                                                 f"line {arg['seq']}\n".encode())
                out.append((kind_, arg["job_id"], arg.get("seq") if kind_ == "shard" else None,
                            {k: msg.headers[k] for k in HEADERS if k in msg.headers}))
            return out
        if kind == "celery":
            yield Case(CeleryDispatcher(app, payloads), published)
        else:
            yield Case(StoringDispatcher(app, pipe), lambda kinds: [("job", j, None, h) for k, j, _, h in pipe.calls
                                                                    if k == "job"] + published(kinds))


def _shard(job_id: str, seq: int, eof: bool = False) -> LogShard:
    return LogShard(job_id=job_id, rank=0, host="node001", stream="stderr", seq=seq, eof=eof, source="rank0.log",
                    data=f"line {seq}\n")


def test_what_is_handed_on_arrives_once_whole_and_with_its_trace_headers(handoff: Case) -> None:
    job = f"j-{uuid.uuid4().hex[:6]}"
    dispatcher: Dispatcher = handoff.dispatcher
    items: list[JobEvent | LogShard] = [failed_job(job), _shard(job, 0), _shard(job, 1, eof=True)]
    for item in items:
        if isinstance(item, JobEvent):
            dispatcher.submit_job(item, HEADERS)
        else:
            dispatcher.submit_shard(item, HEADERS)
    seen = handoff.seen(["job" if isinstance(i, JobEvent) else "shard" for i in items])
    assert sorted((k, j, s) for k, j, s, _ in seen) == [("job", job, None), ("shard", job, 0), ("shard", job, 1)]
    assert all(h is None or h == HEADERS for *_, h in seen)  # None: a file keeps no headers (a test double)


# -- schedulers -----------------------------------------------------------------------------------------------------
@dataclass
class Timed:
    clock: ManualClock
    scheduler: Any
    ran: Callable[[], list[str]]  # job ids whose correlation has run by the injected clock's now, in order


@pytest.fixture(params=["embedded", "recording", "celery"])
def timed(request: pytest.FixtureRequest) -> Iterator[Timed]:
    clock = ManualClock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))  # far from the wall clock on purpose
    if request.param == "recording":
        recording = RecordingScheduler()
        yield Timed(clock, recording, lambda: recording.due(clock.now))
        return
    if request.param == "embedded":
        runner, pipe = _embedded(clock)
        yield Timed(clock, runner, lambda: [j for k, j, _, _ in pipe.calls if k == "correlate"])
        runner.stop()
        return
    request.applymarker(pytest.mark.integration)
    from workers.dispatch import CeleryScheduler

    app = _celery_app(request.getfixturevalue("broker_prefix"))
    skew = clock.now - datetime.now(UTC)  # the injected clock against the broker's (the wall's)
    taken: list[Any] = []

    def ran() -> list[str]:
        """No worker runs: a task the broker would have handed out by now (by the injected clock) has run.
        Celery's eta is wall time; one without an eta goes at once."""
        taken.extend(_celery_messages(app))
        out = []
        for msg in taken:
            eta = msg.headers.get("eta")
            at = datetime.fromisoformat(eta) + skew if eta else None
            if at is None or at <= clock.now + timedelta(seconds=2):  # 2 s: the test's own run time
                out.append(msg.payload[0][0])
        return out
    yield Timed(clock, CeleryScheduler(app, clock), ran)


def test_a_correlation_runs_at_its_time_by_the_injected_clock_and_once(timed: Timed) -> None:
    timed.scheduler.correlate_at("j-later", timed.clock.now + timedelta(seconds=30), HEADERS)
    timed.scheduler.correlate_at("j-now", timed.clock.now, HEADERS)
    assert _until_ran(timed, 1) == ["j-now"]
    time.sleep(2 * TICK_S)
    assert timed.ran() == ["j-now"]  # the wall clock moved; the injected one did not
    timed.clock.advance(30)
    assert sorted(_until_ran(timed, 2)) == ["j-later", "j-now"]
    time.sleep(2 * TICK_S)
    assert sorted(timed.ran()) == ["j-later", "j-now"]  # once each


def _until_ran(timed: Timed, count: int) -> list[str]:
    deadline = time.monotonic() + 10
    while len(timed.ran()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return timed.ran()
