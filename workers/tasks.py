"""Thin Celery tasks: each one calls the Pipeline and decides only on retryable vs permanent."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import cache
from typing import Any

from celery import Task, shared_task
from kombu.exceptions import OperationalError
from pydantic import ValidationError

from pipeline.service import Pipeline
from schemas.clock import system_clock
from schemas.errors import PermanentError, RetryableError
from schemas.retry import TASKS
from schemas.wire import JobEvent, LogShard
from store.ports import ShardRef

log = logging.getLogger("firstfault.workers")
RETRY = {"autoretry_for": (RetryableError,), **TASKS.celery_options()}


@cache
def pipeline() -> Pipeline:
    """One Pipeline per worker process, built on first use (after the fork)."""
    from celery import current_app

    from config.settings import load_settings
    from runtime.build import pipeline_for
    from store.incidents import Store
    from workers.dispatch import CeleryScheduler

    settings = load_settings()
    return pipeline_for(settings, Store.open(settings.database_url), CeleryScheduler(current_app, system_clock),
                        clock=system_clock)


def _trace(task: Task) -> dict[str, str]:
    """The trace context the sender put in the task's message headers."""
    value = task.request.get("traceparent")
    return {"traceparent": value} if isinstance(value, str) else {}


def _dead_letter(kind: str, where: str, payload: dict[str, Any], reason: str) -> None:
    """Never retried again: logged and kept in the store with its reason and payload (`firstfault dlq list`)."""
    from pipeline import metrics
    from store.dead_letters import record

    metrics.DEAD_LETTERS.labels(where).inc()
    try:
        letter_id = record(pipeline().store, kind, where, reason, payload, pipeline().clock())
    except Exception:  # the store is failing too: the log line is all that is left of it
        log.exception("dead letter: %s failed for good (%s) and could not be kept", where, reason)
        return
    log.error("dead letter #%d: %s: %s", letter_id, where, reason)


def _dead_letter_shard(item: Any, reason: str) -> None:
    """A shard task's argument that failed for good, kept as the shard itself: a ShardRef's payload is read back
    and packed as the LogShard it came as (so `firstfault dlq replay` sends it again), then dropped. A whole shard
    (a task of an older sender) is kept as it is; a ref whose payload is gone is kept as the ref."""
    if not (isinstance(item, Mapping) and "data" not in item):
        _dead_letter("shard", "firstfault.match_shard", dict(item) if isinstance(item, Mapping) else {"item": item},
                     reason)
        return
    try:
        ref = ShardRef.from_json(dict(item))
    except ValueError:
        _dead_letter("shard", "firstfault.match_shard", dict(item), reason)
        return
    try:
        payloads = pipeline().store.payloads
        [found] = payloads.payloads([ref])
        # a task of several jobs' shards may fail after storing some of them: those are no dead letters
        recorded = found is None and payloads.scanned([ref]) == [True]
    except Exception:  # the store is failing: the payload stays, and the sweep sends its task again later
        log.exception("dead letter: the payload of %s could not be read; left for the sweep", ref)
        return
    if recorded:
        return
    if found is None:
        _dead_letter("shard", "firstfault.match_shard", ref.to_json(), f"{reason} (its payload is gone)")
        return
    _dead_letter("shard", "firstfault.match_shard", found.as_shard().model_dump(mode="json"), reason)
    try:
        payloads.drop_payloads([ref])
    except Exception:  # kept twice then (as the letter and the payload): the sweep's resend records it or fails
        log.exception("dead letter: the payload of %s could not be dropped", ref)


class DeadLettering(Task):  # type: ignore[misc]
    """A task that fails for good (a bug, or retries exhausted) leaves a dead letter instead of vanishing."""

    def on_failure(self, exc: BaseException, task_id: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                   einfo: object) -> None:
        first = args[0] if args else kwargs.get("event") or kwargs.get("shard") or kwargs.get("job_id")
        reason = f"{type(exc).__name__}: {exc}"
        if isinstance(first, list):  # match_shards: a letter a shard, each replayable as the one-shard task
            for shard in first:
                _dead_letter_shard(shard, reason)
            return
        if self.name == "firstfault.match_shard":
            _dead_letter_shard(first, reason)
            return
        payload = dict(first) if isinstance(first, Mapping) else {"job_id": first}
        _dead_letter(KINDS.get(self.name, "task"), self.name, payload, reason)


@shared_task(name="firstfault.sweep")
def sweep() -> int:
    """Re-send the correlations whose time has come and gone (pipeline/sweep.py); beat runs it."""
    from datetime import timedelta

    from celery import current_app

    from config.settings import load_settings
    from pipeline.sweep import resend_overdue, resend_payloads
    from workers.dispatch import CeleryDispatcher

    p, settings = pipeline(), load_settings()
    now = p.clock()
    sent = resend_overdue(p.store, p.scheduler, now, timedelta(seconds=settings.sweep_grace_s))
    if sent:
        log.warning("sweep: re-sent %d overdue correlation(s), their tasks were gone: %s", len(sent),
                    ", ".join(sent[:20]))
    resend = CeleryDispatcher(current_app, p.store.payloads, p.clock).resend
    refs = resend_payloads(p.store.payloads, resend, now, timedelta(seconds=settings.payload_grace_s))
    if refs:
        log.warning("sweep: re-sent %d shard task(s) whose payload waited over %g s: %s", len(refs),
                    settings.payload_grace_s, ", ".join(f"{r.job_id}/{r.source_key.name}#{r.seq}" for r in refs[:20]))
    return len(sent) + len(refs)


