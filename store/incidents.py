"""The store's one adapter: jobs, shards and incidents over SQLModel sessions (SQLite or PostgreSQL).

Every write is idempotent on its natural key — (job_id, source, seq) for shards, (job_id, attempt) for incidents —
so a redelivered Kafka message or Celery task never duplicates a row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from correlator.jobs import Progress, may_be_complete
from correlator.shards import SourceKey, StoredShard
from schemas.errors import TransportError
from schemas.incident import Incident
from schemas.wire import JobEvent, merged
from store import progress
from store.db import make_engine, migrate
from store.gpus import gpu_of
from store.job_ports import STALE, JobStore, Recorded, recorded
from store.job_ports import JobProgress as JobProgress  # re-exported: the pipeline names them by this module
from store.job_ports import JobView as JobView
from store.notify_sql import SqlNotifyTx, not_storable
from store.payloads import SqlPayloadStore
from store.ports import NotifyStore
from store.ports import OnSaved as OnSaved  # re-exported: the pipeline and runtime name the hook by this module
from store.ports import Regressed as Regressed
from store.progress import shard_values
from store.tables import IncidentRow, JobRow, RevisionRow, ShardRow


def _aware(value: datetime | None) -> datetime | None:
    """SQLite hands datetimes back naive; everything here is UTC."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


