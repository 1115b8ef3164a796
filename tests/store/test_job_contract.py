"""One suite for every JobStore (store/job_ports.py): the in-memory one, SQLite, and PostgreSQL (integration).

What the pipeline relies on of jobs, shards, the pending correlation and incidents, asserted the same way
against each: idempotent writes on their natural keys, a job's progress counted as its shards arrive, one
pending correlation a job, incidents revised in one transaction with their outbox hook, and the history read
back. tests/pipeline/test_store.py keeps what only the SQL store has (migrations, its counters' tables).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import pytest

from correlator.shards import SourceKey
from schemas.diagnosis import Diagnosis, GpuIdentity, RootCause
from schemas.incident import Incident, incident_id
from schemas.subscription import Match, Subscription, Target
from schemas.wire import JobEvent
from store.job_ports import JobStore
from store.ports import NotifyStore, NotifyTx
from tests.store.backends import sql_store

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
KEY = SourceKey("stdout", 3, "node001", "node001/rank3.log")
SCANNED = {"lines": 10, "bytes": 100, "findings": [], "context": []}


class Both(JobStore, NotifyStore, Protocol):
    """The fixture's stores are both: an incident's outbox hook writes through the NotifyTx it is given."""


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[Both]:
    from store.testing import MemoryStore

    if request.param == "memory":
        yield MemoryStore()
        return
    opened = sql_store(request)
    yield opened
    opened.close()


def job(job_id: str = "j", world_size: int | None = 64, **extra: object) -> JobEvent:
    return JobEvent.model_validate({"job_id": job_id, "state": "failed", "world_size": world_size,
                                    "cluster": "c1", "team": "llm", **extra})


def incident(revision: int = 1, rank: int = 3, job_id: str = "j", attempt: int = 0, host: str = "n1",
             signature: str = "xid.79", gpu: str | None = None, **kw: Any) -> Incident:
    root = RootCause(signature=signature, title="t", category="gpu", rank=rank, host=host, confidence=0.9,
                     tags=["xid"], gpu=GpuIdentity(pci_bus_id=gpu) if gpu else None)
    return Incident(id=incident_id(job_id, attempt), job_id=job_id, attempt=attempt, team="llm", revision=revision,
                    created_at=T0, updated_at=T0 + timedelta(seconds=revision),
                    diagnosis=Diagnosis(verdict="diagnosed", root_cause=root),
                    changes=[f"rev {revision}"] if revision > 1 else [], **kw)


def always(made: Incident) -> Callable[[Incident | None], Incident]:
    return lambda cur: made


def subscriptions(store: Both) -> list[str]:
    with store.notify() as tx:
        return [s.id for s in tx.subscriptions()]


def subscribe(sub_id: str) -> Any:
    """An outbox hook that writes in the incident's transaction (a subscription: the simplest row to look for)."""
    def hook(tx: NotifyTx, new: Incident, old: Incident | None) -> None:
        tx.add_subscription(Subscription(id=f"{sub_id}-{new.revision}", team="llm", match=Match(tags=["xid"]),
                                         targets=[Target(kind="slack", address="#x")]), T0)
    return hook


# -- jobs and shards ---------------------------------------------------------------------------------------------
def test_an_unknown_job_reads_as_empty(store: Both) -> None:
    assert store.job_event("nope") is None
    view = store.job("nope")
    assert (view.event, view.failed_at, view.correlate_at, view.shards) == (None, None, None, [])
    found = store.job_progress("nope")
    assert (found.event, found.counts.sources, found.changes, found.correlated) == (None, 0, 0, -1)
    assert not store.schedule("nope", T0, T0)