KINDS = {"firstfault.record_job": "job", "firstfault.match_shard": "shard", "firstfault.correlate_job": "correlate"}


@shared_task(name="firstfault.record_job", bind=True, base=DeadLettering, **RETRY)
def record_job(self: Task, event: Mapping[str, Any]) -> None:
    try:
        pipeline().accept_job(JobEvent.model_validate(event), _trace(self))
    except (PermanentError, ValidationError) as exc:
        _dead_letter("job", self.name, dict(event), str(exc))


@shared_task(name="firstfault.match_shard", bind=True, base=DeadLettering, **RETRY)
def match_shard(self: Task, shard: Mapping[str, Any]) -> None:
    """A ShardRef (CeleryDispatcher): the shard the edge stored. A whole shard (`data` in it: a task an older
    sender queued) is validated and scanned as it was."""
    if isinstance(shard, Mapping) and "data" in shard:
        try:
            pipeline().accept_shard(LogShard.model_validate(shard), _trace(self))
        except (PermanentError, ValidationError) as exc:
            _dead_letter("shard", self.name, dict(shard), str(exc))
        return
    _match_refs([shard], [_trace(self)])


@shared_task(name="firstfault.match_shards", bind=True, base=DeadLettering, **RETRY)
def match_shards(self: Task, shards: list[Mapping[str, Any]], traces: list[Mapping[str, str]]) -> None:
    """The consumer's shards in a row (CeleryDispatcher.submit_shards): the job's stored together; an argument
    that is not a ref is dead-lettered alone. A retry redoes them all (storing is idempotent)."""
    if any(isinstance(s, Mapping) and "data" in s for s in shards):
        _match_whole(shards, traces)
        return
    _match_refs(shards, [{k: v for k, v in t.items() if k == "traceparent"} for t in traces])


def _match_refs(items: list[Any], headers: list[Mapping[str, str]]) -> None:
    refs: list[ShardRef] = []
    kept: list[Mapping[str, str]] = []
    for item, trace in zip(items, headers, strict=True):
        try:
            refs.append(ShardRef.from_json(item))
            kept.append(trace)
        except ValueError as exc:
            _dead_letter("shard", "firstfault.match_shard", dict(item) if isinstance(item, Mapping) else
                         {"item": item}, str(exc))
    try:
        stored = pipeline().accept_stored(refs, kept)
    except PermanentError as exc:  # each kept with why, replayable alone
        for ref in refs:
            _dead_letter_shard(ref.to_json(), str(exc))
        return
    for ref, why in stored.bad:  # its payload does not inflate: that shard alone, the task's others are recorded
        _dead_letter_shard(ref.to_json(), why)
    for ref in stored.lost:
        _dead_letter("shard", "firstfault.match_shard", ref.to_json(),
                     "its payload is gone and the shard was never recorded: send the shard again")


def _match_whole(shards: list[Mapping[str, Any]], traces: list[Mapping[str, str]]) -> None:
    """match_shards of whole shards (queued by an older sender): validated here, as they were."""
    valid: list[LogShard] = []
    headers: list[Mapping[str, str]] = []
    for shard, trace in zip(shards, traces, strict=True):
        try:
            valid.append(LogShard.model_validate(shard))
            headers.append({k: v for k, v in trace.items() if k == "traceparent"})
        except ValidationError as exc:
            _dead_letter("shard", "firstfault.match_shard", dict(shard), str(exc))
    try:
        pipeline().accept_shards(valid, headers)
    except PermanentError as exc:
        for kept in valid:
            _dead_letter("shard", "firstfault.match_shard", kept.model_dump(mode="json"), str(exc))


@shared_task(name="firstfault.correlate_job", bind=True, base=DeadLettering, **RETRY)
def correlate_job(self: Task, job_id: str) -> str | None:
    incident = pipeline().correlate(job_id, _trace(self))
    if incident is not None:
        # post now rather than at the next beat tick; beat still sweeps whatever this misses, so a broker that is
        # down here costs seconds, not the task: the incident is saved, and raising would retry a correlation that
        # is done, then dead-letter it
        try:
            self.app.send_task("firstfault.deliver")
        except (OperationalError, ConnectionError, OSError) as exc:
            log.warning("incident %s saved; the delivery kick did not reach the broker (%s): beat delivers it",
                        incident.id, exc)
        log.info("incident %s for job %s: revision %d, %s at %s", incident.id, job_id, incident.revision,
                 incident.signature, pipeline().clock().isoformat())
    return incident.id if incident else None
