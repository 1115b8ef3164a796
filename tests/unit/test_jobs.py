"""When a failed job is correlated, and what a revision announces."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from correlator.jobs import NODE_WAIT, Progress, changes, may_be_complete, readiness
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
    job = _job(hosts=["n1", "n2"], rank_hosts={0: "n1"}, node_logs=False)
    done = [_key(0), _key(host="n2")]
    assert readiness(job, T0, done, done, T0, WAIT).ready


def _dmesg(host: str) -> SourceKey:
    return SourceKey("dmesg", None, host, "dmesg.log")


def test_named_hosts_hold_a_job_for_their_kernel_logs_for_the_node_wait() -> None:
    """The OOM killer and Xids print on the node, not the rank: every rank complete is not the job complete."""
    ranks = [_key(r) for r in range(4)]
    job = _job(world_size=4, hosts=["n1", "n2"])
    early = readiness(job, T0, ranks, ranks, T0 + timedelta(seconds=1), WAIT)
    assert not early.ready and early.due == T0 + NODE_WAIT and "n1, n2" in early.reason
    late = readiness(job, T0, ranks, ranks, T0 + NODE_WAIT, WAIT)
    assert late.ready and "no node log from n1, n2" in late.reason
    both = [*ranks, _dmesg("n1"), SourceKey("syslog", None, "n2", "messages")]
    assert readiness(job, T0, both, both, T0 + timedelta(seconds=1), WAIT).ready


def test_a_node_log_still_arriving_is_not_a_node_log_in() -> None:
    ranks = [_key(r) for r in range(4)]
    job = _job(world_size=4, hosts=["n1"])
    seen = [*ranks, _dmesg("n1")]
    assert not readiness(job, T0, ranks, seen, T0 + timedelta(seconds=1), WAIT).ready


def test_the_producer_says_whether_node_logs_will_come() -> None:
    ranks = [_key(r) for r in range(4)]
    promised = readiness(_job(world_size=4, hosts=["n1"], node_logs=True), T0, ranks, ranks, T0 + NODE_WAIT, WAIT)
    assert not promised.ready and promised.due == T0 + WAIT  # up to group_wait, as for a missing rank
    assert readiness(_job(world_size=4, hosts=["n1"], node_logs=False), T0, ranks, ranks, T0, WAIT).ready
    assert readiness(_job(world_size=4), T0, ranks, ranks, T0, WAIT).ready  # no hosts named: no node to wait on


def test_without_expectations_every_seen_source_must_be_complete() -> None:
    seen = [_key(0), _key(1)]
    assert not readiness(_job(), T0, seen[:1], seen, T0, WAIT).ready
    assert readiness(_job(), T0, seen, seen, T0, WAIT).ready


def _progress(seen: list[SourceKey], ended: list[SourceKey]) -> Progress:
    return Progress(len(set(seen)), len(set(ended)), len({k.rank for k in ended if k.rank is not None}))


def test_counts_rule_out_a_job_too_few_of_whose_sources_have_ended() -> None:
    keys = [_key(r) for r in range(4)]
    assert not may_be_complete(_job(world_size=4), _progress(keys, keys[:3]))
    assert may_be_complete(_job(world_size=4), _progress(keys, keys))
    hosts = _job(hosts=["n1", "n2", "n3"])
    assert not may_be_complete(hosts, _progress(keys, keys[:1]))
    assert not may_be_complete(_job(), _progress(keys, keys[:3]))
    assert may_be_complete(_job(), _progress(keys, keys))


def test_counts_never_rule_out_a_job_readiness_calls_complete() -> None:
    # may_be_complete lets the pipeline skip the full check: it must never say no where readiness says yes.
    rng = random.Random(2026)
    for _ in range(3000):
        world = rng.choice([None, 2, 3, 4])
        pool = [_key(r) for r in range(5)] + [_key(host=h) for h in ("n1", "n2", "n3")]
        seen = rng.sample(pool, rng.randint(0, len(pool)))
        complete = [k for k in seen if rng.random() < 0.7]
        ended = complete + [k for k in seen if k not in complete and rng.random() < 0.5]  # eof, a seq missing
        job = _job(world_size=world,
                   hosts=rng.choice([[], ["n1"], ["n1", "n2"], ["n1", "n2", "n3"]]),
                   rank_hosts={r: rng.choice(["n1", "n2", "n3"]) for r in range(5) if rng.random() < 0.5})
        ready = readiness(job, T0, complete, seen, T0, WAIT)
        if ready.ready:
            assert may_be_complete(job, _progress(seen, ended)), (job, seen, complete)


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