def test_a_redelivered_shard_is_kept_once_and_its_key_is_the_whole_source(store: Both) -> None:
    store.record_job(job(), T0)
    assert store.record_shard("j", KEY, 0, False, SCANNED, T0).fresh
    assert not store.record_shard("j", KEY, 0, False, SCANNED, T0).fresh
    assert store.record_shard("j", KEY, 1, True, SCANNED, T0).fresh
    for other in (SourceKey("stdout", 4, "node001", "node001/rank4.log"), SourceKey("stderr", 3, "node001",
                  "node001/rank3.log"), SourceKey("stdout", 3, "node001", "other.log")):
        assert store.record_shard("j", other, 0, False, SCANNED, T0).fresh  # another source: its own seq 0
    assert store.record_shard("j2", KEY, 0, False, SCANNED, T0).fresh  # another job
    shards = store.job("j").shards
    assert len(shards) == 5
    assert sorted((s.seq, s.eof) for s in shards if s.key == KEY) == [(0, False), (1, True)]


def test_a_shard_s_scan_comes_back_unless_only_keys_are_asked(store: Both) -> None:
    scanned = {**SCANNED, "findings": [{"signature": "xid.79", "line": 3}]}
    store.record_job(job(), T0)
    store.record_shard("j", KEY, 0, True, scanned, T0)
    assert store.job("j").shards[0].scanned == scanned
    bare = store.job("j", scans=False).shards[0]
    assert (bare.key, bare.seq, bare.eof, bare.scanned) == (KEY, 0, True, {})


def test_a_job_read_without_its_shards_says_how_many_it_has(store: Both) -> None:
    """What a correlation that kept every scan reads: the job and the number of its stored shards, no shard;
    a redelivery is not counted twice, another job's shards not at all."""
    store.record_job(job(), T0)
    for seq in range(3):
        store.record_shard("j", KEY, seq, seq == 2, SCANNED, T0)
    store.record_shard("j", KEY, 1, False, SCANNED, T0)  # a redelivery
    store.record_shard("other", KEY, 0, True, SCANNED, T0)
    head = store.job("j", listed=False)
    assert (head.shards, head.stored, head.event) == ([], 3, job())
    assert store.job("j").stored == 3 and store.job("nope", listed=False).stored == 0


def test_failed_at_is_when_the_failure_arrived_and_older_attempts_are_ignored(store: Both) -> None:
    store.record_job(job(), T0)
    store.record_job(job(), T0 + timedelta(minutes=5))  # a redelivery
    assert store.job("j").failed_at == T0
    store.record_job(job(attempt=1), T0 + timedelta(minutes=9))
    assert store.job("j").failed_at == T0 + timedelta(minutes=9)
    store.record_job(job(attempt=0, state="succeeded"), T0 + timedelta(minutes=10))
    found = store.job_event("j")
    assert found is not None and (found.attempt, found.state) == (1, "failed")


def test_another_sender_s_event_of_the_same_attempt_is_merged(store: Both) -> None:
    store.record_job(job(hosts=["n1"], exit_codes={"0": 1}), T0)
    store.record_job(job(world_size=None, hosts=["n2"], exit_codes={"1": 137}), T0)
    found = store.job_event("j")
    assert found is not None
    assert (found.world_size, found.hosts, found.exit_codes) == (64, ["n1", "n2"], {"0": 1, "1": 137})


def test_the_change_counter_counts_events_and_fresh_shards_of_a_known_job(store: Both) -> None:
    store.record_shard("j", KEY, 0, False, SCANNED, T0)  # before the job's event: counted by its event
    store.record_job(job(), T0)
    store.record_shard("j", KEY, 1, False, SCANNED, T0)
    store.record_shard("j", KEY, 1, False, SCANNED, T0)  # a redelivery changes nothing
    store.record_shards("j", [(KEY, 2, False, SCANNED), (KEY, 3, True, SCANNED)], T0)
    found = store.job_progress("j")
    assert (found.changes, found.correlated, found.counts.sources) == (4, -1, 1)
    store.save_incident("j", lambda cur: None, read=4)  # noted though nothing was written
    store.save_incident("j", lambda cur: None, read=2)  # an older read never lowers it
    assert store.job_progress("j").correlated == 4
    assert store.job("j").changes == 4 and store.job("j").correlated == 4


