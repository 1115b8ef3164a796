"""In-memory adapters of the ingest ports, for tests and benches: a Source over topics kept in memory
(``MemoryLog``, ``MemorySource``) and a Dispatcher that records what it is handed (``RecordingDispatcher``).

Each is run beside the real adapters by one contract suite: tests/ingest/test_source_contract.py runs the
IngestLoop's commit, rewind and redelivery against ``MemorySource`` and ``ingest.kafka.KafkaSource`` (Tansu);
tests/pipeline/test_handoff_contract.py runs ``RecordingDispatcher`` with the embedded queue, Kafka and Celery.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ingest.kafka import Record
from schemas.errors import RetryableError
from schemas.wire import JobEvent, LogShard


@dataclass
class MemoryLog:
    """Topics as a broker keeps them: each partition an append-only list (a record's offset is its index), and
    each consumer group's committed offsets (the offset of the next record to read)."""

    partitions: int = 3
    records: dict[tuple[str, int], list[Record]] = field(default_factory=dict)
    committed: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)

    def append(self, topic: str, key: bytes | None, value: bytes, headers: Mapping[str, str] | None = None) -> Record:
        """Kafka's default partitioner keeps one key's records in one partition, in order; so does this."""
        partition = zlib.crc32(key) % self.partitions if key is not None else 0
        kept = self.records.setdefault((topic, partition), [])
        record = Record(topic, partition, len(kept), key, value, dict(headers or {}))
        kept.append(record)
        return record


class MemorySource:
    """A consumer of a MemoryLog's `topics` in `group`, the one member of its group: it starts from the group's
    committed offsets (the beginning where none is, as auto_offset_reset=earliest does), `poll` returns up to
    `batch` records past its positions and moves them on, `commit` keeps the group's offsets, `seek` moves a
    position, and `close` leaves without committing (what was not committed goes to the next consumer)."""

    def __init__(self, log: MemoryLog, topics: Sequence[str], group: str, batch: int = 64) -> None:
        self.log, self.topics, self.group, self.batch = log, tuple(topics), group, batch
        self._positions = dict(log.committed.get(group, {}))
        self.closed = False

    def poll(self, timeout_s: float) -> list[Record]:
        out: list[Record] = []
        for (topic, partition), kept in sorted(self.log.records.items()):
            if topic not in self.topics:
                continue
            start = self._positions.get((topic, partition), 0)
            taken = kept[start:start + self.batch - len(out)]
            out += taken
            self._positions[(topic, partition)] = start + len(taken)
        return out

    def commit(self, next_offsets: Mapping[tuple[str, int], int]) -> None:
        self.log.committed.setdefault(self.group, {}).update(next_offsets)

    def seek(self, topic: str, partition: int, offset: int) -> None:
        self._positions[(topic, partition)] = offset

    def close(self) -> None:
        self.closed = True


@dataclass
class RecordingDispatcher:
    """Hands off to a list. `refuse` RetryableErrors come first; `before` runs on every attempt (to observe the
    broker at that moment)."""

    refuse: int = 0
    before: Callable[[JobEvent | LogShard], None] | None = None
    jobs: list[tuple[JobEvent, dict[str, str]]] = field(default_factory=list)
    shards: list[tuple[LogShard, dict[str, str]]] = field(default_factory=list)
    attempts: int = 0

    def submit_job(self, event: JobEvent, headers: Mapping[str, str]) -> None:
        self._attempt(event)
        self.jobs.append((event, dict(headers)))

    def submit_shard(self, shard: LogShard, headers: Mapping[str, str], data: bytes | None = None) -> None:
        self._attempt(shard)
        self.shards.append((shard, dict(headers)))

    def _attempt(self, model: JobEvent | LogShard) -> None:
        self.attempts += 1
        if self.before is not None:
            self.before(model)
        if self.attempts <= self.refuse:
            raise RetryableError(f"refusing hand-off {self.attempts} of {self.refuse}", retry_after=0.0)