class Store:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.payloads = SqlPayloadStore(engine)  # the shards the edge handed on, until scanned (store/ports.py)

    @classmethod
    def open(cls, url: str, migrate_schema: bool = True) -> Store:
        engine = make_engine(url)
        if migrate_schema:
            migrate(engine)
        return cls(engine)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def session(self) -> Iterator[Session]:
        try:
            with Session(self.engine, expire_on_commit=False) as session, session.begin():
                yield session
        except sa.exc.OperationalError as exc:  # unreachable, locked, failed over: try again later
            raise TransportError(f"database: {exc.orig}") from exc

    @contextmanager
    def notify(self) -> Iterator[SqlNotifyTx]:
        """A transaction over subscriptions and the outbox (the NotifyStore port, store/ports.py)."""
        with not_storable(), self.session() as s:
            yield SqlNotifyTx(s)

    # -- jobs ---------------------------------------------------------------------------------------------------
    def record_job(self, event: JobEvent, now: datetime) -> None:
        try:
            self._record_job(event, now)
        except sa.exc.IntegrityError:
            # Two deliveries of a new job's event at once (a redelivery after an outage, a retry): both found no
            # row to lock and both inserted; the loser fails on the key. The row exists now: lock it and update.
            # (This failure was permanent, and the event dead-lettered, until bench/faults.py's pg_cut hit it.)
            self._record_job(event, now)

    def _record_job(self, event: JobEvent, now: datetime) -> None:
        with self.session() as s:
            row = s.get(JobRow, event.job_id, with_for_update=True)
            if row is None:
                row = JobRow(job_id=event.job_id, state=event.state, created_at=now, updated_at=now)
            if event.attempt < row.attempt:
                return  # an older attempt's event, delivered late
            if row.event:  # another sender's event of this job: merge, don't replace (schemas.wire.merged)
                event = merged(JobEvent.model_validate(row.event), event)
            failed = event.state in ("failed", "timeout")
            if failed and (row.failed_at is None or event.attempt > row.attempt or row.state not in ("failed",
                                                                                                     "timeout")):
                row.failed_at = now
            row.attempt, row.state = event.attempt, event.state
            row.event = event.model_dump(mode="json")
            row.cluster, row.team, row.updated_at = event.cluster, event.team, now
            row.changes += 1  # a new event can change the diagnosis (exit codes, end time)
            progress.recount(s, row, event)  # its shards may have come first
            s.add(row)

    def job_event(self, job_id: str) -> JobEvent | None:
        """The job's event, its latest attempt's merged (what `ship --follow` polls for the end): no shard is read."""
        with self.session() as s:
            row = s.get(JobRow, job_id)
            return JobEvent.model_validate(row.event) if row else None

    def job(self, job_id: str, scans: bool = True, listed: bool = True) -> JobView:
        """The job and its shards; with scans=False only the shards' keys, seq and eof (what deciding whether
        the job is complete needs), so that checking after every shard does not reload every finding; with
        listed=False only how many shards it has (a correlation that kept every scan: 5,120 rows not built)."""
        with self.session() as s:
            row = s.get(JobRow, job_id)
            table = ShardRow.__table__.c  # type: ignore[attr-defined]
            head = JobView(event=JobEvent.model_validate(row.event) if row else None,
                           failed_at=_aware(row.failed_at) if row else None,
                           correlate_at=_aware(row.correlate_at) if row else None, shards=[],
                           changes=row.changes if row else 0, correlated=row.correlated if row else -1)
            if not listed:
                count = s.execute(sa.select(sa.func.count()).where(table.job_id == job_id)).scalar_one()
                return replace(head, stored=int(count))
            columns = [table.stream, table.rank, table.host, table.name, table.seq, table.eof]
            if scans:
                columns.append(table.scanned)
            rows: list[Any] = list(s.execute(sa.select(*columns).where(table.job_id == job_id)).all())
            shards = [StoredShard(SourceKey(r[0], r[1], r[2], r[3]), r[4], r[5], r[6] if scans else {})
                      for r in rows]
            return replace(head, shards=shards, stored=len(shards))

    def record_shard(self, job_id: str, key: SourceKey, seq: int, eof: bool, scanned: Mapping[str, Any],
                     now: datetime, drop_payload: bool = False) -> Recorded:
        """Store one scanned shard (not fresh when it was stored already: a redelivery), count it in its source
        and its job (store/progress.py), and say, from those counts, what deciding whether it matters needs: for
        a shard of a source still incomplete while a correlation is pending, settled; else the pending
        correlation's counts (see Recorded). One commit per shard, no read of the job's other shards. With
        drop_payload, the shard's payload (store/payloads.py) goes in that commit, or alone for a redelivery."""
        try:
            with self.engine.begin() as conn:
                # The job's row is locked first: two workers storing a job's last two shards at once would each
                # count the other's as missing (neither committed yet) and neither would correlate. Locked, the
                # second waits for the first's commit and counts both.
                counted = progress.record(conn, shard_values(job_id, key, seq, eof, scanned, now), key,
                                          drop_payload)
        except sa.exc.IntegrityError:
            if drop_payload:
                self.payloads.drop_keys([(job_id, key.token, seq)])
            return Recorded(False)
        except sa.exc.OperationalError as exc:  # unreachable, locked, failed over: try again later
            raise TransportError(f"database: {exc.orig}") from exc
        return recorded(counted, now)

    def record_shards(self, job_id: str, shards: list[tuple[SourceKey, int, bool, Mapping[str, Any]]],
                      now: datetime, drop_payloads: bool = False) -> tuple[list[bool], bool]:
        """record_shard for several scanned shards of one job (key, seq, eof, scanned), in one transaction:
        (fresh per shard, whether they may decide anything: False only when a correlation is pending and, by the
        counts, none of them can have completed the job). Redeliveries among them: stored one by one."""
        values = [shard_values(job_id, key, seq, eof, scanned, now) for key, seq, eof, scanned in shards]
        try:
            with self.engine.begin() as conn:
                counted = progress.record_batch(conn, job_id, values, [key for key, *_ in shards], drop_payloads)
        except sa.exc.IntegrityError:
            each = [self.record_shard(job_id, key, seq, eof, scanned, now, drop_payloads)
                    for key, seq, eof, scanned in shards]
            return [r.fresh for r in each], any(r.decides for r in each)
        except sa.exc.OperationalError as exc:
            raise TransportError(f"database: {exc.orig}") from exc
        return [True] * len(shards), recorded(counted, now).decides

    def job_progress(self, job_id: str) -> JobProgress:
        """The job's event and its sources' counts, and, only when those counts say it may be complete
        (correlator.jobs.may_be_complete), every source seen and the complete ones: one row a source, never
        the shards. Without them, readiness finds no rule about expected sources met, as it would."""
        with self.session() as s:
            row = s.get(JobRow, job_id)
            if row is None:
                return JobProgress(None, None, Progress(0, 0, 0), set(), set(), 0, -1)
            event, counts = JobEvent.model_validate(row.event), progress.progress(row)
            seen, complete = progress.sources(s, job_id) if may_be_complete(event, counts) else (set(), set())
            return JobProgress(event, _aware(row.failed_at), counts, seen, complete, row.changes, row.correlated)

    def schedule(self, job_id: str, due: datetime, now: datetime) -> bool:
        """Note a correlation due at `due`; False when one at or before it is already pending (don't enqueue).
        A pending one overdue by more than STALE is taken as lost and scheduled again."""
        with self.session() as s:
            row = s.get(JobRow, job_id, with_for_update=True)
            if row is None:
                return False
            pending = _aware(row.correlate_at)
            if pending is not None and now - STALE <= pending <= due:
                return False
            row.correlate_at = due
            s.add(row)
            return True

    def pending_correlations(self, due_before: datetime | None = None, limit: int = 10_000
                             ) -> list[tuple[str, datetime]]:
        """Jobs with a correlation noted as scheduled (due before `due_before`, when given), the earliest first:
        what a sweeper re-sends when the task that should run it is gone (lost with a broker's queue, never
        published, or held by a process that restarted)."""
        with self.session() as s:
            query = select(JobRow.job_id, JobRow.correlate_at).where(col(JobRow.correlate_at).is_not(None))
            if due_before is not None:
                query = query.where(col(JobRow.correlate_at) < due_before)
            rows = s.exec(query.order_by(col(JobRow.correlate_at)).limit(limit)).all()
            return [(job_id, _aware(due) or due) for job_id, due in rows if due is not None]

    def reclaim(self, job_id: str, due: datetime, now: datetime) -> bool:
        """Take over a pending correlation still due at `due` (none other rescheduled it meanwhile): it is now
        due at `now`, so the next sweep waits its grace again while the re-sent task runs."""
        with self.session() as s:
            row = s.get(JobRow, job_id, with_for_update=True)
            if row is None or _aware(row.correlate_at) != due:
                return False
            row.correlate_at = now
            s.add(row)
            return True

    def unschedule(self, job_id: str) -> None:
        with self.session() as s:
            row = s.get(JobRow, job_id, with_for_update=True)
            if row is not None and row.correlate_at is not None:
                row.correlate_at = None
                s.add(row)

    # -- incidents ----------------------------------------------------------------------------------------------
    def save_incident(self, job_id: str, build: Callable[[Incident | None], Incident | None],
                      on_saved: OnSaved | None = None, read: int | None = None,
                      regressed: Regressed | None = None) -> Incident | None:
        """Lock the job, give `build` the current incident, write what it returns (None: leave it) and call
        `on_saved` in the same transaction. Concurrent correlations of one job serialize on the job row. `read`
        is the job's change counter the diagnosis was made from (JobView.changes): noted, whatever `build`
        returns, so that a later correlation with nothing newer to read can be skipped. When the incident has
        just become a regression of an earlier one, `regressed(new, earlier)` gives the earlier one's next
        revision (what its thread is told), written with its own `on_saved` in the same transaction."""
        with self.session() as s:
            job = s.get(JobRow, job_id, with_for_update=True)
            if job is not None and read is not None and read > job.correlated:
                job.correlated = read
                s.add(job)
            current_row = s.exec(select(IncidentRow).where(IncidentRow.job_id == job_id)
                                 .order_by(col(IncidentRow.attempt).desc())).first()
            current = _incident(current_row) if current_row else None
            new = build(current)
            if new is None:
                return None
            row = s.get(IncidentRow, new.id) or IncidentRow(id=new.id, job_id=new.job_id, verdict=new.diagnosis.verdict,
                                                            created_at=new.created_at, updated_at=new.updated_at)
            _fill(row, new)
            s.add(row)
            if current is None or current.id != new.id or current.revision != new.revision:
                s.add(RevisionRow(incident_id=new.id, revision=new.revision,
                                  diagnosis=new.diagnosis.model_dump(mode="json"), changes=new.changes,
                                  created_at=new.updated_at))
            previous = current if current and current.id == new.id else None
            if on_saved is not None:
                s.flush()
                on_saved(SqlNotifyTx(s), new, previous)
            if regressed is not None and new.regression_of and (previous is None or
                                                                previous.regression_of != new.regression_of):
                _tell_earlier(s, new, regressed, on_saved)
            return new

    def resolve(self, incident_id: str, note: str, now: datetime,
                on_saved: OnSaved | None = None) -> tuple[Incident, bool] | None:
        """Mark an incident resolved and call `on_saved` (the outbox) in the same transaction. The note becomes
        the follow-up's text. Returns (incident, True), (incident, False) when it was already resolved (nothing
        written, nothing sent again), or None for an unknown id. The revision stays: resolving is not a new
        diagnosis, and the outbox keys deliveries by revision *and* state."""
        with self.session() as s:
            found = _locked_incident(s, incident_id)
            if found is None:
                return None
            current = _incident(found)
            if current.state == "resolved":
                return current, False
            new = current.model_copy(update={"state": "resolved", "updated_at": now,
                                              "changes": [note or "resolved by hand"]})
            _fill(found, new)
            s.add(found)
            if on_saved is not None:
                s.flush()
                on_saved(SqlNotifyTx(s), new, current)
            return new, True

    def close_chain(self, job_id: str, attempt: int, now: datetime,
                    on_saved: OnSaved | None = None) -> Incident | None:
        from store.attempts import close_chain  # it builds on this module's rows: imported here, not above

        return close_chain(self, job_id, attempt, now, on_saved)

    def incident(self, incident_id: str) -> Incident | None:
        with self.session() as s:
            row = s.get(IncidentRow, incident_id)
            return _incident(row) if row else None

    def incident_for_job(self, job_id: str) -> Incident | None:
        with self.session() as s:
            row = s.exec(select(IncidentRow).where(IncidentRow.job_id == job_id)
                         .order_by(col(IncidentRow.attempt).desc())).first()
            return _incident(row) if row else None

    def fixed_before(self, signature: str, host: str, job_id: str, attempt: int,
                     gpu: str | None = None) -> Incident | None:
        """The latest resolved incident, of another job or another attempt of this one, whose root cause is
        ``signature`` on ``host`` (and on the same GPU, when both name one: a fix of the GPU at 3b:00 did not
        fail because the one at 5e:00 faulted): a new one like it is a regression."""
        with self.session() as s:
            rows = s.exec(select(IncidentRow).where(IncidentRow.signature == signature, IncidentRow.host == host,
                                                    IncidentRow.state == "resolved")
                          .order_by(col(IncidentRow.updated_at).desc()).limit(8)).all()
            row = next((r for r in rows if (r.job_id, r.attempt) != (job_id, attempt)
                        and _same_gpu(gpu, gpu_of(r.diagnosis))), None)
            return _incident(row) if row else None

    def incidents(self, limit: int = 50, offset: int = 0) -> list[Incident]:
        with self.session() as s:
            rows = s.exec(select(IncidentRow).order_by(col(IncidentRow.created_at).desc(), col(IncidentRow.id))
                          .offset(offset).limit(limit)).all()
            return [_incident(r) for r in rows]

    def revisions(self, incident_id: str) -> list[tuple[int, datetime, list[str]]]:
        with self.session() as s:
            rows = s.exec(select(RevisionRow).where(RevisionRow.incident_id == incident_id)
                          .order_by(col(RevisionRow.revision))).all()
            return [(r.revision, _aware(r.created_at) or r.created_at, list(r.changes)) for r in rows]