def test_recording_a_shard_says_in_the_same_transaction_what_deciding_needs(store: Both) -> None:
    store.record_job(job("j", world_size=4), T0)
    first = store.record_shard("j", KEY, 0, False, SCANNED, T0)
    assert (first.fresh, first.settled, first.pending) == (True, False, None)  # nothing pending: look
    assert not store.record_shard("j", KEY, 0, False, SCANNED, T0).fresh  # a redelivery
    store.schedule("j", T0 + timedelta(seconds=30), T0)
    assert store.record_shard("j", KEY, 1, False, SCANNED, T0).settled  # its source is still open
    ended = store.record_shard("j", KEY, 2, True, SCANNED, T0)
    assert ended.fresh and not ended.settled and ended.pending is not None
    event, progress = ended.pending
    assert event is not None and (progress.sources, progress.ended, progress.ended_ranks) == (1, 1, 1)
    assert len(store.job("j").shards) == 3  # every fresh shard was kept, the redelivery once


def test_settled_means_pending_and_this_source_still_incomplete(store: Both) -> None:
    store.record_job(job(), T0)
    assert not store.record_shard("j", KEY, 0, False, SCANNED, T0).settled  # nothing pending: the caller decides
    store.schedule("j", T0 + timedelta(seconds=30), T0)
    assert store.record_shard("j", KEY, 1, False, SCANNED, T0).settled
    store.record_shard("j", KEY, 4, True, SCANNED, T0)
    assert store.record_shard("j", KEY, 2, False, SCANNED, T0).settled  # eof arrived, seq 3 still missing
    assert not store.record_shard("j", KEY, 3, False, SCANNED, T0).settled  # the gap is filled: it completed


def test_pending_progress_counts_sources_the_ended_ones_and_their_ranks(store: Both) -> None:
    store.record_job(job(world_size=4), T0)
    other = SourceKey("stdout", 5, "node002", "node002/rank5.log")
    dmesg = SourceKey("dmesg", None, "node001", "node001.dmesg")
    store.record_shard("j", KEY, 0, False, SCANNED, T0)
    store.record_shard("j", KEY, 2, True, SCANNED, T0)  # ended, seq 1 missing: counted as ended all the same
    store.record_shard("j", other, 0, False, SCANNED, T0)
    assert store.record_shard("j", dmesg, 0, True, SCANNED, T0).pending is None  # nothing pending: must look
    store.schedule("j", T0 + timedelta(seconds=30), T0)
    found = store.record_shard("j", dmesg, 1, True, SCANNED, T0)
    assert found.pending is not None
    expected, progress = found.pending
    assert expected.world_size == 4
    assert (progress.sources, progress.ended, progress.ended_ranks) == (3, 2, 1)
    assert not found.decides  # one rank of four ended: it cannot have completed the job
    lost = store.record_shard("j", dmesg, 2, True, SCANNED, T0 + timedelta(hours=1))
    assert lost.pending is None and lost.decides  # overdue that long: taken as lost, so look


def test_sources_are_listed_only_once_the_counts_allow_completion(store: Both) -> None:
    store.record_job(job(world_size=2), T0)
    rank4 = SourceKey("stdout", 4, "node001", "node001/rank4.log")
    store.record_shard("j", KEY, 0, True, SCANNED, T0)
    early = store.job_progress("j")
    assert (early.counts.ended_ranks, early.seen, early.complete) == (1, set(), set())
    store.record_shard("j", rank4, 1, True, SCANNED, T0)  # ended, seq 0 missing
    found = store.job_progress("j")
    assert found.event is not None and found.failed_at == T0
    assert (found.seen, found.complete) == ({KEY, rank4}, {KEY})


