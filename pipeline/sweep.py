"""Nothing waits forever: a correlation noted in the store (jobs.correlate_at) whose task is gone — wiped with
the broker's queue in a Redis restart, never published while the broker was down, or a timer of an embedded
process that restarted — is sent again. Correlating twice is harmless (Pipeline.correlate is idempotent).

Distributed: Celery beat runs `firstfault.sweep` every sweep_every_s (settings; workers/tasks.py), re-sending what is
overdue by more than a grace; embedded: `serve --embedded` re-arms every noted correlation when it starts.

The same for a shard: its payload stays in the store until its shard is recorded (store/payloads.py), so one whose
task was lost is still there; the sweep sends its task again once it has waited payload_grace_s since it was last
sent. Scanning it twice is harmless (a shard is stored once).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from pipeline.service import Scheduler
from store.incidents import Store
from store.ports import PayloadStore, ShardRef

SWEEP_EVERY_S = 30.0
# A countdown task fires at its due time; one later than this is taken as lost (a busy pool that is merely late
# costs a second, idempotent, correlation).
SWEEP_GRACE = timedelta(seconds=60)


def resend_overdue(store: Store, scheduler: Scheduler, now: datetime, grace: timedelta = SWEEP_GRACE) -> list[str]:
    """Send again every correlation overdue by more than `grace`; the jobs it re-sent."""
    sent = []
    for job_id, due in store.pending_correlations(due_before=now - grace):
        if store.reclaim(job_id, due, now):  # one sweeper wins a job, even with two beats
            scheduler.correlate_at(job_id, now, {})
            sent.append(job_id)
    return sent


def resend_payloads(payloads: PayloadStore, send: Callable[[Sequence[ShardRef]], None], now: datetime,
                    grace: timedelta, limit: int = 1000) -> list[ShardRef]:
    """Send the task of every payload last sent more than `grace` ago again (each noted as sent now, so one
    sweeper takes it); the refs it re-sent."""
    refs = payloads.reclaim_payloads(now - grace, now, limit)
    if refs:
        send(refs)
    return refs


def resume_pending(store: Store, scheduler: Scheduler) -> int:
    """At the start of an embedded service: every noted correlation, at its time (the previous process's timers
    died with it). How many."""
    pending = store.pending_correlations()
    for job_id, due in pending:
        scheduler.correlate_at(job_id, due, {})
    return len(pending)
