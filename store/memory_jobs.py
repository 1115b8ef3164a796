"""An in-memory JobStore (store/job_ports.py) for the pipeline's unit tests: jobs, shards, the pending
correlation and incidents, with no database and the SQL store's behaviour (tests/store/test_job_contract.py runs
the same suite against both). It is also a NotifyStore (its ``notify()`` is a MemoryNotifyStore's), so an
incident's outbox hook runs in the incident's transaction, and it has ``payloads``, a MemoryPayloadStore whose
payloads recording a shard with drop_payload(s) drops.

Counts are recomputed from the shards on each write rather than kept as the SQL store keeps them: a test store
holds a few hundred shards, and recomputing cannot drift from what the counters should say.

One lock serializes everything. Incidents and events are kept as their JSON, as the SQL store keeps them, so a
caller sees what a round trip through the database gives (times and nested models read back, never aliased).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from correlator.jobs import Expected, Progress, may_be_complete
from correlator.shards import SourceKey, StoredShard
from schemas.incident import Incident
from schemas.wire import JobEvent, merged
from store.gpus import gpu_of
from store.job_ports import STALE, Counted, JobProgress, JobStore, JobView, Recorded, ShardItem, recorded
from store.memory_notify import MemoryNotifyStore, MemoryNotifyTx, MemoryPayloadStore
from store.ports import NotifyStore, OnSaved, Regressed, ShardRef


@dataclass
class _Job:
    event: dict[str, Any]  # the JobEvent as JSON
    attempt: int
    state: str
    failed_at: datetime | None = None
    correlate_at: datetime | None = None
    changes: int = 0
    correlated: int = -1


@dataclass
class _State:
    jobs: dict[str, _Job] = field(default_factory=dict)
    # (job_id, source token, seq) -> (key, eof, scanned), in the order stored
    shards: dict[tuple[str, str, int], tuple[SourceKey, bool, Mapping[str, Any]]] = field(default_factory=dict)
    incidents: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> the Incident as JSON
    revisions: dict[str, dict[int, tuple[datetime, list[str]]]] = field(default_factory=dict)


class MemoryStore:
    def __init__(self) -> None:
        self._st = _State()
        self._notify = MemoryNotifyStore()
        self.payloads = MemoryPayloadStore()
        self._lock = threading.RLock()

    def notify(self) -> AbstractContextManager[MemoryNotifyTx]:
        return self._notify.notify()

    # -- jobs and shards ------------------------------------------------------------------------------------------
    def record_job(self, event: JobEvent, now: datetime) -> None:
        with self._lock:
            job = self._st.jobs.get(event.job_id)
            if job is not None and event.attempt < job.attempt:
                return  # an older attempt's event, delivered late
            if job is not None:
                event = merged(JobEvent.model_validate(job.event), event)
            else:
                job = self._st.jobs[event.job_id] = _Job({}, event.attempt, event.state)
            failed = event.state in ("failed", "timeout")
            if failed and (job.failed_at is None or event.attempt > job.attempt
                           or job.state not in ("failed", "timeout")):
                job.failed_at = now
            job.attempt, job.state, job.event = event.attempt, event.state, event.model_dump(mode="json")
            job.changes += 1

    def job_event(self, job_id: str) -> JobEvent | None:
        with self._lock:
            job = self._st.jobs.get(job_id)
            return JobEvent.model_validate(job.event) if job else None

    def job(self, job_id: str, scans: bool = True, listed: bool = True) -> JobView:
        with self._lock:
            job = self._st.jobs.get(job_id)
            mine = [(key, seq, eof, scanned) for (j, _, seq), (key, eof, scanned) in self._st.shards.items()
                    if j == job_id]
            shards = [StoredShard(key, seq, eof, copy.deepcopy(scanned) if scans else {})
                      for key, seq, eof, scanned in mine] if listed else []
            if job is None:
                return JobView(None, None, None, shards, stored=len(mine))
            return JobView(JobEvent.model_validate(job.event), job.failed_at, job.correlate_at, shards,
                           job.changes, job.correlated, stored=len(mine))

    def record_shard(self, job_id: str, key: SourceKey, seq: int, eof: bool, scanned: Mapping[str, Any],
                     now: datetime, drop_payload: bool = False) -> Recorded:
        with self._lock:
            ref = (job_id, key.token, seq)
            if drop_payload:
                self.payloads.record([ShardRef(job_id, key.stream, key.rank, key.host, key.name, seq)])
            if ref in self._st.shards:
                return Recorded(False)
            self._st.shards[ref] = (key, eof, copy.deepcopy(scanned))
            return recorded(self._counted(job_id, [key], 1), now)

    def record_shards(self, job_id: str, shards: list[ShardItem], now: datetime,
                      drop_payloads: bool = False) -> tuple[list[bool], bool]:
        with self._lock:
            if any((job_id, key.token, seq) in self._st.shards for key, seq, *_ in shards):
                each = [self.record_shard(job_id, key, seq, eof, scanned, now, drop_payloads)
                        for key, seq, eof, scanned in shards]  # a redelivery among them: one by one, as SQL does
                return [r.fresh for r in each], any(r.decides for r in each)
            if drop_payloads:
                self.payloads.record([ShardRef(job_id, k.stream, k.rank, k.host, k.name, seq)
                                      for k, seq, *_ in shards])
            for key, seq, eof, scanned in shards:
                self._st.shards[(job_id, key.token, seq)] = (key, eof, copy.deepcopy(scanned))
            counted = self._counted(job_id, [key for key, *_ in shards], len(shards))
            return [True] * len(shards), recorded(counted, now).decides

    def job_progress(self, job_id: str) -> JobProgress:
        with self._lock:
            job = self._st.jobs.get(job_id)
            if job is None:
                return JobProgress(None, None, Progress(0, 0, 0), set(), set(), 0, -1)
            event = JobEvent.model_validate(job.event)
            counts, seen, complete = self._sources(job_id)
            if not may_be_complete(event, counts):
                seen, complete = set(), set()
            return JobProgress(event, job.failed_at, counts, seen, complete, job.changes, job.correlated)

    def _counted(self, job_id: str, keys: list[SourceKey], fresh: int) -> Counted:
        """What the SQL store's counters say once these fresh shards are stored (store/progress.py)."""
        counts, _, complete = self._sources(job_id)
        touched = {(k.token, k.host or "") for k in keys}
        done = any((k.token, k.host or "") in touched for k in complete)
        job = self._st.jobs.get(job_id)
        if job is None:
            return Counted(done, None)
        job.changes += fresh
        expected = Expected.of(JobEvent.model_validate(job.event))
        return Counted(done, (job.correlate_at, expected, counts))

    def _sources(self, job_id: str) -> tuple[Progress, set[SourceKey], set[SourceKey]]:
        """The job's counts, every source seen and the complete ones. A source is keyed as the SQL store keys
        its rows (token and host); it ends with its latest eof shard and is complete when every seq up to that
        one is stored."""
        seqs: dict[tuple[str, str], set[int]] = {}
        last: dict[tuple[str, str], int] = {}
        keys: dict[tuple[str, str], SourceKey] = {}
        for (j, token, seq), (key, eof, _) in self._st.shards.items():
            if j != job_id:
                continue
            src = (token, key.host or "")
            keys.setdefault(src, key)
            seqs.setdefault(src, set()).add(seq)
            if eof:
                last[src] = seq
        complete = {keys[s] for s, end in last.items() if all(n in seqs[s] for n in range(end + 1))}
        ranks = {keys[s].rank for s in last if keys[s].rank is not None}
        return Progress(len(keys), len(last), len(ranks)), set(keys.values()), complete

    # -- the pending correlation --------------------------------------------------------------------------------
    def schedule(self, job_id: str, due: datetime, now: datetime) -> bool:
        with self._lock:
            job = self._st.jobs.get(job_id)
            if job is None:
                return False
            pending = job.correlate_at
            if pending is not None and now - STALE <= pending <= due:
                return False
            job.correlate_at = due
            return True

    def unschedule(self, job_id: str) -> None:
        with self._lock:
            if (job := self._st.jobs.get(job_id)) is not None:
                job.correlate_at = None

    def pending_correlations(self, due_before: datetime | None = None, limit: int = 10_000
                             ) -> list[tuple[str, datetime]]:
        with self._lock:
            found = [(job.correlate_at, job_id) for job_id, job in self._st.jobs.items()
                     if job.correlate_at is not None and (due_before is None or job.correlate_at < due_before)]
            return [(job_id, due) for due, job_id in sorted(found)[:limit]]

    def reclaim(self, job_id: str, due: datetime, now: datetime) -> bool:
        with self._lock:
            job = self._st.jobs.get(job_id)
            if job is None or job.correlate_at != due:
                return False
            job.correlate_at = now
            return True

    # -- incidents ------------------------------------------------------------------------------------------------
    def save_incident(self, job_id: str, build: Callable[[Incident | None], Incident | None],
                      on_saved: OnSaved | None = None, read: int | None = None,
                      regressed: Regressed | None = None) -> Incident | None:
        with self._transaction() as (st, tx):
            job = st.jobs.get(job_id)
            if job is not None and read is not None and read > job.correlated:
                job.correlated = read
            current = _latest(st, job_id)
            new = build(current)
            if new is None:
                return None
            _write(st, new, revised=current is None or (current.id, current.revision) != (new.id, new.revision))
            previous = current if current and current.id == new.id else None
            if on_saved is not None:
                on_saved(tx, new, previous)
            if regressed is not None and new.regression_of and (previous is None or
                                                                previous.regression_of != new.regression_of):
                earlier = _get(st, new.regression_of)
                told = regressed(new, earlier) if earlier is not None else None
                if earlier is not None and told is not None:
                    _write(st, told, revised=told.revision != earlier.revision)
                    if on_saved is not None:
                        on_saved(tx, told, earlier)
            return new

    def resolve(self, incident_id: str, note: str, now: datetime,
                on_saved: OnSaved | None = None) -> tuple[Incident, bool] | None:
        with self._transaction() as (st, tx):
            current = _get(st, incident_id)
            if current is None:
                return None
            if current.state == "resolved":
                return current, False
            new = current.model_copy(update={"state": "resolved", "updated_at": now,
                                              "changes": [note or "resolved by hand"]})
            _write(st, new, revised=False)
            if on_saved is not None:
                on_saved(tx, new, current)
            return new, True

    def close_chain(self, job_id: str, attempt: int, now: datetime,
                    on_saved: OnSaved | None = None) -> Incident | None:
        with self._transaction() as (st, tx):
            mine = [Incident.model_validate(i) for i in st.incidents.values() if i["job_id"] == job_id]
            earlier = [i for i in mine if i.attempt < attempt]
            if not earlier or any(i.attempt >= attempt for i in mine):
                return None  # a success does not undo a failure that came after it
            current = max(earlier, key=lambda i: i.attempt)
            line = f"Attempt {attempt} of job {job_id} succeeded"
            if any(c.startswith(line) for c in current.changes):
                return None  # told already: a redelivered event
            if current.state == "resolved":
                new = current.model_copy(update={"revision": current.revision + 1, "updated_at": now,
                                                  "changes": [f"{line}: the fix held"]})
            else:  # resolving is not a new diagnosis: the revision stays
                new = current.model_copy(update={"state": "resolved", "updated_at": now,
                                                  "changes": [f"{line}: resolved by the job's own recovery"]})
            _write(st, new, revised=new.revision != current.revision)
            if on_saved is not None:
                on_saved(tx, new, current)
            return new

    def incident(self, incident_id: str) -> Incident | None:
        with self._lock:
            return _get(self._st, incident_id)

    def incident_for_job(self, job_id: str) -> Incident | None:
        with self._lock:
            return _latest(self._st, job_id)

    def fixed_before(self, signature: str, host: str, job_id: str, attempt: int,
                     gpu: str | None = None) -> Incident | None:
        with self._lock:
            like = sorted((i for i in map(Incident.model_validate, self._st.incidents.values())
                           if i.signature == signature and i.host == host and i.state == "resolved"),
                          key=lambda i: i.updated_at, reverse=True)[:8]
            return next((i for i in like if (i.job_id, i.attempt) != (job_id, attempt)
                         and (gpu is None or (earlier := gpu_of(i.diagnosis.model_dump(mode="json"))) is None
                              or gpu == earlier)), None)

    def incidents(self, limit: int = 50, offset: int = 0) -> list[Incident]:
        with self._lock:
            every = sorted(map(Incident.model_validate, self._st.incidents.values()), key=lambda i: i.id)
            every.sort(key=lambda i: i.created_at, reverse=True)  # stable: ties stay by id, as SQL orders them
            return every[offset:offset + limit]

    def revisions(self, incident_id: str) -> list[tuple[int, datetime, list[str]]]:
        with self._lock:
            found = self._st.revisions.get(incident_id, {})
            return [(n, at, list(changes)) for n, (at, changes) in sorted(found.items())]

    @contextmanager
    def _transaction(self) -> Iterator[tuple[_State, MemoryNotifyTx]]:
        """The incident's changes and its outbox's in one transaction: a working state that replaces this one
        only when the block ends without an exception, inside the notify store's (which does the same). The
        shards are shared, not copied: an incident's transaction never writes them."""
        with self._lock, self._notify.notify() as tx:
            st = self._st
            working = _State(copy.deepcopy(st.jobs), st.shards, dict(st.incidents), copy.deepcopy(st.revisions))
            yield working, tx
            self._st = working


def _get(st: _State, incident_id: str) -> Incident | None:
    found = st.incidents.get(incident_id)
    return Incident.model_validate(found) if found is not None else None


def _latest(st: _State, job_id: str) -> Incident | None:
    mine = [Incident.model_validate(i) for i in st.incidents.values() if i["job_id"] == job_id]
    return max(mine, key=lambda i: i.attempt, default=None)


def _write(st: _State, inc: Incident, revised: bool) -> None:
    st.incidents[inc.id] = inc.model_dump(mode="json")
    if revised:
        st.revisions.setdefault(inc.id, {})[inc.revision] = (inc.updated_at, list(inc.changes))


if TYPE_CHECKING:  # mypy holds the fake to its ports: a method that drifts from them fails `make test`
    _jobs: type[JobStore] = MemoryStore
    _notify: type[NotifyStore] = MemoryStore
