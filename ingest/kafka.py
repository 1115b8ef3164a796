"""kafka-python at the edge: a consumer source and a producer that speak firstfault's terms (records, next offsets,
str headers) and raise only TransportError. The consume loop itself is in ingest/consumer.py.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import kafka
import kafka.errors
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata, TopicPartition

from ingest.topics import DEFAULT_TOPICS, Topics
from pipeline import metrics
from schemas.errors import TransportError
from schemas.wire import MAX_SHARD_BYTES, JobEvent, LogShard

log = logging.getLogger(__name__)

GROUP = "firstfault-ingest"
# Tansu (and small clusters) form a group in ~3 s with these instead of ~23 s with kafka-python's defaults;
# a consumer that dies is noticed within 6 s, so its partitions are redelivered quickly.
FAST_GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}
_PENDING_SENDS = 256  # futures kept before the oldest is awaited: bounds a producer's memory on huge uploads


@dataclass(frozen=True)
class Record:
    """One consumed message, decoupled from kafka-python's types."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, str]  # trace context (`traceparent`) rides here


def str_headers(headers: Iterable[tuple[str, bytes | None]] | None) -> dict[str, str]:
    return {name: (value or b"").decode("utf-8", "replace") for name, value in headers or ()}


def _transport(what: str, exc: Exception) -> TransportError:
    return TransportError(f"kafka: {what}: {exc}")


