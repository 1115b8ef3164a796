"""The pipeline's decisions, with a manual clock: when it correlates, what a late shard does, redelivery."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from correlator.jobs import NODE_WAIT
from pipeline.service import Pipeline
from scan.engine import default_matcher
from schemas.clock import ManualClock
from schemas.incident import incident_id
from store.incidents import Store
from tests.pipeline.helpers import EXAMPLE, RecordingScheduler, failed_job, shards_of


@pytest.fixture
def parts(sqlite_url: str) -> Iterator[tuple[Pipeline, ManualClock, RecordingScheduler]]:
    store = Store.open(sqlite_url)
    clock, scheduler = ManualClock(), RecordingScheduler()
    yield Pipeline(store, default_matcher(), scheduler, clock), clock, scheduler
    store.close()


def test_correlates_as_soon_as_every_rank_has_sent_eof(parts) -> None:  # type: ignore[no-untyped-def]
    pipe, clock, scheduler = parts
    pipe.accept_job(failed_job("j"))
    assert scheduler.calls == [("j", clock.now + pipe.group_wait)]  # nothing yet: wait for shards
    for shard in shards_of("j", EXAMPLE):
        pipe.accept_shard(shard)
    assert scheduler.calls[-1] == ("j", clock.now)  # the last eof made the job ready now
    incident = pipe.correlate("j")
    assert incident is not None and incident.id == incident_id("j")
    assert (incident.signature, incident.rank, incident.host) == ("host.oom_killer", 37, "node004")
    assert incident.team == "llm" and incident.cluster == "c1" and incident.severity == "critical"


def test_a_missing_rank_holds_the_incident_until_group_wait(parts) -> None:  # type: ignore[no-untyped-def]
    pipe, clock, scheduler = parts
    pipe.accept_job(failed_job("j"))
    for shard in shards_of("j", EXAMPLE):
        if shard.rank != 12:
            pipe.accept_shard(shard)
    assert all(at == clock.now + pipe.group_wait for _, at in scheduler.calls)
    clock.advance(10)
    assert pipe.correlate("j") is None  # too early: rank 12 may still be on its way
    clock.advance(21)
    incident = pipe.correlate("j")
    assert incident is not None and incident.rank == 37


def test_late_evidence_revises_the_incident_and_says_what_changed(parts) -> None:  # type: ignore[no-untyped-def]
    pipe, clock, scheduler = parts
    shards = shards_of("j", EXAMPLE)
    dmesg = [s for s in shards if s.stream == "dmesg"]
    assert dmesg, "the example has a node's dmesg"
    pipe.accept_job(failed_job("j"))
    for shard in shards:
        if shard.stream != "dmesg":
            pipe.accept_shard(shard)
    first = pipe.correlate("j")
    assert first is not None and first.revision == 1 and first.signature != "host.oom_killer"
    clock.advance(60)
    for shard in dmesg:
        pipe.accept_shard(shard)
    assert scheduler.calls[-1] == ("j", clock.now + pipe.revise_wait)
    clock.advance(10)
    second = pipe.correlate("j")
    assert second is not None and second.id == first.id and second.revision == 2
    assert second.signature == "host.oom_killer"
    assert any("host.oom_killer" in line for line in second.changes)
    assert [r[0] for r in pipe.store.revisions(first.id)] == [1, 2]


def test_named_hosts_wait_for_the_node_log_that_names_the_cause(parts) -> None:  # type: ignore[no-untyped-def]
    """The OOM kill is in node004's dmesg, shipped a few seconds after the ranks' logs: the first incident waits
    for it (the job event names the hosts) and names the OOM kill, not the ranks' consequences."""
    pipe, clock, scheduler = parts
    shards = shards_of("j", EXAMPLE)
    hosts = sorted({s.host for s in shards if s.host} | {f"node{i:03d}" for i in range(8)})
    pipe.accept_job(failed_job("j", hosts=hosts))
    for shard in shards:
        if shard.stream != "dmesg":
            pipe.accept_shard(shard)
    assert scheduler.calls[-1] == ("j", clock.now + NODE_WAIT)  # every rank in, the nodes' kernel logs not
    assert pipe.correlate("j") is None
    clock.advance(3)
    for shard in shards:
        if shard.stream == "dmesg":
            pipe.accept_shard(shard)
    clock.advance(7)
    first = pipe.correlate("j")
    assert first is not None and first.revision == 1 and first.signature == "host.oom_killer"


def test_redelivery_changes_nothing(parts) -> None:  # type: ignore[no-untyped-def]
    pipe, clock, _ = parts
    shards = shards_of("j", EXAMPLE)
    pipe.accept_job(failed_job("j"))
    for shard in shards:
        assert pipe.accept_shard(shard) is True
    first = pipe.correlate("j")
    assert first is not None
    assert pipe.accept_shard(shards[5]) is False
    pipe.accept_job(failed_job("j"))
    clock.advance(30)
    assert pipe.correlate("j") is None  # the same evidence: no new revision, nothing to post
    again = pipe.store.incident_for_job("j")
    assert again is not None and again.model_dump(mode="json") == first.model_dump(mode="json")