def test_a_batch_of_shards_counts_as_the_same_shards_one_by_one(store: Both) -> None:
    keys = [SourceKey(stream, rank, f"node{rank // 4}", f"node{rank // 4}/rank{rank}.{stream}")
            for rank in range(8) for stream in ("stdout", "stderr")] + [SourceKey("dmesg", None, "node0", "dmesg")]
    shards = [(key, seq, seq == 2, SCANNED) for key in keys for seq in range(3)]
    random.Random(7).shuffle(shards)
    for job_id in ("one", "batched"):
        store.record_job(job(job_id, world_size=8), T0)
        store.schedule(job_id, T0 + timedelta(seconds=30), T0)
    held = [s for s in shards if s[0].rank == 5 and s[1] == 1]  # rank 5's middle shards, in the last batch
    rest = [s for s in shards if s not in held]
    for key, seq, eof, scanned in rest + held:
        store.record_shard("one", key, seq, eof, scanned, T0)
    fresh, _ = store.record_shards("batched", rest[:20], T0)
    assert fresh == [True] * 20
    store.record_shards("batched", rest[20:], T0)
    waiting = store.job_progress("batched")
    assert waiting.counts.ended_ranks == 8 and len(waiting.seen) == len(keys)
    assert {k.rank for k in waiting.seen - waiting.complete} == {5}  # rank 5 ended, its middle shards missing
    fresh, decides = store.record_shards("batched", [*held, rest[0]], T0)  # rest[0] again: a redelivery
    assert fresh == [True, True, False] and decides

    def counts(job_id: str) -> tuple[object, ...]:
        found = store.job_progress(job_id)
        return found.counts, found.seen, found.complete, found.changes
    assert counts("batched") == counts("one")
    assert len(store.job("batched").shards) == len(shards)


# -- the pending correlation ------------------------------------------------------------------------------------
def test_one_correlation_is_pending_and_an_earlier_one_replaces_it(store: Both) -> None:
    store.record_job(job(), T0)
    assert store.schedule("j", T0 + timedelta(seconds=30), T0)
    assert not store.schedule("j", T0 + timedelta(seconds=40), T0)
    assert not store.schedule("j", T0 + timedelta(seconds=30), T0 + timedelta(seconds=45))  # overdue, not lost
    assert store.schedule("j", T0 + timedelta(seconds=5), T0)
    assert store.job("j").correlate_at == T0 + timedelta(seconds=5)
    store.unschedule("j")
    assert store.job("j").correlate_at is None
    assert store.schedule("j", T0 + timedelta(seconds=40), T0 + timedelta(seconds=6))
    assert store.schedule("j", T0 + timedelta(seconds=40), T0 + timedelta(minutes=30))  # lost: again


def test_the_sweeper_finds_pending_correlations_earliest_first_and_one_reclaims_each(store: Both) -> None:
    for n, due in ((1, 30), (2, 10), (3, 20)):
        store.record_job(job(f"j{n}"), T0)
        store.schedule(f"j{n}", T0 + timedelta(seconds=due), T0)
    store.record_job(job("idle"), T0)
    assert store.pending_correlations() == [("j2", T0 + timedelta(seconds=10)), ("j3", T0 + timedelta(seconds=20)),
                                            ("j1", T0 + timedelta(seconds=30))]
    assert [j for j, _ in store.pending_correlations(due_before=T0 + timedelta(seconds=25))] == ["j2", "j3"]
    assert [j for j, _ in store.pending_correlations(limit=1)] == ["j2"]
    now = T0 + timedelta(minutes=1)
    assert store.reclaim("j2", T0 + timedelta(seconds=10), now)
    assert not store.reclaim("j2", T0 + timedelta(seconds=10), now)  # a second sweeper: it moved
    assert not store.reclaim("nope", T0, now)
    assert store.pending_correlations()[-1] == ("j2", now)


