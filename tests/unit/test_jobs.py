"""When a failed job is correlated, and what a revision announces."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from correlator.jobs import changes, readiness
from correlator.shards import SourceKey
from schemas.diagnosis import CollateralGroup, Diagnosis, Evidence, RootCause
from schemas.wire import JobEvent

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
WAIT = timedelta(seconds=30)


def _key(rank: int | None = None, host: str | None = None) -> SourceKey:
    return SourceKey("stdout", rank, host, f"rank{rank}" if rank is not None else f"{host}")


def _job(**kw: object) -> JobEvent:
    return JobEvent.model_validate({"job_id": "j", "state": "failed", **kw})


def test_not_failed_is_never_ready() -> None:
    r = readiness(_job(state="succeeded"), T0, [_key(0)], [_key(0)], T0, WAIT)
    assert not r.ready and r.due is None


def test_ready_when_every_rank_is_complete() -> None:
    keys = [_key(r) for r in range(4)]
    assert readiness(_job(world_size=4), T0, keys, keys, T0, WAIT).ready


def test_waits_for_missing_rank_until_group_wait() -> None:
    keys = [_key(r) for r in range(3)]
    early = readiness(_job(world_size=4), T0, keys, keys, T0 + timedelta(seconds=5), WAIT)
    assert not early.ready and early.due == T0 + WAIT
    late = readiness(_job(world_size=4), T0, keys, keys, T0 + WAIT, WAIT)
    assert late.ready and "group_wait" in late.reason


def test_hosts_complete_counts_ranks_through_the_rank_host_map() -> None:
    job = _job(hosts=["n1", "n2"], rank_hosts={0: "n1"})
    done = [_key(0), _key(host="n2")]
    assert readiness(job, T0, done, done, T0, WAIT).ready


def test_without_expectations_every_seen_source_must_be_complete() -> None:
    seen = [_key(0), _key(1)]
    assert not readiness(_job(), T0, seen[:1], seen, T0, WAIT).ready
    assert readiness(_job(), T0, seen, seen, T0, WAIT).ready


def _diag(sig: str, rank: int, conf: float = 0.8, collateral: int = 3, line: int = 1) -> Diagnosis:
    return Diagnosis(verdict="diagnosed",
                     root_cause=RootCause(signature=sig, title=sig, category="x", rank=rank, confidence=conf,
                                          evidence=[Evidence(source=f"rank{rank}.log", line=line, text="t")]),
                     collateral=[CollateralGroup(signature="pytorch.c10d.watchdog_timeout", count=collateral)])


def test_changes_names_a_new_root_cause_and_its_evidence() -> None:
    what = changes(_diag("pytorch.c10d.watchdog_timeout", 0), _diag("host.oom_killer", 37, line=9))
    assert what[0] == ("root cause pytorch.c10d.watchdog_timeout (rank 0) → host.oom_killer (rank 37)")
    assert "new evidence: rank37.log:9" in what


def test_more_collateral_alone_is_not_a_revision() -> None:
    assert changes(_diag("xid.79", 3, collateral=3), _diag("xid.79", 3, collateral=60)) == []


def test_confidence_moves_are_reported_only_when_material() -> None:
    assert changes(_diag("xid.79", 3, 0.60), _diag("xid.79", 3, 0.62)) == []
    assert changes(_diag("xid.79", 3, 0.60), _diag("xid.79", 3, 0.90)) == ["confidence 60% → 90%"]
