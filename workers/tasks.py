"""Thin Celery tasks: each one calls the Pipeline and decides only on retryable vs permanent."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any

from celery import Task, shared_task

from pipeline.service import Pipeline
from schemas.errors import PermanentError, RetryableError
from schemas.wire import JobEvent, LogShard

log = logging.getLogger("firstfault.workers")
RETRY = {"autoretry_for": (RetryableError,), "retry_backoff": True, "retry_backoff_max": 60, "max_retries": 10,
         "retry_jitter": True}


@cache
def pipeline() -> Pipeline:
    """One Pipeline per worker process, built on first use (after the fork)."""
    from celery import current_app

    from firstfault.serve import pipeline_for
    from firstfault.settings import load_settings
    from store.incidents import Store
    from workers.dispatch import CeleryScheduler

    settings = load_settings()
    return pipeline_for(settings, Store.open(settings.database_url), CeleryScheduler(current_app))


def _trace(task: Task) -> dict[str, str]:
    """The trace context the sender put in the task's message headers."""
    value = task.request.get("traceparent")
    return {"traceparent": value} if isinstance(value, str) else {}


def _dead_letter(what: str, exc: PermanentError) -> None:
    # Never retried; logged with the reason so that nothing is dropped silently.
    log.error("dead letter: %s: %s", what, exc)


@shared_task(name="firstfault.record_job", bind=True, **RETRY)
def record_job(self: Task, event: Mapping[str, Any]) -> None:
    try:
        pipeline().accept_job(JobEvent.model_validate(event), _trace(self))
    except PermanentError as exc:
        _dead_letter(f"job {event.get('job_id')}", exc)


@shared_task(name="firstfault.match_shard", bind=True, **RETRY)
def match_shard(self: Task, shard: Mapping[str, Any]) -> None:
    try:
        pipeline().accept_shard(LogShard.model_validate(shard), _trace(self))
    except PermanentError as exc:
        _dead_letter(f"shard {shard.get('job_id')}#{shard.get('seq')}", exc)


@shared_task(name="firstfault.correlate_job", bind=True, **RETRY)
def correlate_job(self: Task, job_id: str) -> str | None:
    incident = pipeline().correlate(job_id, _trace(self))
    if incident is not None:
        # post now rather than at the next beat tick; beat still sweeps whatever this misses
        self.app.send_task("firstfault.deliver")
        log.info("incident %s for job %s: revision %d, %s at %s", incident.id, job_id, incident.revision,
                 incident.signature, datetime.now(UTC).isoformat())
    return incident.id if incident else None