# -- incidents ----------------------------------------------------------------------------------------------------
def test_revisions_are_kept_and_the_hook_runs_in_the_incident_s_transaction(store: Both) -> None:
    store.record_job(job(), T0)
    seen: list[tuple[int, int | None]] = []

    def hook(tx: NotifyTx, new: Incident, old: Incident | None) -> None:
        seen.append((new.revision, old.revision if old else None))
        subscribe(f"s{len(seen)}")(tx, new, old)
    given: list[Incident | None] = []

    def build(made: Incident | None) -> Callable[[Incident | None], Incident | None]:
        return lambda cur: given.append(cur) or made  # type: ignore[func-returns-value]
    assert store.save_incident("j", build(incident(1, 3)), hook) == incident(1, 3)
    assert store.save_incident("j", build(None), hook) is None  # None: nothing written, no hook
    store.save_incident("j", lambda cur: incident(cur.revision + 1, 5) if cur else None, hook)
    quiet = incident(2, 6).model_copy(update={"changes": ["rev 2"]})  # same revision: updated, no revision row
    store.save_incident("j", lambda cur: quiet, hook)
    assert given == [None, incident(1, 3)]
    found = store.incident_for_job("j")
    assert found == quiet and store.incident(quiet.id) == quiet and found.tags == ["xid"]
    assert seen == [(1, None), (2, 1), (2, 2)]
    assert store.revisions(quiet.id) == [(1, T0 + timedelta(seconds=1), []),
                                         (2, T0 + timedelta(seconds=2), ["rev 2"])]
    assert subscriptions(store) == ["s1-1", "s2-2", "s3-2"]


def test_a_failing_hook_keeps_nothing_of_the_change(store: Both) -> None:
    store.record_job(job(), T0)

    def boom(tx: NotifyTx, new: Incident, old: Incident | None) -> None:
        subscribe("lost")(tx, new, old)
        raise RuntimeError("outbox write failed")

    with pytest.raises(RuntimeError):
        store.save_incident("j", lambda cur: incident(1, 3), boom, read=1)
    assert store.incident_for_job("j") is None and store.revisions(incident_id("j")) == []
    assert store.job_progress("j").correlated == -1 and subscriptions(store) == []


def test_the_latest_attempt_s_incident_is_the_job_s_and_history_is_newest_first(store: Both) -> None:
    for n, (job_id, attempt) in enumerate((("a", 0), ("a", 1), ("b", 0))):
        store.record_job(job(job_id, attempt=attempt), T0)
        made = incident(job_id=job_id, attempt=attempt).model_copy(update={"created_at": T0 + timedelta(hours=n)})
        store.save_incident(job_id, always(made))
    latest = store.incident_for_job("a")
    assert latest is not None and latest.attempt == 1
    assert store.incident_for_job("nope") is None and store.incident("nope") is None
    ids = [incident_id("b"), incident_id("a", 1), incident_id("a")]
    assert [i.id for i in store.incidents()] == ids
    assert [i.id for i in store.incidents(limit=1, offset=1)] == ids[1:2]
    assert store.incidents(offset=3) == []


def test_resolving_keeps_the_revision_and_is_told_once(store: Both) -> None:
    store.record_job(job(), T0)
    store.save_incident("j", lambda cur: incident(2))
    seen: list[tuple[str, str | None]] = []

    def hook(tx: NotifyTx, new: Incident, old: Incident | None) -> None:
        seen.append((new.state, old.state if old else None))
    done = store.resolve(incident_id("j"), "fixed the cable", T0 + timedelta(hours=1), hook)
    assert done is not None and done[1]
    found = store.incident(incident_id("j"))
    assert found is not None and (found.state, found.revision, found.changes) == ("resolved", 2, ["fixed the cable"])
    assert found.updated_at == T0 + timedelta(hours=1)
    again = store.resolve(incident_id("j"), "", T0 + timedelta(hours=2), hook)
    assert again is not None and not again[1] and again[0] == found
    assert store.resolve("nope", "", T0) is None
    assert seen == [("resolved", "open")] and len(store.revisions(incident_id("j"))) == 1


def test_a_succeeding_attempt_closes_the_latest_earlier_incident_once(store: Both) -> None:
    store.record_job(job(), T0)
    store.save_incident("j", always(incident(2)))
    later = T0 + timedelta(hours=1)
    seen: list[tuple[str, str | None]] = []

    def hook(tx: NotifyTx, new: Incident, old: Incident | None) -> None:
        seen.append((new.state, old.state if old else None))
    closed = store.close_chain("j", 1, later, hook)
    assert closed is not None and (closed.state, closed.revision, closed.updated_at) == ("resolved", 2, later)
    assert closed.changes == ["Attempt 1 of job j succeeded: resolved by the job's own recovery"]
    assert store.incident(incident_id("j")) == closed and seen == [("resolved", "open")]
    assert store.close_chain("j", 1, later, hook) is None  # a redelivered event: told already
    assert len(store.revisions(incident_id("j"))) == 1 and len(seen) == 1