def test_shards_before_the_failure_event_wait_for_it(parts) -> None:  # type: ignore[no-untyped-def]
    pipe, clock, scheduler = parts
    for shard in shards_of("j", EXAMPLE):
        pipe.accept_shard(shard)
    assert scheduler.calls == [] and pipe.correlate("j") is None
    pipe.accept_job(failed_job("j"))
    assert scheduler.calls == [("j", clock.now)]
    assert pipe.correlate("j") is not None


def test_a_succeeded_job_gets_no_incident(parts) -> None:  # type: ignore[no-untyped-def]
    pipe, clock, scheduler = parts
    pipe.accept_job(failed_job("j", state="succeeded"))
    for shard in shards_of("j", EXAMPLE):
        pipe.accept_shard(shard)
    clock.advance(3600)
    assert pipe.correlate("j") is None and scheduler.calls == []


def test_a_countdown_that_fires_early_is_scheduled_again(parts) -> None:  # type: ignore[no-untyped-def]
    pipe, clock, scheduler = parts
    pipe.accept_job(failed_job("j"))
    for shard in shards_of("j", EXAMPLE)[:10]:
        pipe.accept_shard(shard)
    due = clock.now + pipe.group_wait
    clock.now = due - timedelta(milliseconds=3)  # timers are not exact
    assert pipe.correlate("j") is None
    assert scheduler.calls[-1] == ("j", due)
    clock.now = due
    assert pipe.correlate("j") is not None


def test_exit_codes_in_the_job_event_name_a_silent_rank(parts) -> None:  # type: ignore[no-untyped-def]
    # Rank 37 was SIGKILLed and printed nothing; its node's kernel log never arrived. Only the scheduler knows.
    pipe, clock, _ = parts
    codes = {str(r): -15 for r in range(64)} | {"37": -9}
    pipe.accept_job(failed_job("j", exit_codes=codes))
    for shard in shards_of("j", EXAMPLE):
        if shard.stream != "dmesg":
            pipe.accept_shard(shard)
    clock.advance(31)
    incident = pipe.correlate("j")
    assert incident is not None and incident.rank == 37


def test_a_gap_filled_last_makes_the_job_ready_when_it_arrives(parts) -> None:  # type: ignore[no-untyped-def]
    # The job's last missing piece is a middle shard of a source whose eof came before it: the counts say the job
    # may be complete already, so that shard must still trigger the full check.
    pipe, clock, scheduler = parts
    shards = shards_of("j", EXAMPLE, chunk=4 * 1024)
    middle = next(s for s in shards if s.seq == 1 and s.rank is not None)
    pipe.accept_job(failed_job("j"))
    for shard in shards:
        if shard is not middle:
            pipe.accept_shard(shard)
    assert scheduler.calls[-1] == ("j", clock.now + pipe.group_wait)  # one rank still has a hole
    pipe.accept_shard(middle)
    assert scheduler.calls[-1] == ("j", clock.now)


