"""One suite for every Source (ingest/consumer.py), run through the IngestLoop as `serve` runs it: what a user of
the service would notice (every message handed on once, a hand-off that was refused tried again and not skipped,
and whatever a consumer took but did not commit going to the next consumer of its group, nothing else).

The in-memory Source the package ships (ingest.testing.MemorySource) always; Kafka's (Tansu) under the
``integration`` marker.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from ingest.consumer import IngestLoop, Source
from ingest.dlq import DeadLetterWriter
from ingest.testing import MemoryLog, MemorySource, RecordingDispatcher
from ingest.topics import Topics
from schemas.retry import RetryPolicy
from schemas.wire import JobEvent, LogShard
from tests.fakes.ingest import DlqProducer
from tests.integration.conftest import kafka_bootstrap, topics  # noqa: F401  (Tansu, for the Kafka case)
from tests.pipeline.helpers import failed_job

LIMIT_S = 60


@dataclass
class Feed:
    topics: Topics
    send: Callable[[list[JobEvent | LogShard]], None]  # onto the topics, durably, in order
    source: Callable[[str], Source]  # a new consumer in the group


@pytest.fixture(params=["memory", "kafka"])
def feed(request: pytest.FixtureRequest) -> Iterator[Feed]:
    if request.param == "memory":
        log = MemoryLog()
        names = Topics("m.jobs", "m.shards", "m.dlq")

        def append(items: list[JobEvent | LogShard]) -> None:
            for item in items:
                topic = names.jobs if isinstance(item, JobEvent) else names.shards
                log.append(topic, item.job_id.encode(), item.model_dump_json().encode())
        yield Feed(names, append, lambda group: MemorySource(log, (names.jobs, names.shards), group, batch=2))
        return
    request.applymarker(pytest.mark.integration)
    from ingest.kafka import KafkaSource, WireProducer

    bootstrap, fresh = request.getfixturevalue("kafka_bootstrap"), request.getfixturevalue("topics")
    producer = WireProducer(bootstrap)

    def send(items: list[JobEvent | LogShard]) -> None:
        for item in items:
            if isinstance(item, JobEvent):
                producer.send_job(item, fresh)
            else:
                producer.send_shard(item, fresh)
        producer.flush()
    yield Feed(fresh, send, lambda group: KafkaSource(bootstrap, fresh, group, batch=2))
    producer.close()


def _job(n: int = 2) -> tuple[str, list[JobEvent | LogShard]]:
    job = f"j-{uuid.uuid4().hex[:6]}"
    shards = [LogShard(job_id=job, rank=0, stream="stderr", seq=s, eof=s == n - 1, data=f"line {s}\n")
              for s in range(n)]
    return job, [failed_job(job), *shards]


def _loop(feed: Feed, source: Source, dispatcher: RecordingDispatcher) -> IngestLoop:
    return IngestLoop(source, dispatcher, DeadLetterWriter(DlqProducer()), feed.topics, poll_timeout_s=0.2,
                      backoff=RetryPolicy(0.0, 0.0, None))


def _drive(loop: IngestLoop, dispatcher: RecordingDispatcher, count: int) -> None:
    stop, deadline = threading.Event(), time.monotonic() + LIMIT_S
    while len(dispatcher.jobs) + len(dispatcher.shards) < count:
        assert time.monotonic() < deadline, "the consumer loop made no progress"
        loop.step(stop)


def _handed(dispatcher: RecordingDispatcher) -> list[tuple[str, int | None]]:
    return [(e.job_id, None) for e, _ in dispatcher.jobs] + [(s.job_id, s.seq) for s, _ in dispatcher.shards]


def _left_for(feed: Feed, group: str) -> list[tuple[str, int | None]]:
    """What a new consumer of the group is given besides a marker sent now: it has joined the group once it is
    given the marker, and anything left before it in the partitions comes with it or soon after."""
    marker = failed_job(f"marker-{uuid.uuid4().hex[:6]}")
    feed.send([marker])
    source = feed.source(group)
    try:
        out: list[tuple[str, int | None]] = []
        deadline, extra = time.monotonic() + LIMIT_S, None
        while time.monotonic() < (extra or deadline):
            for r in source.poll(0.2):
                m = (JobEvent if r.topic == feed.topics.jobs else LogShard).model_validate_json(r.value or b"")
                out.append((m.job_id, getattr(m, "seq", None)))
            if extra is None and (marker.job_id, None) in out:
                extra = time.monotonic() + 1.0
        assert (marker.job_id, None) in out, "the new consumer was never given the marker"
        return [x for x in out if x != (marker.job_id, None)]
    finally:
        source.close()


def test_each_message_is_handed_on_once_and_a_consumer_after_it_is_given_none_again(feed: Feed) -> None:
    job, items = _job(3)
    feed.send(items)
    group, dispatcher = f"g-{uuid.uuid4().hex[:6]}", RecordingDispatcher()
    loop = _loop(feed, feed.source(group), dispatcher)
    try:
        _drive(loop, dispatcher, len(items))
    finally:
        loop.close()
    assert _handed(dispatcher) == [(job, None), (job, 0), (job, 1), (job, 2)]
    assert _left_for(feed, group) == []  # committed as it went


def test_a_refused_hand_off_is_tried_again_in_order_and_none_is_skipped(feed: Feed) -> None:
    job, items = _job(3)
    feed.send(items)
    group, dispatcher = f"g-{uuid.uuid4().hex[:6]}", RecordingDispatcher(refuse=3)
    loop = _loop(feed, feed.source(group), dispatcher)
    try:
        _drive(loop, dispatcher, len(items))
    finally:
        loop.close()
    assert dispatcher.attempts == len(items) + 3
    assert [s for _, s in _handed(dispatcher)[1:]] == [0, 1, 2]  # a shard's partition keeps its order
    assert sorted(_handed(dispatcher), key=str) == sorted([(job, None), (job, 0), (job, 1), (job, 2)], key=str)
    assert _left_for(feed, group) == []


def test_what_a_consumer_took_and_did_not_commit_goes_to_the_next_one_of_its_group(feed: Feed) -> None:
    _, items = _job(2)
    feed.send(items)
    group = f"g-{uuid.uuid4().hex[:6]}"
    first = feed.source(group)
    taken: list[tuple[str, int, int]] = []
    deadline = time.monotonic() + LIMIT_S
    while len(taken) < len(items):
        assert time.monotonic() < deadline, "the consumer was given nothing"
        taken += [(r.topic, r.partition, r.offset) for r in first.poll(0.2)]
    first.close()  # a crash, as far as the group can tell: nothing was committed
    again = feed.source(group)
    given: list[tuple[str, int, int]] = []
    deadline = time.monotonic() + LIMIT_S
    while len(given) < len(items):
        assert time.monotonic() < deadline, f"the next consumer was given {given} of {taken}"
        given += [(r.topic, r.partition, r.offset) for r in again.poll(0.2)]
    again.commit({(t, p): o + 1 for t, p, o in given})
    again.close()
    assert sorted(given) == sorted(taken)
    assert _left_for(feed, group) == []