def _same_gpu(new: str | None, earlier: str | None) -> bool:
    return new is None or earlier is None or new == earlier


def _tell_earlier(s: Session, new: Incident, regressed: Regressed, on_saved: OnSaved | None) -> None:
    """Write the earlier incident's revision that says `new` is its regression, with its notifications."""
    assert new.regression_of is not None
    found = _locked_incident(s, new.regression_of)  # its job's row first, as its own correlations lock it
    if found is None:
        return
    earlier = _incident(found)
    told = regressed(new, earlier)
    if told is None:
        return
    _fill(found, told)
    s.add(found)
    if told.revision != earlier.revision:
        s.add(RevisionRow(incident_id=told.id, revision=told.revision, diagnosis=told.diagnosis.model_dump(mode="json"),
                          changes=told.changes, created_at=told.updated_at))
    if on_saved is not None:
        s.flush()
        on_saved(SqlNotifyTx(s), told, earlier)


def _locked_incident(s: Session, incident_id: str) -> IncidentRow | None:
    """The incident's row, read again under lock after its job's row is locked (None for an unknown id): a
    change to an incident serializes with the job's correlations, which lock the job row first too."""
    found = s.get(IncidentRow, incident_id)
    if found is None:
        return None
    s.get(JobRow, found.job_id, with_for_update=True)
    s.refresh(found, with_for_update=True)
    return found


