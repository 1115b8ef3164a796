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

PUBLISH_RETRY = {"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 2}


def _send(app: Celery, task: str, args: tuple[Any, ...], headers: Mapping[str, str],
          countdown: float | None = None) -> None:
    try:
        app.send_task(task, args, headers=dict(headers), countdown=countdown, retry=True,
                      retry_policy=PUBLISH_RETRY)
    except (OperationalError, ConnectionError, OSError) as exc:
        raise TransportError(f"Celery broker: {exc}") from exc


class CeleryDispatcher:
    """Hands validated messages to the workers; returns once the broker has them."""

    def __init__(self, app: Celery) -> None:
        self.app = app

    def submit_job(self, event: JobEvent, headers: Mapping[str, str]) -> None:
        _send(self.app, "firstfault.record_job", (event.model_dump(mode="json"),), headers)

    def submit_shard(self, shard: LogShard, headers: Mapping[str, str]) -> None:
        _send(self.app, "firstfault.match_shard", (shard.model_dump(mode="json"),), headers)

    def submit_shards(self, shards: Sequence[LogShard], headers: Sequence[Mapping[str, str]]) -> None:
        """One task for the consumer's shards in a row: the worker stores each job's in one transaction
        (Pipeline.accept_shards). Each shard's trace context travels beside it in the arguments."""
        if len(shards) == 1:
            self.submit_shard(shards[0], headers[0])
            return
        traces = [dict(h) for h in headers]
        _send(self.app, "firstfault.match_shards", ([s.model_dump(mode="json") for s in shards], traces), headers[0])


class StoringDispatcher(CeleryDispatcher):
    """`serve`'s: a job event is stored (and its correlation noted and scheduled) by the consumer itself, before
    its offset is committed; shards go to the workers. As a Celery task the event could be lost (a Redis that keeps
    nothing, kombu's pop-then-record gap when a worker dies): a lost shard costs that shard's lines, but a lost
    event lost the whole job, with nothing pending for the sweep to find (bench/faults.py, unaimed kills). An
    event is one row; storing it here costs the consumer a few milliseconds per job."""

    def __init__(self, app: Celery, pipeline: Any) -> None:  # pipeline.service.Pipeline (workers import no runtime)
        super().__init__(app)
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