class KafkaSource:
    """The consumer of firstfault.jobs and firstfault.shards. Auto-commit is off: the loop commits offsets itself,
    after hand-off, because kafka-python's default (every 5 s, whatever happened) loses messages on a crash."""

    def __init__(self, bootstrap: str, topics: Topics = DEFAULT_TOPICS, group: str = GROUP, batch: int = 64,
                 **overrides: Any) -> None:
        config: dict[str, Any] = {
            "bootstrap_servers": bootstrap, "group_id": group, "enable_auto_commit": False,
            "auto_offset_reset": "earliest",  # a new group reads what was produced before it existed
            "max_poll_records": batch,
            # Fetch buffers are memory too: a little over one batch's worth, never the 50 MB default.
            "fetch_max_bytes": 16 << 20, "max_partition_fetch_bytes": 2 * MAX_SHARD_BYTES,
            **FAST_GROUP, **overrides,
        }
        try:
            self._consumer = kafka.KafkaConsumer(topics.jobs, topics.shards, **config)
        except kafka.errors.KafkaError as exc:
            raise _transport(f"cannot connect to {bootstrap}", exc) from exc

    def poll(self, timeout_s: float) -> list[Record]:
        try:
            batches = self._consumer.poll(timeout_ms=int(timeout_s * 1000))
        except kafka.errors.KafkaError as exc:
            raise _transport("poll failed", exc) from exc
        self._report_lag()
        return [Record(m.topic, m.partition, m.offset, m.key, m.value, str_headers(m.headers))
                for messages in batches.values() for m in messages]

    def _report_lag(self) -> None:
        """Consumer lag per assigned partition, from what the last fetch told us (the high watermark) and where we
        are: no request of its own. A partition not fetched yet has no watermark and is skipped."""
        try:
            for tp in self._consumer.assignment():
                high = self._consumer.highwater(tp)
                if high is not None:
                    position = self._consumer.position(tp)
                    metrics.CONSUMER_LAG.labels(tp.topic, str(tp.partition)).set(max(0, high - position))
        except kafka.errors.KafkaError as exc:  # a metric is not worth failing a poll over
            log.debug("consumer lag: %s", exc)

    def commit(self, next_offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit, per (topic, partition), the offset of the next message to read."""
        offsets = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in next_offsets.items()}
        try:
            self._consumer.commit(offsets=offsets)
        except kafka.errors.KafkaError as exc:
            raise _transport("commit failed", exc) from exc

    def seek(self, topic: str, partition: int, offset: int) -> None:
        """Read (topic, partition) from `offset` again. A partition no longer assigned is skipped: its new owner
        starts from the committed offset anyway."""
        tp = TopicPartition(topic, partition)
        try:
            if tp in self._consumer.assignment():
                self._consumer.seek(tp, offset)
        except kafka.errors.KafkaError as exc:
            raise _transport(f"seek {topic}[{partition}] to {offset} failed", exc) from exc

    def close(self) -> None:
        """Leave the group without committing: what was not committed is redelivered."""
        try:
            self._consumer.close(autocommit=False)
        except kafka.errors.KafkaError as exc:
            log.warning("kafka consumer close: %s", exc)


class WireProducer:
    """A producer with acks=all. `send` queues; `flush` returns once every queued message is acknowledged by the
    broker, and raises TransportError if any was not.

    Not idempotent (kafka-python 3 turns it on by default): a broker restarted in the middle of storing a batch
    can come back with the batch's sequence number recorded and the batch itself lost (Tansu on S3 writes the
    producer's sequence, then the watermark, then the batch), and answers the retry DUPLICATE_SEQUENCE_NUMBER,
    which the client counts as a success: acknowledged, never stored (tests/integration/test_broker_restart.py;
    how bench/faults.py's Tansu restart can lose a job's event). Without sequence numbers the retry is stored
    again; a message stored twice is harmless, as everything downstream is idempotent on (job_id, stream,
    rank/host, seq)."""

    def __init__(self, bootstrap: str, **overrides: Any) -> None:
        config: dict[str, Any] = {
            "bootstrap_servers": bootstrap, "acks": "all", "enable_idempotence": False,
            # A 1 MiB value plus key, headers and batch framing must fit in one request.
            "max_request_size": 2 * MAX_SHARD_BYTES, "linger_ms": 5, "max_block_ms": 15000, **overrides,
        }
        try:
            self._producer = kafka.KafkaProducer(**config)
        except kafka.errors.KafkaError as exc:
            raise _transport(f"cannot connect to {bootstrap}", exc) from exc
        self._pending: deque[Any] = deque()
        self.acked: list[tuple[str, int, int]] = []  # (topic, partition, offset) of each acknowledged message

    def send(self, topic: str, key: bytes | None, value: bytes, headers: Mapping[str, str]) -> None:
        try:
            future = self._producer.send(topic, key=key, value=value,
                                         headers=[(k, v.encode("utf-8")) for k, v in headers.items()])
        except kafka.errors.KafkaError as exc:
            raise _transport(f"send to {topic} failed", exc) from exc
        self._pending.append(future)
        while len(self._pending) > _PENDING_SENDS:
            self._settle(self._pending.popleft())

    def send_job(self, event: JobEvent, topics: Topics = DEFAULT_TOPICS, headers: Mapping[str, str] = {}) -> None:
        self.send(topics.jobs, event.job_id.encode("utf-8"), event.model_dump_json().encode("utf-8"), headers)

    def send_shard(self, shard: LogShard, topics: Topics = DEFAULT_TOPICS, headers: Mapping[str, str] = {}) -> None:
        self.send(topics.shards, shard.job_id.encode("utf-8"), shard.model_dump_json().encode("utf-8"), headers)

    def flush(self) -> None:
        try:
            self._producer.flush()
        except kafka.errors.KafkaError as exc:
            raise _transport("flush failed", exc) from exc
        while self._pending:
            self._settle(self._pending.popleft())

    def _settle(self, future: Any) -> None:
        try:
            meta = future.get()
        except kafka.errors.KafkaError as exc:
            raise _transport("a message was not acknowledged", exc) from exc
        self.acked.append((meta.topic, meta.partition, meta.offset))
        del self.acked[:-_PENDING_SENDS]  # where the latest messages went (a shipper's report), not all of them

    def close(self, timeout_s: float | None = None) -> None:
        """Stop the producer's thread; by default once what is queued is sent, with `timeout_s` (0: at once)
        giving up on the rest."""
        try:
            self._producer.close(timeout=timeout_s)
        except kafka.errors.KafkaError as exc:
            log.warning("kafka producer close: %s", exc)


class KafkaDispatcher:
    """A Dispatcher that hands on by producing to firstfault.jobs / firstfault.shards (the HTTP ingest in distributed
    mode): returns once the broker acknowledged the message, raises TransportError when it did not."""

    def __init__(self, producer: WireProducer, topics: Topics = DEFAULT_TOPICS) -> None:
        self._producer = producer
        self._topics = topics

    def submit_job(self, event: JobEvent, headers: Mapping[str, str]) -> None:
        self._producer.send_job(event, self._topics, headers)
        self._producer.flush()

    def submit_shard(self, shard: LogShard, headers: Mapping[str, str], data: bytes | None = None) -> None:
        self._producer.send_shard(shard, self._topics, headers)  # the message as received: its consumer decodes
        self._producer.flush()


def create_topics(bootstrap: str, topics: Topics = DEFAULT_TOPICS, partitions: int = 1, replication: int = 1) -> None:
    """Create the three topics when they do not exist yet (an existing topic is left alone)."""
    try:
        admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
    except kafka.errors.KafkaError as exc:
        raise _transport(f"cannot connect to {bootstrap}", exc) from exc
    try:
        missing = {topics.jobs, topics.shards, topics.dlq} - set(admin.list_topics())
        if missing:
            admin.create_topics([NewTopic(name, partitions, replication) for name in sorted(missing)])
    except kafka.errors.TopicAlreadyExistsError:
        pass  # created concurrently by another process
    except kafka.errors.KafkaError as exc:
        raise _transport("cannot create topics", exc) from exc
    finally:
        admin.close()
