"""Small helpers the Kafka integration tests share: build a loop, drive it, read a topic, read committed offsets."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import kafka
from kafka.structs import TopicPartition

from ingest.consumer import IngestLoop, kafka_ingest
from ingest.dispatch import Dispatcher
from ingest.topics import Topics
from schemas.retry import RetryPolicy

# A cap so that a broken pipeline fails the test instead of hanging it; nothing asserts on time.
LIMIT_S = int(os.environ.get("FF_LIMIT", "90"))


def make_loop(bootstrap: str, topics: Topics, dispatcher: Dispatcher, group: str,
              batch: int = 16) -> IngestLoop:
    return kafka_ingest(bootstrap, dispatcher, topics, group, batch, poll_timeout_s=0.2,
                        backoff=RetryPolicy(0.05, 0.2, None))


def drive(loop: IngestLoop, done: Callable[[], bool]) -> None:
    import threading

    stop = threading.Event()
    deadline = time.monotonic() + LIMIT_S
    while not done():
        assert time.monotonic() < deadline, "the consumer loop made no progress"
        loop.step(stop)


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets({group: None}).get(group, {})
    finally:
        admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items() if meta.offset >= 0}


def read_topic(bootstrap: str, topic: str, count: int) -> list[kafka.consumer.fetcher.ConsumerRecord]:
    """The first `count` messages on a topic, read without a group (nothing committed). By count, not by end
    offset: Tansu 0.6 reports a partition's end as one past the last *batch*, not the last record."""
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        records: list[kafka.consumer.fetcher.ConsumerRecord] = []
        deadline = time.monotonic() + LIMIT_S
        while len(records) < count:
            assert time.monotonic() < deadline, f"only {len(records)} of {count} messages on {topic}"
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def committed_total(bootstrap: str, group: str, topics: Topics) -> int:
    """How many messages of `topics` the group has committed (offsets start at 0 on fresh topics)."""
    return sum(o for (t, _), o in committed(bootstrap, group).items() if t in (topics.jobs, topics.shards))
