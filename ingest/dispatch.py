"""Where validated input goes next. The Kafka consumer and the HTTP ingest hand messages to a Dispatcher;
in distributed mode it enqueues Celery tasks, in embedded mode it runs the same work in-process.

A dispatcher returns only once the work is durably handed on (the consumer commits offsets after that); when it
cannot hand on, it raises RetryableError and the consumer retries the same message later.

A shard comes with its data as the producer packed it, base64 undone, once the edge has checked that it inflates
within the bound (`data`: sources.shard_data.packed_shard_data; None when the caller has not checked it): a
dispatcher that needs them uses those rather than checking the shard again.

Implementations: the embedded queue (pipeline/embedded.py), KafkaDispatcher (ingest/kafka.py), CeleryDispatcher
and serve's StoringDispatcher (workers/dispatch.py), and in memory ingest.testing.RecordingDispatcher; one suite
runs them all (tests/pipeline/test_handoff_contract.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from schemas.wire import JobEvent, LogShard


class Dispatcher(Protocol):
    def submit_job(self, event: JobEvent, headers: Mapping[str, str]) -> None: ...

    def submit_shard(self, shard: LogShard, headers: Mapping[str, str], data: bytes | None = None) -> None: ...


@runtime_checkable
class BatchDispatcher(Dispatcher, Protocol):
    """A dispatcher that hands several shards on as one unit of work (one Celery task): the consumer gives it the
    shards of a poll in a row, so that a worker stores each job's in one transaction and decides its completion
    once. Returns once all are handed on; raises RetryableError when none is (the consumer retries them all)."""

    def submit_shards(self, shards: Sequence[LogShard], headers: Sequence[Mapping[str, str]],
                      data: Sequence[bytes] | None = None) -> None: ...