def _fill(row: IncidentRow, inc: Incident) -> None:
    rc = inc.diagnosis.root_cause
    row.attempt, row.cluster, row.team, row.state = inc.attempt, inc.cluster, inc.team, inc.state
    row.revision, row.severity, row.verdict = inc.revision, inc.severity, inc.diagnosis.verdict
    row.signature, row.category, row.tags = inc.signature, inc.category, inc.tags
    row.rank, row.host, row.hosts = inc.rank, inc.host, inc.hosts
    row.confidence = rc.confidence if rc else None
    row.labels, row.changes = dict(inc.labels), list(inc.changes)
    row.diagnosis = inc.diagnosis.model_dump(mode="json")
    row.verification = inc.verification.model_dump(mode="json") if inc.verification else None
    row.repeats, row.regression_of, row.regressed_by = inc.repeats, inc.regression_of, inc.regressed_by
    row.updated_at = inc.updated_at


def _incident(row: IncidentRow) -> Incident:
    return Incident.model_validate({
        "id": row.id, "job_id": row.job_id, "attempt": row.attempt, "cluster": row.cluster, "team": row.team,
        "labels": row.labels, "state": row.state, "revision": row.revision, "severity": row.severity,
        "created_at": _aware(row.created_at), "updated_at": _aware(row.updated_at), "diagnosis": row.diagnosis,
        "changes": row.changes, "verification": row.verification, "repeats": row.repeats or 0,
        "regression_of": row.regression_of, "regressed_by": row.regressed_by,
    })


if TYPE_CHECKING:  # mypy holds the adapter to its ports (store/job_ports.py, store/ports.py)
    _jobs: type[JobStore] = Store
    _notify: type[NotifyStore] = Store
