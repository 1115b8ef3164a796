"""What the broker kept, read back after a fault run (bench/faults.py): every message of the jobs and shards topics
from the first offset, by a consumer outside any group. A job without an incident is then placed on one side: its
event is not in the log at all (lost between the shipper and the broker's storage, or never acknowledged), or it
is in the log (lost between the log and the store: the consumer)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ingest.topics import DEFAULT_TOPICS


@dataclass
class LogContents:
    # job id -> [(partition, offset)] of its event / of its shards, as the broker holds them now
    events: dict[str, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    shards: dict[str, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    at: dict[tuple[str, int, int], str] = field(default_factory=dict)  # (topic, partition, offset) -> job id
    end: dict[tuple[str, int], int] = field(default_factory=dict)  # (topic, partition) -> end offset

    def where(self, job_id: str, acked: list[tuple[str, int, int]]) -> dict[str, Any]:
        """One job's story: where the shipper was told its messages went, and what the log holds there now."""
        moved = [
            f"{t}[{p}]@{o} holds {self.at.get((t, p, o), 'nothing')}"
            for t, p, o in acked
            if self.at.get((t, p, o)) != job_id
        ]
        return {
            "event_in_log": self.events.get(job_id, []),
            "shards_in_log": len(self.shards.get(job_id, [])),
            "acked": [f"{t}[{p}]@{o}" for t, p, o in acked],
            "acked_elsewhere_now": moved,
        }


def read_back(bootstrap: str, limit_s: float = 60.0) -> LogContents:
    import time

    import kafka
    from kafka.structs import TopicPartition

    contents = LogContents()
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None, consumer_timeout_ms=3000
    )
    try:
        parts = [
            TopicPartition(t, p)
            for t in (DEFAULT_TOPICS.jobs, DEFAULT_TOPICS.shards)
            for p in sorted(consumer.partitions_for_topic(t) or ())
        ]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        contents.end = {(tp.topic, tp.partition): o for tp, o in ends.items()}
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and any(consumer.position(tp) < ends[tp] for tp in parts):
            for tp, messages in consumer.poll(timeout_ms=1000).items():
                for m in messages:
                    job_id = (m.key or b"").decode("utf-8", "replace")
                    contents.at[(tp.topic, tp.partition, m.offset)] = job_id
                    target = contents.events if tp.topic == DEFAULT_TOPICS.jobs else contents.shards
                    target[job_id].append((tp.partition, m.offset))
    finally:
        consumer.close()
    return contents
