"""The ingest loop: poll a bounded batch, validate, hand valid messages to the Dispatcher, dead-letter the rest,
then commit. At-least-once: an offset is committed only after its message is durably handed on or dead-lettered,
so a crash between hand-off and commit redelivers (downstream is idempotent on (job_id, stream, rank/host, seq)).

Backpressure: when the dispatcher (or the DLQ) cannot take a message, the loop commits what it did hand on, seeks
every partition back to its first unhandled message, drops the rest of the batch and polls again after a backoff.
It never holds more than one batch.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ingest.dispatch import BatchDispatcher, Dispatcher
from ingest.dlq import DeadLetter, DeadLetterWriter
from ingest.kafka import GROUP, KafkaSource, Record, WireProducer
from ingest.topics import DEFAULT_TOPICS, Kind, Topics
from ingest.validate import validate_packed
from pipeline import metrics, tracing
from schemas.errors import InvalidMessage, PermanentError, RetryableError, TransportError
from schemas.retry import CONSUMER, RetryPolicy
from schemas.wire import JobEvent, LogShard

log = logging.getLogger(__name__)
GROUP_SHARDS = 64  # shards of a poll in a row handed on together (to a BatchDispatcher) ...
GROUP_BYTES = 4 << 20  # ... up to this much of their data: one broker message


class Source(Protocol):
    """What the loop needs of a consumer (ingest.kafka.KafkaSource; in memory, ingest.testing.MemorySource: one
    suite runs the loop on both, tests/ingest/test_source_contract.py). Every method raises only TransportError."""

    def poll(self, timeout_s: float) -> list[Record]: ...

    def commit(self, next_offsets: Mapping[tuple[str, int], int]) -> None: ...

    def seek(self, topic: str, partition: int, offset: int) -> None: ...

    def close(self) -> None: ...


class DeadLetters(Protocol):
    """ingest.dlq.DeadLetterWriter: returns once the dead letter is durable, raises TransportError otherwise."""

    def write(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None, reason: str,
              headers: Mapping[str, str]) -> object: ...

    def close(self) -> None: ...


@dataclass
class Progress:
    """What one batch did; the loop's counters for logs and tests."""

    handed_on: int = 0
    dead_lettered: int = 0
    retried: bool = False


class IngestLoop:
    def __init__(self, source: Source, dispatcher: Dispatcher, dead_letters: DeadLetters,
                 topics: Topics = DEFAULT_TOPICS, poll_timeout_s: float = 1.0, backoff: RetryPolicy = CONSUMER) -> None:
        self._source = source
        self._dispatcher = dispatcher
        self._dead_letters = dead_letters
        self._topics = topics
        self._poll_timeout_s = poll_timeout_s
        self._backoff, self._retries = backoff, 0

    def run(self, stop: threading.Event) -> None:
        """Consume until `stop` is set, then close the consumer (what is handed on is committed by then)."""
        try:
            while not stop.is_set():
                self.step(stop)
        finally:
            self.close()

    def close(self) -> None:
        """Leave the group (without committing: the loop commits as it goes) and close the DLQ producer."""
        try:
            self._source.close()
        finally:
            self._dead_letters.close()

    def step(self, stop: threading.Event) -> Progress:
        """One batch: poll, hand on or dead-letter each message in order, commit, rewind what was not handled."""
        progress = Progress()
        try:
            batch = self._source.poll(self._poll_timeout_s)
        except TransportError as exc:
            self._wait(stop, exc)
            progress.retried = True
            return progress
        next_offsets: dict[tuple[str, int], int] = {}
        failure: RetryableError | None = None
        group = _Group()  # valid shards waiting to go together; handed on before anything after them
        for record in batch:
            if stop.is_set():
                break
            try:
                if self._group(record, group):
                    if group.full():
                        self._flush(group, next_offsets, progress)
                    continue
                self._flush(group, next_offsets, progress)
                if self._handle(record):
                    progress.handed_on += 1
                else:
                    progress.dead_lettered += 1
            except RetryableError as exc:
                failure = exc
                break
            next_offsets[(record.topic, record.partition)] = record.offset + 1
        if failure is None and not stop.is_set():
            try:
                self._flush(group, next_offsets, progress)
            except RetryableError as exc:
                failure = exc
                record = group.records[0]
        self._commit(next_offsets)
        self._rewind(batch, next_offsets)
        if failure is not None:
            log.warning("ingest: cannot hand on %s, retrying: %s", _where(record), failure)
            self._wait(stop, failure)
            progress.retried = True
        else:
            self._retries = 0
        return progress

    def _group(self, record: Record, group: _Group) -> bool:
        """Add a valid shard to the group when the dispatcher takes groups; False for anything else (an event,
        a message to dead-letter: handled alone, after the group, so offsets are committed in order)."""
        if not isinstance(self._dispatcher, BatchDispatcher) or self._topics.kind(record.topic) != "shard":
            return False
        try:
            model, data = _validated("shard", record)
        except InvalidMessage:
            return False  # _handle validates it again and dead-letters it
        if not isinstance(model, LogShard) or data is None:
            return False
        with tracing.span("firstfault.consume", record.headers, topic=record.topic, offset=record.offset,
                          job_id=model.job_id):
            group.add(record, model, data, {**record.headers, **tracing.headers()})
        return True

    def _flush(self, group: _Group, next_offsets: dict[tuple[str, int], int], progress: Progress) -> None:
        """Hand the group on (RetryableError: none of it was, the loop rewinds to its first record)."""
        if not group.records:
            return
        assert isinstance(self._dispatcher, BatchDispatcher)
        self._dispatcher.submit_shards(group.shards, group.headers, group.data)
        for record, shard in zip(group.records, group.shards, strict=True):
            next_offsets[(record.topic, record.partition)] = record.offset + 1
            metrics.accepted("shard", "kafka", len(shard.data))
        progress.handed_on += len(group.records)
        group.clear()

    def _handle(self, record: Record) -> bool:
        """True when handed on, False when dead-lettered. RetryableError when neither was possible."""
        kind = self._topics.kind(record.topic)
        try:
            if kind is None:
                raise InvalidMessage(f"topic {record.topic!r} is not one firstfault ingests")
            model, data = _validated(kind, record)
            with tracing.span("firstfault.consume", record.headers, topic=record.topic, offset=record.offset,
                              job_id=model.job_id):
                # the next hop continues this span's trace (itself a child of the producer's traceparent)
                headers = {**record.headers, **tracing.headers()}
                if isinstance(model, JobEvent):
                    self._dispatcher.submit_job(model, headers)
                else:
                    self._dispatcher.submit_shard(model, headers, data)
            metrics.accepted(kind, "kafka", len(model.data) if isinstance(model, LogShard) else 0)
            return True
        except InvalidMessage as exc:
            reason, why = exc.reason, "invalid"
        except PermanentError as exc:  # the dispatcher refused it for good: keep it, with why
            reason, why = f"rejected downstream: {exc}", "downstream"
        log.info("ingest: dead-lettering %s: %s", _where(record), reason)
        self._dead_letters.write(record.topic, record.partition, record.offset, record.key, record.value, reason,
                                 record.headers)
        metrics.rejected(kind or "other", "kafka", why)  # once it is durable: a retried write is counted once
        return False

    def _commit(self, next_offsets: Mapping[tuple[str, int], int]) -> None:
        if not next_offsets:
            return
        try:
            self._source.commit(next_offsets)
        except TransportError as exc:
            # Lost on a rebalance, say: those messages are redelivered, which idempotent steps absorb.
            log.warning("ingest: %s; the handed-on messages will be delivered again", exc)

    def _rewind(self, batch: list[Record], next_offsets: Mapping[tuple[str, int], int]) -> None:
        first_unhandled: dict[tuple[str, int], int] = {}
        for record in batch:
            where = (record.topic, record.partition)
            if record.offset >= next_offsets.get(where, -1) and where not in first_unhandled:
                first_unhandled[where] = record.offset
        # A failed seek propagates and stops the loop: going on would commit past the unhandled messages.
        for (topic, partition), offset in first_unhandled.items():
            self._source.seek(topic, partition, offset)

    def _wait(self, stop: threading.Event, exc: RetryableError) -> None:
        # at least the backoff, even when the error says sooner: the whole batch is failing, not one request
        stop.wait(max(self._backoff.delay(self._retries), exc.retry_after or 0.0))
        self._retries += 1