def test_a_spare_correlation_with_nothing_new_reads_no_shard(parts, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """group_wait's timer still fires after completion correlated the job: with no shard or event since, it must
    not read and diagnose the whole job again (a second full correlation per job); a later shard still revises."""
    pipe, clock, _ = parts
    shards = shards_of("j", EXAMPLE)
    dmesg = [s for s in shards if s.stream == "dmesg"]
    pipe.accept_job(failed_job("j"))
    for shard in shards:
        if shard.stream != "dmesg":
            pipe.accept_shard(shard)
    first = pipe.correlate("j")
    assert first is not None
    reads: list[str] = []
    original = pipe.store.job
    monkeypatch.setattr(pipe.store, "job", lambda job_id, scans=True, listed=True: reads.append(job_id)
                        or original(job_id, scans, listed))
    clock.advance(30)
    assert pipe.correlate("j") is None and reads == []  # group_wait's timer: nothing new since
    for shard in dmesg:
        pipe.accept_shard(shard)
    clock.advance(10)
    second = pipe.correlate("j")
    assert reads == ["j"] and second is not None and second.revision == 2


def test_shards_taken_together_decide_as_one_by_one(parts) -> None:  # type: ignore[no-untyped-def]
    """The embedded queue hands its waiting shards over together: the job is found complete at the batch that
    completes it (not at group_wait), the incident is the one-by-one one, and a redelivered batch is not fresh."""
    pipe, clock, scheduler = parts
    shards = shards_of("j", EXAMPLE)
    pipe.accept_job(failed_job("j"))
    assert pipe.accept_shards(shards[:-3]) == [True] * (len(shards) - 3)
    assert scheduler.calls[-1] == ("j", clock.now + pipe.group_wait)  # not complete yet
    assert pipe.accept_shards([*shards[-3:], shards[0]]) == [True, True, True, False]
    assert scheduler.calls[-1] == ("j", clock.now)
    batched = pipe.correlate("j")
    pipe.accept_job(failed_job("k"))
    for shard in shards_of("k", EXAMPLE):
        pipe.accept_shard(shard)
    single = pipe.correlate("k")
    assert batched is not None and single is not None
    assert batched.diagnosis.model_dump(mode="json") == single.diagnosis.model_dump(mode="json")


def test_the_scans_kept_in_process_merge_as_the_stored_ones_read_back(parts) -> None:  # type: ignore[no-untyped-def]
    """A correlation in the process that stored every shard merges the scans it kept instead of reading their
    JSON back: the merged sources (line numbers shifted, tracebacks joined across cuts, read order) and so the
    diagnosis must be the same as from the store, and a process that kept only some reads them all back."""
    from correlator.diagnose import diagnose
    from correlator.reading import SourceResult
    from correlator.shards import merge

    pipe, _, _ = parts
    shards = shards_of("j", EXAMPLE, chunk=8 * 1024)  # sources cut in several shards
    pipe.accept_job(failed_job("j"))
    pipe.accept_shards(shards[:40])
    for shard in shards[40:]:
        pipe.accept_shard(shard)
    kept = pipe._view("j")
    assert all(isinstance(s.scanned, SourceResult) for s in kept.shards)
    read_back = merge(pipe.store.job("j").shards)
    for _ in range(2):  # merging the kept scans again (a revision) gives the same again
        assert merge(kept.shards) == read_back
    catalog = pipe.matcher.catalog
    assert diagnose(merge(kept.shards), catalog).model_dump(mode="json") == \
        diagnose(read_back, catalog).model_dump(mode="json")
    pipe.recent = type(pipe.recent)(max_shards=len(shards) - 1)  # the oldest dropped: read back instead
    pipe.accept_shard(shards[0])  # a redelivery is not kept
    assert pipe.recent.shards("j", pipe.store.job("j", listed=False).stored) is None
    assert all(not isinstance(s.scanned, SourceResult) for s in pipe._view("j").shards)


def test_the_incident_is_the_cli_s_diagnosis_kept_in_one_worker_or_read_back_from_two(  # type: ignore[no-untyped-def]
        parts, monkeypatch) -> None:
    """A worker that stored every shard of a job correlates on the scans it kept, counting the stored shards
    instead of listing them; a worker that stored all but one (another worker stored that one) reads the job
    back. Both incidents are `diagnose DIR`'s diagnosis, field for field."""
    from scan.engine import diagnose_sources
    from sources.files import expand

    pipe, clock, _ = parts
    other = Pipeline(pipe.store, pipe.matcher, RecordingScheduler(), clock)  # a second worker, the same store
    reads: list[tuple[str, bool]] = []
    original = pipe.store.job
    monkeypatch.setattr(pipe.store, "job", lambda job_id, scans=True, listed=True: reads.append((job_id, listed))
                        or original(job_id, scans, listed))
    cli = diagnose_sources(pipe.matcher, expand([str(EXAMPLE)]), clock.now.year).model_dump(mode="json")
    for job_id in ("kept", "split"):
        shards = shards_of(job_id, EXAMPLE, chunk=8 * 1024)
        pipe.accept_job(failed_job(job_id))
        pipe.accept_shards(shards[:-1])
        (other if job_id == "split" else pipe).accept_shards(shards[-1:])
        incident = pipe.correlate(job_id)
        assert incident is not None and incident.diagnosis.model_dump(mode="json") == cli
    assert reads == [("kept", False), ("split", False), ("split", True)]


def test_merging_and_diagnosing_kept_scans_run_without_the_collector_and_make_no_cycles(  # type: ignore[no-untyped-def]
        parts, monkeypatch) -> None:
    """A correlation holds the cyclic collector off while it merges and diagnoses (a full collection walked every
    scan the worker kept), and turns it on again; that is safe only while those make no reference cycles."""
    import gc

    import pipeline.service as service
    from correlator.shards import merge

    pipe, _, _ = parts
    shards = shards_of("j", EXAMPLE, chunk=8 * 1024)
    pipe.accept_job(failed_job("j"))
    pipe.accept_shards(shards)
    seen: list[bool] = []
    real = service.diagnose
    monkeypatch.setattr(service, "diagnose", lambda *a, **k: seen.append(gc.isenabled()) or real(*a, **k))
    was = gc.isenabled()  # an in-process CLI test before this one may have turned it off for good (memtune)
    gc.enable()
    try:
        assert pipe.correlate("j") is not None
        assert seen == [False] and gc.isenabled()
        kept = pipe._view("j").shards
        gc.collect()
        gc.disable()
        real(merge(kept), pipe.matcher.catalog)
        assert gc.collect() == 0
    finally:
        (gc.enable if was else gc.disable)()
