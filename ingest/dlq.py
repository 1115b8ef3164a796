"""Dead letters: every message the pipeline rejects, kept on `firstfault.dlq` with its reason and original bytes.

A record is JSON, one per rejected message, keyed like the original (so a job's rejects stay together):

    {"topic": "firstfault.shards", "partition": 0, "offset": 41, "key": "job-17",
     "reason": "not JSON: Expecting ',' delimiter at line 1 column 31 (truncated?)",
     "value_base64": "eyJqb2JfaWQiOi...", "headers": {"traceparent": "00-..."},
     "time": "2026-11-29T10:02:03.123000Z"}

`value_base64` decodes to exactly the bytes the producer sent, so a fixed message can be re-produced from it.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from ingest.topics import DEFAULT_TOPICS
from pipeline import metrics
from schemas.clock import Clock, system_clock

log = logging.getLogger(__name__)


class DeadLetter(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str
    partition: int
    offset: int
    key: str | None  # the original key as text (invalid UTF-8 replaced); None when the message had none
    reason: str
    value_base64: str
    headers: dict[str, str]
    time: datetime  # when it was dead-lettered

    def original(self) -> bytes:
        return base64.b64decode(self.value_base64)


def dead_letter(topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None, reason: str,
                headers: Mapping[str, str], now: datetime) -> DeadLetter:
    return DeadLetter(topic=topic, partition=partition, offset=offset,
                      key=None if key is None else key.decode("utf-8", "replace"), reason=reason,
                      value_base64=base64.b64encode(value or b"").decode("ascii"), headers=dict(headers), time=now)


class Producer(Protocol):
    """What the DLQ writer needs of a producer (ingest.kafka.WireProducer is one)."""

    def send(self, topic: str, key: bytes | None, value: bytes, headers: Mapping[str, str]) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class DeadLetterWriter:
    """Writes dead letters durably: `write` returns only once the broker has acknowledged the record, so the
    consumer may then commit the rejected message's offset. Raises TransportError when it cannot."""

    def __init__(self, producer: Producer, topic: str = DEFAULT_TOPICS.dlq,
                 clock: Clock = system_clock,
                 also: Callable[[DeadLetter], object] | None = None) -> None:
        self._producer = producer
        self._topic = topic
        self._clock = clock
        self._also = also  # e.g. keep it in the store too, for `firstfault dlq list`; best effort

    def write(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None, reason: str,
              headers: Mapping[str, str]) -> DeadLetter:
        record = dead_letter(topic, partition, offset, key, value, reason, headers, self._clock())
        self._producer.send(self._topic, key, record.model_dump_json().encode("utf-8"), {})
        self._producer.flush()
        metrics.DEAD_LETTERS.labels(topic).inc()
        if self._also is not None:
            try:
                self._also(record)
            except Exception:  # the topic has it, durably: a second copy failing must not stop the consumer
                log.exception("dead letter of %s@%d kept on %s only", topic, offset, self._topic)
        return record

    def close(self) -> None:
        self._producer.close()
