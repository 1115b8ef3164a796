"""The distributed Dispatcher and Scheduler: Celery tasks on the broker. Broker errors become TransportError."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from celery import Celery
from kombu.exceptions import OperationalError

from schemas.clock import Clock, system_clock
from schemas.errors import TransportError
from schemas.wire import JobEvent, LogShard
from sources.shard_data import packed_shard_data
from store.ports import PayloadStore, ShardPayload, ShardRef

PUBLISH_RETRY = {"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 2}


def _send(app: Celery, task: str, args: tuple[Any, ...], headers: Mapping[str, str],
          countdown: float | None = None) -> None:
    try:
        app.send_task(task, args, headers=dict(headers), countdown=countdown, retry=True,
                      retry_policy=PUBLISH_RETRY)
    except (OperationalError, ConnectionError, OSError) as exc:
        raise TransportError(f"Celery broker: {exc}") from exc


class CeleryDispatcher:
    """Hands validated messages to the workers; returns once the broker has them. A shard's packed bytes (as its
    producer compressed them) go to the store (`payloads`, the PayloadStore port) and its task carries a ShardRef,
    so the broker holds no log and the worker parses no message: a typical shard's task message is a few hundred
    bytes, not the shard's, and its payload the producer's compressed bytes, not the log's."""

    def __init__(self, app: Celery, payloads: PayloadStore, clock: Clock = system_clock) -> None:
        self.app, self.payloads, self.clock = app, payloads, clock

    def submit_job(self, event: JobEvent, headers: Mapping[str, str]) -> None:
        _send(self.app, "firstfault.record_job", (event.model_dump(mode="json"),), headers)

    def submit_shard(self, shard: LogShard, headers: Mapping[str, str], data: bytes | None = None) -> None:
        [ref] = self._keep([shard], None if data is None else [data])
        _send(self.app, "firstfault.match_shard", (ref.to_json(),), headers)

    def submit_shards(self, shards: Sequence[LogShard], headers: Sequence[Mapping[str, str]],
                      data: Sequence[bytes] | None = None) -> None:
        """One task for the consumer's shards in a row: the worker stores each job's in one transaction
        (Pipeline.accept_stored). Each shard's trace context travels beside it in the arguments."""
        if len(shards) == 1:
            self.submit_shard(shards[0], headers[0], data[0] if data is not None else None)
            return
        refs = self._keep(shards, data)
        traces = [dict(h) for h in headers]
        _send(self.app, "firstfault.match_shards", ([r.to_json() for r in refs], traces), headers[0])

    def _keep(self, shards: Sequence[LogShard], data: Sequence[bytes] | None) -> list[ShardRef]:
        """The shards' payloads stored (in one transaction; TransportError when the store is down, which the
        edge retries like a broker that is), before any task names them."""
        packed = list(data) if data is not None else [packed_shard_data(s) for s in shards]
        payloads = [ShardPayload.of(s, d) for s, d in zip(shards, packed, strict=True)]
        self.payloads.put_payloads(payloads, self.clock())
        return [p.ref for p in payloads]

    def resend(self, refs: Sequence[ShardRef]) -> None:
        """Tasks again for payloads already stored (the sweep's, for those whose task was lost)."""
        for ref in refs:
            _send(self.app, "firstfault.match_shard", (ref.to_json(),), {})


class StoringDispatcher(CeleryDispatcher):
    """`serve`'s, for the Kafka consumer and the HTTP ingest alike: a job event is stored (and its correlation
    noted and scheduled) by the edge itself, before its offset is committed or its 202 sent; shards go to the
    workers by reference. As a Celery task the event could be lost (a Redis that keeps nothing, kombu's
    pop-then-record gap when a worker dies): a lost shard task leaves its payload for the sweep to send again, but
    a lost event lost the whole job, with nothing pending for the sweep to find (bench/faults.py, unaimed kills).
    An event is one row; storing it here costs the edge a few milliseconds per job."""

    def __init__(self, app: Celery, pipeline: Any) -> None:  # pipeline.service.Pipeline (workers import no runtime)
        super().__init__(app, pipeline.store.payloads, pipeline.clock)
        self.pipeline = pipeline

    def submit_job(self, event: JobEvent, headers: Mapping[str, str]) -> None:
        self.pipeline.accept_job(event, headers)  # the store's and the broker's errors are TransportError


class CeleryScheduler:
    """A correlation as a task with a countdown: `at` is read against the Pipeline's clock, not the wall's."""

    def __init__(self, app: Celery, clock: Clock = system_clock) -> None:
        self.app = app
        self.clock = clock

    def correlate_at(self, job_id: str, at: datetime, headers: Mapping[str, str]) -> None:
        delay = max(0.0, (at - self.clock()).total_seconds())
        _send(self.app, "firstfault.correlate_job", (job_id,), headers, countdown=delay or None)