def test_a_success_after_a_fix_says_the_fix_held_in_a_new_revision(store: Both) -> None:
    store.record_job(job(), T0)
    store.save_incident("j", always(incident()))
    store.resolve(incident_id("j"), "raised the limit", T0)
    held = store.close_chain("j", 2, T0 + timedelta(hours=1))
    assert held is not None and (held.state, held.revision) == ("resolved", 2)
    assert held.changes == ["Attempt 2 of job j succeeded: the fix held"]
    assert [r[0] for r in store.revisions(held.id)] == [1, 2]


def test_a_success_closes_nothing_of_its_own_attempt_or_a_later_one(store: Both) -> None:
    assert store.close_chain("j", 1, T0) is None  # no incident at all
    store.record_job(job(), T0)
    store.save_incident("j", always(incident()))
    assert store.close_chain("j", 0, T0) is None  # the failed attempt itself: its diagnosis stands
    store.record_job(job(attempt=2), T0)
    store.save_incident("j", always(incident(attempt=2)))
    assert store.close_chain("j", 1, T0) is None  # attempt 2 failed after attempt 1's success
    assert store.incident(incident_id("j")) == incident()


def test_fixed_before_finds_a_resolved_root_cause_on_the_same_host_and_gpu(store: Both) -> None:
    for job_id, gpu in (("a", "0000:3b:00"), ("open", None)):
        store.record_job(job(job_id), T0)
        store.save_incident(job_id, always(incident(job_id=job_id, gpu=gpu)))
    store.resolve(incident_id("a"), "reseated", T0)
    found = store.fixed_before("xid.79", "n1", "b", 0)
    assert found is not None and found.id == incident_id("a")
    assert store.fixed_before("xid.79", "n1", "b", 0, gpu="0000:3b:00") == found
    assert store.fixed_before("xid.79", "n1", "b", 0, gpu="0000:5e:00") is None  # another GPU failed
    assert store.fixed_before("xid.79", "n1", "a", 0) is None  # its own attempt is no regression
    assert store.fixed_before("xid.79", "n2", "b", 0) is None
    assert store.fixed_before("xid.48", "n1", "b", 0) is None


def test_a_regression_tells_the_earlier_incident_in_the_same_transaction(store: Both) -> None:
    store.record_job(job("a"), T0)
    store.save_incident("a", lambda cur: incident(job_id="a"))
    store.resolve(incident_id("a"), "reseated", T0)
    store.record_job(job("b"), T0)
    seen: list[tuple[str, int]] = []

    def hook(tx: NotifyTx, new: Incident, old: Incident | None) -> None:
        seen.append((new.job_id, new.revision))

    def told(new: Incident, earlier: Incident) -> Incident:
        return earlier.model_copy(update={"revision": earlier.revision + 1, "regressed_by": new.id,
                                          "updated_at": T0 + timedelta(hours=1), "changes": ["failed again"]})
    store.save_incident("b", lambda cur: incident(job_id="b", regression_of=incident_id("a")), hook,
                        regressed=told)
    earlier = store.incident(incident_id("a"))
    assert earlier is not None and (earlier.revision, earlier.regressed_by) == (2, incident_id("b"))
    assert [r[0] for r in store.revisions(incident_id("a"))] == [1, 2]
    assert seen == [("b", 1), ("a", 2)]
    store.save_incident("b", lambda cur: cur.model_copy(update={"severity": "critical"}) if cur else None, hook,
                        regressed=told)  # already told: not again
    assert seen == [("b", 1), ("a", 2), ("b", 1)]
