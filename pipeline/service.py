"""Accept, scan, decide, correlate, store: the pipeline's work, the same in both modes."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from catalog.matcher import Matcher
from correlator.diagnose import diagnose
from correlator.jobs import changes, readiness
from correlator.reading import SourceResult
from correlator.shards import SourceKey, merge, result_to_json
from pipeline import metrics, tracing
from pipeline.collector import collector_held_off
from pipeline.recent import RecentScans
from pipeline.scanning import Arrival, Outcome, Scanned, Unreadable, arrival, scan, scan_arrival
from schemas.clock import Clock
from schemas.diagnosis import Diagnosis
from schemas.incident import Incident, Severity, incident_id
from schemas.wire import JobEvent, LogShard
from store.gpus import pci_in
from store.incidents import JobView, OnSaved, Store
from store.ports import ShardPayload, ShardRef

log = logging.getLogger("firstfault.pipeline")


class Scheduler(Protocol):
    """Runs `Pipeline.correlate(job_id)` at or after `at` by the Pipeline's clock (the Celery countdown, the
    embedded timer; in memory, pipeline.testing.RecordingScheduler): tests/pipeline/test_handoff_contract.py."""

    def correlate_at(self, job_id: str, at: datetime, headers: Mapping[str, str]) -> None: ...


@dataclass(frozen=True)
class Stored:
    """What accept_stored did: fresh per ref that had a payload (in order; False for a bad one), the refs whose
    payload is lost, and the refs whose payload does not inflate, with why (their payloads are left in the store)."""

    fresh: list[bool]
    lost: list[ShardRef]
    bad: list[tuple[ShardRef, str]] = field(default_factory=list)


class Pipeline:
    def __init__(self, store: Store, matcher: Matcher, scheduler: Scheduler, clock: Clock,
                 group_wait: timedelta = timedelta(seconds=30), revise_wait: timedelta = timedelta(seconds=10),
                 on_saved: OnSaved | None = None) -> None:
        self.store, self.matcher, self.scheduler, self.clock = store, matcher, scheduler, clock
        self.group_wait, self.revise_wait, self.on_saved = group_wait, revise_wait, on_saved
        self.recent = RecentScans()

    def accept_job(self, event: JobEvent, headers: Mapping[str, str] | None = None) -> None:
        with tracing.span("firstfault.record_job", headers, job_id=event.job_id, state=event.state):
            self.store.record_job(event, self.clock())
            if event.state == "succeeded" and event.attempt > 0:
                closed = self.store.close_chain(event.job_id, event.attempt, self.clock(), self.on_saved)
                if closed is not None:
                    log.info("job %s attempt %d succeeded: incident %s closed", event.job_id, event.attempt,
                             closed.id)
            self._consider(event.job_id, late_evidence=False)

    def accept_shard(self, shard: LogShard | ShardPayload, headers: Mapping[str, str] | None = None) -> bool:
        """Scan and keep one shard (a ShardPayload: one the edge validated, only inflated here); False when it was
        a redelivery of one already kept."""
        got = arrival(shard)
        with (tracing.span("firstfault.match_shard", headers, job_id=got.job_id, seq=got.seq) as sp,
              metrics.SCAN_SECONDS.time()):
            now = self.clock()
            key = got.key
            result = scan(self.matcher, key, got.data(), now.year)
            scanned = result_to_json(result)
            sp.set_attribute("firstfault.findings", len(scanned["findings"]))
            recorded = self.store.record_shard(got.job_id, key, got.seq, got.eof, scanned, now)
            if recorded.fresh:
                self.recent.add(got.job_id, key, got.seq, got.eof, result)
            if recorded.decides:
                self._consider(got.job_id, late_evidence=recorded.fresh)
            metrics.SHARDS_SCANNED.labels("stored" if recorded.fresh else "redelivery").inc()
            return recorded.fresh

    def accept_shards(self, shards: Sequence[LogShard | ShardPayload],
                      headers: Sequence[Mapping[str, str]] | None = None) -> list[bool]:
        """accept_shard for several shards (what a queue holds at once): each scanned, then each job's stored in
        one transaction and its completion decided once, from its counts after the last of them. The same
        outcome as one by one (a decision reads only the store's state, which the last shard leaves). A
        ShardPayload is a shard the edge validated, its data as the producer packed it: only inflated here."""
        return self._accept([arrival(s) for s in shards], headers, drop=False)

    def accept_stored(self, refs: Sequence[ShardRef], headers: Sequence[Mapping[str, str]] | None = None) -> Stored:
        """accept_shards for shards the edge validated and left in the store (a task's ShardRefs): each payload
        loaded as the producer packed it (no JSON, no base64 here), inflated under the bound the edge checked it
        against (sources.shard_data.inflate: the same limit and errors), scanned, and dropped in the transaction
        that records its shard. A ref without a payload is a redelivery when its shard is
        recorded (its job re-evaluated, as a redelivered shard's is), else lost (Stored.lost: the caller
        dead-letters it). A payload that does not inflate (Stored.bad) is not recorded and the others are: one
        corrupt shard in a task costs that shard, not the task's others."""
        found = self.store.payloads.payloads(refs)
        missing = [i for i, p in enumerate(found) if p is None]
        scanned = self.store.payloads.scanned([refs[i] for i in missing]) if missing else []
        lost = [refs[i] for i, done in zip(missing, scanned, strict=True) if not done]
        again = [refs[i].job_id for i, done in zip(missing, scanned, strict=True) if done]
        metrics.SHARDS_SCANNED.labels("redelivery").inc(len(again))
        for job_id in sorted(set(again)):
            self._consider(job_id, late_evidence=False)
        present = [(i, p) for i, p in enumerate(found) if p is not None]
        arrivals = [arrival(p) for _, p in present]
        bad: dict[int, str] = {}
        fresh = self._accept(arrivals, [headers[i] for i, _ in present] if headers else None, drop=True, bad=bad)
        return Stored(fresh, lost, [(present[i][1].ref, why) for i, why in sorted(bad.items())])

    def accept_scanned(self, shards: Sequence[LogShard | ShardPayload], outcomes: Sequence[Outcome],
                       headers: Sequence[Mapping[str, str]] | None = None) -> list[bool]:
        """accept_shards for shards already scanned elsewhere (the embedded runner's scan processes, by
        pipeline.scanning.scan_arrivals with this Pipeline's matcher and its clock's year): only stored here. Each
        shard has its match_shard span (its scan's time an attribute); the store runs in the last one's, so the
        shard that completes a job carries its producer's trace on to the correlation, as accept_shard does."""
        arrivals = [arrival(s) for s in shards]
        last = len(arrivals) - 1
        for index, (shard, outcome) in enumerate(zip(arrivals, outcomes, strict=True)):
            seconds = outcome.seconds if isinstance(outcome, Scanned) else None
            if seconds is not None:
                metrics.SCAN_SECONDS.observe(seconds)
            with tracing.span("firstfault.match_shard", headers[index] if headers else None, job_id=shard.job_id,
                              seq=shard.seq, scan_seconds=seconds):
                if index == last:
                    return self._store(arrivals, outcomes, self.clock(), drop=False)
        return []

    def _accept(self, arrivals: Sequence[Arrival], headers: Sequence[Mapping[str, str]] | None,
                drop: bool, bad: dict[int, str] | None = None) -> list[bool]:
        now = self.clock()
        outcomes = []
        for index, shard in enumerate(arrivals):
            with (tracing.span("firstfault.match_shard", headers[index] if headers else None, job_id=shard.job_id,
                               seq=shard.seq),
                  metrics.SCAN_SECONDS.time()):
                outcomes.append(scan_arrival(self.matcher, shard, now.year))
        return self._store(arrivals, outcomes, now, drop, bad)

    def _store(self, arrivals: Sequence[Arrival], outcomes: Sequence[Outcome], now: datetime, drop: bool,
               bad: dict[int, str] | None = None) -> list[bool]:
        """`bad` given: an arrival whose data does not decode (PermanentError) is left out and noted there by
        index, and the others are stored; else that error is raised and nothing is stored."""
        by_job: dict[str, list[int]] = defaultdict(list)
        items: dict[int, tuple[SourceKey, int, bool, Mapping[str, Any]]] = {}
        results: dict[int, SourceResult] = {}
        for index, (shard, outcome) in enumerate(zip(arrivals, outcomes, strict=True)):
            if isinstance(outcome, Unreadable):
                if bad is None:
                    raise outcome.error
                bad[index] = str(outcome.error)
                continue
            items[index] = (shard.key, shard.seq, shard.eof, outcome.stored)
            results[index] = outcome.result
            by_job[shard.job_id].append(index)
        fresh = [False] * len(arrivals)
        with tracing.span("firstfault.store_shards", None, shards=len(arrivals)):
            for job_id, indexes in by_job.items():
                stored, decides = self.store.record_shards(job_id, [items[i] for i in indexes], now, drop)
                for index, kept in zip(indexes, stored, strict=True):  # kept before any correlation can run
                    fresh[index] = kept
                    if kept:
                        self.recent.add(job_id, *items[index][:3], results[index])
                    metrics.SHARDS_SCANNED.labels("stored" if kept else "redelivery").inc()
                if decides:
                    self._consider(job_id, late_evidence=any(stored))
        return fresh

    def _consider(self, job_id: str, late_evidence: bool) -> None:
        now = self.clock()
        if self.store.incident_for_job(job_id) is not None:
            if late_evidence:
                self._schedule(job_id, now + self.revise_wait, now)
            return
        found = self.store.job_progress(job_id)  # the sources themselves only when the counts allow completion
        ready = readiness(found.event, found.failed_at, found.complete, found.seen, now, self.group_wait)
        if ready.due is not None:
            self._schedule(job_id, ready.due, now)

    def _schedule(self, job_id: str, due: datetime, now: datetime) -> None:
        if self.store.schedule(job_id, due, now):
            self.scheduler.correlate_at(job_id, due, tracing.headers())

    def correlate(self, job_id: str, headers: Mapping[str, str] | None = None) -> Incident | None:
        """Diagnose the job from every shard kept so far; create or revise its incident. Idempotent."""
        with tracing.span("firstfault.correlate_job", headers, job_id=job_id), metrics.CORRELATE_SECONDS.time():
            now = self.clock()
            # this run is the pending one (or a spare): clear it, so a reschedule below is really enqueued even
            # when a countdown fired a little before its due time
            self.store.unschedule(job_id)
            found = self.store.job_progress(job_id)
            if found.correlated >= found.changes and self.store.incident_for_job(job_id) is not None:
                # no shard or event arrived since the correlation that last committed read the job (a spare
                # timer, say group_wait's after completion had correlated, or a redelivered task): the same
                # diagnosis again would change nothing. A correlation that died before committing noted nothing.
                return None
            view = self._view(job_id)
            event = view.event
            if event is None:
                return None
            if self.store.incident_for_job(job_id) is None:
                # from the sources' rows, as _consider decides: not every shard's seq walked again (0.3 s at
                # 4,096 ranks); a shard stored since `found` was read can only make the job more complete
                ready = readiness(found.event, found.failed_at, found.complete, found.seen, now, self.group_wait)
                if not ready.ready:
                    if ready.due is not None:
                        self._schedule(job_id, ready.due, now)
                    return None
            with collector_held_off():
                diagnosis = diagnose(merge(view.shards), self.matcher.catalog, event.rank_hosts,
                                     exit_codes=event.exit_codes, ended_at=event.ended_at)
            with tracing.span("firstfault.store_incident", None, job_id=job_id):
                fixed = self._fixed_before(diagnosis, event)
                saved = self.store.save_incident(job_id, lambda cur: self._build(event, diagnosis, cur, now, fixed),
                                                 self.on_saved, read=view.changes,
                                                 regressed=lambda new, earlier: _told(new, earlier, now))
            if saved is not None:
                _observe(saved, view.failed_at)
                log.info("incident %s (job %s, revision %d): %s, rank %s on %s", saved.id, job_id, saved.revision,
                         saved.signature or saved.diagnosis.verdict, saved.rank, saved.host)
            return saved

    def _view(self, job_id: str) -> JobView:
        """The job and its shards' scans: those this process kept when it holds them all (counted in the store,
        not listed), else read back."""
        head = self.store.job(job_id, listed=False)
        kept = self.recent.shards(job_id, head.stored)
        return self.store.job(job_id) if kept is None else replace(head, shards=kept)

    def _fixed_before(self, diagnosis: Diagnosis, event: JobEvent) -> Incident | None:
        """The resolved incident this diagnosis repeats on the same host, if any: the fix did not hold."""
        rc = diagnosis.root_cause
        if rc is None or rc.signature is None or rc.host is None:
            return None
        return self.store.fixed_before(rc.signature, rc.host, event.job_id, event.attempt,
                                       pci_in(e.text for e in rc.evidence))

    def _build(self, event: JobEvent, diagnosis: Diagnosis, current: Incident | None,
               now: datetime, fixed: Incident | None = None) -> Incident | None:
        new_id = incident_id(event.job_id, event.attempt)
        if current is not None and current.id == new_id:
            # compare as stored: the JSON keeps times to the millisecond
            if current.diagnosis.model_dump(mode="json") == diagnosis.model_dump(mode="json"):
                return None
            what = changes(current.diagnosis, diagnosis)
            regression = fixed.id if fixed is not None else None
            return current.model_copy(update={
                "diagnosis": diagnosis, "updated_at": now, "regression_of": regression,
                "severity": self._severity(diagnosis, current.repeats, regression is not None),
                # a revision is what a follow-up post announces; quieter changes update the row in place
                "revision": current.revision + 1 if what else current.revision,
                "changes": what or current.changes,
            })
        repeats = _repeats(current, diagnosis)
        return Incident(id=new_id, job_id=event.job_id, attempt=event.attempt, cluster=event.cluster,
                        team=event.team, labels=event.labels,
                        severity=self._severity(diagnosis, repeats, fixed is not None),
                        created_at=now, updated_at=now, diagnosis=diagnosis, repeats=repeats,
                        regression_of=fixed.id if fixed is not None else None)

    def _severity(self, diagnosis: Diagnosis, repeats: int = 0, regression: bool = False) -> Severity:
        level = self._entry_severity(diagnosis, repeats)
        # the same fault on the same host after it was resolved: the fix did not hold, one level up
        return _RAISED[level] if regression else level

    def _entry_severity(self, diagnosis: Diagnosis, repeats: int) -> Severity:
        rc = diagnosis.root_cause
        sig = self.matcher.catalog.get(rc.signature) if rc and rc.signature else None
        if diagnosis.impact is not None and diagnosis.impact.level == "severe":
            return "critical"  # what it cost, whatever the entry says: SEVERE_GPU_HOURS or more lost
        if repeats >= REPEATS_CRITICAL and rc is not None and rc.signature is not None:
            return "critical"  # the job keeps failing the same way: its restarts are burning the GPUs again
        if sig is not None:
            value = sig.severity.value
            return value if value in ("critical", "error", "warning", "info") else "error"  # type: ignore[return-value]
        return "warning" if diagnosis.verdict == "no_failure_found" else "error"


REPEATS_CRITICAL = 2  # the third attempt of a job to fail the same way is critical
_RAISED: dict[Severity, Severity] = {"info": "warning", "warning": "error", "error": "critical",
                                     "critical": "critical"}


def _repeats(previous: Incident | None, diagnosis: Diagnosis) -> int:
    """How many earlier attempts of this job failed the same way in a row: ``previous`` is its latest incident (an
    earlier attempt's; the store hands the job's latest to a new attempt's build)."""
    signature = diagnosis.root_cause.signature if diagnosis.root_cause else None
    if previous is None or signature is None or previous.signature != signature:
        return 0
    return previous.repeats + 1


def _told(new: Incident, earlier: Incident, now: datetime) -> Incident | None:
    """The earlier incident's revision that tells its thread the failure came back (its fix did not hold)."""
    if earlier.regressed_by == new.id:
        return None
    where = f"rank {new.rank} on {new.host}" if new.rank is not None else f"host {new.host}"
    line = (f"Failed again: {new.id} (job {new.job_id} attempt {new.attempt}), {new.signature} on {where}: "
            f"the fix did not hold; the new incident is {new.severity}")
    return earlier.model_copy(update={"regressed_by": new.id, "revision": earlier.revision + 1, "updated_at": now,
                                      "changes": [line]})


def _observe(saved: Incident, failed_at: datetime | None) -> None:
    first = saved.created_at == saved.updated_at  # just created (a revision moves updated_at on)
    metrics.INCIDENTS_SAVED.labels("created" if first else "revised").inc()
    if first and failed_at is not None:
        metrics.FAILURE_TO_INCIDENT.observe(max(0.0, (saved.created_at - failed_at).total_seconds()))