def kafka_ingest(bootstrap: str, dispatcher: Dispatcher, topics: Topics = DEFAULT_TOPICS, group: str = GROUP,
                 batch: int = 64, poll_timeout_s: float = 1.0, backoff: RetryPolicy = CONSUMER,
                 also: Callable[[DeadLetter], object] | None = None) -> IngestLoop:
    """The loop wired to Kafka: a consumer of the jobs and shards topics, and a DLQ writer with its own producer.
    Run it with `loop.run(stop)`; `stop_on_signals(stop)` makes SIGTERM stop it cleanly."""
    source = KafkaSource(bootstrap, topics, group, batch=batch)
    try:
        dead_letters = DeadLetterWriter(WireProducer(bootstrap), topics.dlq, also=also)
    except TransportError:
        source.close()
        raise
    return IngestLoop(source, dispatcher, dead_letters, topics, poll_timeout_s, backoff)


@dataclass
class _Group:
    records: list[Record] = field(default_factory=list)
    shards: list[LogShard] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)  # each shard's packed bytes, checked when it was validated
    headers: list[dict[str, str]] = field(default_factory=list)
    size: int = 0

    def add(self, record: Record, shard: LogShard, data: bytes, headers: dict[str, str]) -> None:
        self.records.append(record)
        self.shards.append(shard)
        self.data.append(data)
        self.headers.append(headers)
        self.size += len(shard.data)

    def full(self) -> bool:
        return len(self.records) >= GROUP_SHARDS or self.size >= GROUP_BYTES

    def clear(self) -> None:
        self.records, self.shards, self.data, self.headers, self.size = [], [], [], [], 0


def _validated(kind: Kind, record: Record) -> tuple[JobEvent | LogShard, bytes | None]:
    """validate_packed, where a bug that lets another exception out dead-letters the message instead of
    stopping the loop on it again at every restart (a poison message)."""
    try:
        return validate_packed(kind, record.value, record.key)
    except InvalidMessage:
        raise
    except Exception as exc:
        log.exception("ingest: validating %s failed unexpectedly", _where(record))
        raise InvalidMessage(f"could not be validated ({type(exc).__name__}: {exc})") from exc


def _where(record: Record) -> str:
    return f"{record.topic}[{record.partition}]@{record.offset}"


def stop_on_signals(stop: threading.Event, signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)
                    ) -> None:
    """Set `stop` on SIGTERM/SIGINT so the loop finishes its message, commits and leaves the group cleanly.
    Call from the main thread."""
    for sig in signals:
        signal.signal(sig, lambda _signum, _frame: stop.set())
