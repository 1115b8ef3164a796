"""The jobs, shards and incidents port: what the pipeline (accepting, scanning, scheduling, correlating) and the
history readers need of storage, and nothing of SQL.

Two implementations: ``store.incidents.Store`` (SQLite or PostgreSQL) and the in-memory
``store.memory_jobs.MemoryStore`` (exported by ``store.testing``). ``tests/store/test_job_contract.py`` runs one
suite against each, so a caller written against this port behaves the same on either.

What the port promises:

- Every write is idempotent on its natural key: (job_id, source token, seq) for a shard (the source token holds
  the stream, the rank or host and the name: ``correlator.shards.SourceKey.token``), (job_id, attempt) for an
  incident. A redelivered shard is stored once and reported not fresh.
- A job's progress (``correlator.jobs.Progress``: sources, ended sources, their distinct ranks) is counted as its
  shards are stored, whether they came before its event or after.
- A job's change counter grows by one for each event and each fresh shard stored once the job is known; a
  correlation notes the counter it read (``save_incident(read=...)``), so one with nothing newer can be skipped.
- One correlation per job is pending at a time (``schedule``); a pending one overdue by more than STALE is lost.
- ``save_incident`` and ``resolve`` run their ``on_saved`` hook (the outbox) in the incident's transaction: an
  exception in it keeps nothing of the change.

Datetimes come back aware (UTC), whatever the database hands back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from correlator.jobs import Expected, Progress, may_be_complete
from correlator.shards import SourceKey, StoredShard
from schemas.incident import Incident
from schemas.wire import JobEvent
from store.ports import OnSaved, Regressed

STALE = timedelta(minutes=10)  # a pending correlation overdue by more than this is taken as lost

# (key, seq, eof, scanned): one scanned shard of a job, as record_shards takes them
ShardItem = tuple[SourceKey, int, bool, Mapping[str, Any]]


@dataclass(frozen=True)
class JobView:
    event: JobEvent | None
    failed_at: datetime | None
    correlate_at: datetime | None
    shards: list[StoredShard]
    changes: int = 0  # the job's change counter when read
    correlated: int = -1  # the counter the last correlation read
    stored: int = 0  # the job's shards in the store: len(shards), or counted when they were not listed


@dataclass(frozen=True)
class JobProgress:
    event: JobEvent | None
    failed_at: datetime | None
    counts: Progress
    seen: set[SourceKey]  # filled only when the counts say the job may be complete
    complete: set[SourceKey]
    changes: int  # every event and fresh shard stored once the job is known adds one
    correlated: int  # the changes the last committed correlation read


@dataclass(frozen=True)
class Counted:
    """A fresh shard, counted: its source's state and, when the job is known, the job's."""

    complete: bool  # the shard's source: its eof and every seq before it are stored
    job: tuple[datetime | None, Expected, Progress] | None  # the pending correlation's due time, and the counts


@dataclass(frozen=True)
class Recorded:
    """What storing a shard found: whether it was new, and what deciding whether it matters needs."""

    fresh: bool
    settled: bool = False  # a correlation is pending and the shard's source is still incomplete
    pending: tuple[Expected, Progress] | None = None  # the job's expectation and counts, while one is pending

    @property
    def decides(self) -> bool:
        """Whether the shard may decide anything: a redelivery always re-evaluates (the worker that stored it may
        have died before scheduling); a fresh one not while a correlation is pending and it cannot complete the
        job: not one of a source that stays incomplete, nor any while too few sources have ended (counted, not
        read). Skipping the job-wide check then keeps a 1,024-rank job linear in its shards."""
        if not self.fresh:
            return True
        return not (self.settled or (self.pending is not None and not may_be_complete(*self.pending)))


def recorded(counted: Counted, now: datetime) -> Recorded:
    if counted.job is None or counted.job[0] is None:  # no correlation pending: nothing is settled
        return Recorded(True)
    if not counted.complete:
        return Recorded(True, settled=True)
    pending, expected, counts = counted.job
    assert pending is not None  # checked above
    at = pending if pending.tzinfo else pending.replace(tzinfo=UTC)  # SQLite hands datetimes back naive
    stale = at < now - STALE  # taken as lost: the caller looks again
    return Recorded(True, pending=None if stale else (expected, counts))


class JobStore(Protocol):
    """Jobs, their shards, the pending correlation and the incidents, as the Pipeline uses them."""

    # -- jobs and shards ------------------------------------------------------------------------------------------
    def record_job(self, event: JobEvent, now: datetime) -> None:
        """Keep the job's event: an older attempt's is ignored, another sender's of the same attempt merged
        (schemas.wire.merged). The first failed/timeout event of an attempt sets failed_at."""
        ...

    def job_event(self, job_id: str) -> JobEvent | None: ...

    def job(self, job_id: str, scans: bool = True, listed: bool = True) -> JobView:
        """The job and its shards (in no set order); with scans=False each shard's ``scanned`` is empty; with
        listed=False no shard at all, only how many are stored (``JobView.stored``)."""
        ...

    def record_shard(self, job_id: str, key: SourceKey, seq: int, eof: bool, scanned: Mapping[str, Any],
                     now: datetime, drop_payload: bool = False) -> Recorded:
        """Store one scanned shard; not fresh when stored already. With drop_payload its payload is dropped."""
        ...

    def record_shards(self, job_id: str, shards: list[ShardItem], now: datetime,
                      drop_payloads: bool = False) -> tuple[list[bool], bool]:
        """record_shard for several shards of one job: (fresh per shard, whether any may decide anything)."""
        ...

    def job_progress(self, job_id: str) -> JobProgress:
        """The counts, and every source seen and the complete ones only when the counts say the job may be
        complete (correlator.jobs.may_be_complete)."""
        ...

    # -- the pending correlation --------------------------------------------------------------------------------
    def schedule(self, job_id: str, due: datetime, now: datetime) -> bool:
        """Note a correlation due at `due`; False (don't enqueue) when one at or before it is pending and not
        stale, or the job is unknown."""
        ...

    def unschedule(self, job_id: str) -> None: ...

    def pending_correlations(self, due_before: datetime | None = None, limit: int = 10_000
                             ) -> list[tuple[str, datetime]]:
        """Jobs with a correlation pending (due before `due_before`, when given), the earliest first."""
        ...

    def reclaim(self, job_id: str, due: datetime, now: datetime) -> bool:
        """Take over a pending correlation still due at `due`: it is now due at `now`. False when it moved."""
        ...

    # -- incidents ------------------------------------------------------------------------------------------------
    def save_incident(self, job_id: str, build: Callable[[Incident | None], Incident | None],
                      on_saved: OnSaved | None = None, read: int | None = None,
                      regressed: Regressed | None = None) -> Incident | None:
        """`build` gets the job's latest-attempt incident; what it returns is written (None: nothing), with a
        revision row when its id or revision is new, and `on_saved` runs in the same transaction. `read` is
        noted whatever `build` returns. When the incident has just become a regression of an earlier one,
        `regressed(new, earlier)` gives the earlier one's next revision, written with its own `on_saved`."""
        ...

    def resolve(self, incident_id: str, note: str, now: datetime,
                on_saved: OnSaved | None = None) -> tuple[Incident, bool] | None:
        """(incident, True) resolved now, (incident, False) already resolved, None for an unknown id. The
        revision stays; the note becomes its changes."""
        ...

    def close_chain(self, job_id: str, attempt: int, now: datetime,
                    on_saved: OnSaved | None = None) -> Incident | None:
        """Attempt `attempt` of the job succeeded: its latest earlier-attempt incident is resolved by it (or, one
        resolved by hand, gets a revision saying the fix held), with `on_saved` in the same transaction. None
        when there is none to close: no earlier incident, one of this attempt or a later one exists, or this
        success was told already (a redelivered event)."""
        ...

    def incident(self, incident_id: str) -> Incident | None: ...

    def incident_for_job(self, job_id: str) -> Incident | None:
        """The job's incident of its latest attempt."""
        ...

    def fixed_before(self, signature: str, host: str, job_id: str, attempt: int,
                     gpu: str | None = None) -> Incident | None:
        """The latest resolved incident (of another job, or another attempt) with this root cause on this host
        (and GPU, when both name one), among the 8 latest resolved ones like it."""
        ...

    def incidents(self, limit: int = 50, offset: int = 0) -> list[Incident]:
        """The newest first (by created_at, then id)."""
        ...

    def revisions(self, incident_id: str) -> list[tuple[int, datetime, list[str]]]:
        """(revision, when, what changed), in revision order."""
        ...
