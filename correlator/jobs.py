"""When a failed job is ready to correlate, and what a new diagnosis changes in its incident. Pure; time is an
argument.

A job is correlated once its failure event has arrived and either every expected source is complete (eof and no
gap in seq) or group_wait has passed since the failure event — Alertmanager's group_wait, for the same reason:
the shard that names the cause is often the last to arrive. Evidence that arrives later revises the incident.

When the event names the job's hosts, each host's kernel or system log is expected too: an OOM kill or an Xid is
printed there, not by the rank it ended, and a job correlated on its ranks alone posts the consequence first. The
epilog that ships a node's dmesg runs as the job ends, so an unset `node_logs` waits NODE_WAIT past the failure
event for them (a collector that never ships any costs a job that much, once); `node_logs: true` waits up to
group_wait, `false` not at all.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from correlator.shards import SourceKey
from schemas.diagnosis import Diagnosis
from schemas.wire import JobEvent

FAILED_STATES = frozenset({"failed", "timeout"})
NODE_STREAMS = frozenset({"dmesg", "syslog"})
NODE_WAIT = timedelta(seconds=10)


@dataclass(frozen=True)
class Readiness:
    ready: bool
    due: datetime | None  # when to look again if not ready; None when nothing will make it ready
    reason: str


@dataclass(frozen=True)
class Progress:
    """What a job's shards add up to so far, as the store counts them without reading them."""
    sources: int  # distinct sources with any shard
    ended: int  # distinct sources whose eof shard arrived (a seq before it may still be missing)
    ended_ranks: int  # distinct ranks among those


@dataclass(frozen=True)
class Expected:
    """What of a job event the counts are held against: kept by the store beside the counts, so that checking
    them after every shard does not read the event (whose rank_hosts may name thousands of ranks)."""
    world_size: int | None
    hosts: int  # distinct hosts the event names

    @classmethod
    def of(cls, job: JobEvent) -> Expected:
        return cls(job.world_size, len(set(job.hosts)))


def may_be_complete(job: JobEvent | Expected | None, progress: Progress) -> bool:
    """False when, by the counts alone, no rule of `readiness` about expected sources can hold yet: reading every
    shard to check would be wasted. True only permits that check (an ended source may still miss a seq)."""
    if job is None:
        return True
    expected = job if isinstance(job, Expected) else Expected.of(job)
    if expected.world_size is not None and progress.ended_ranks >= expected.world_size:
        return True
    if expected.hosts and 2 * progress.ended >= expected.hosts:  # a source names at most two hosts
        return True
    return expected.world_size is None and not expected.hosts and 0 < progress.sources <= progress.ended


def readiness(job: JobEvent | None, failed_at: datetime | None, complete: Iterable[SourceKey],
              seen: Iterable[SourceKey], now: datetime, group_wait: timedelta) -> Readiness:
    if job is None or job.state not in FAILED_STATES or failed_at is None:
        return Readiness(False, None, "no failure event yet")
    complete_set, seen_set = set(complete), set(seen)
    if _expected_complete(job, complete_set, seen_set):
        missing = _node_logs_missing(job, complete_set)
        if not missing:
            return Readiness(True, now, "every expected source is complete")
        node_deadline = failed_at + (group_wait if job.node_logs else min(NODE_WAIT, group_wait))
        if now >= node_deadline:
            return Readiness(True, now, f"every rank is complete; no node log from {_hosts(missing)} in time")
        return Readiness(False, node_deadline, f"waiting for the node logs of {_hosts(missing)}")
    deadline = failed_at + group_wait
    if now >= deadline:
        return Readiness(True, now, f"group_wait of {group_wait.total_seconds():g}s passed")
    return Readiness(False, deadline, "waiting for shards")


def _expected_complete(job: JobEvent, complete: set[SourceKey], seen: set[SourceKey]) -> bool:
    if job.world_size is not None:
        # every rank 0..world_size-1 complete, counted over what arrived (never a set the size of the claim)
        ranks = {k.rank for k in complete if k.rank is not None and 0 <= k.rank < job.world_size}
        if len(ranks) >= job.world_size:
            return True
    if job.hosts:
        hosts = {k.host for k in complete if k.host} | {job.rank_hosts.get(k.rank) for k in complete
                                                          if k.rank is not None}
        if hosts >= set(job.hosts):
            return True
    if job.world_size is None and not job.hosts:
        return bool(seen) and seen <= complete
    return False


def _node_logs_missing(job: JobEvent, complete: set[SourceKey]) -> set[str]:
    """The named hosts whose kernel or system log has not ended yet; none when the producer says none will come."""
    if job.node_logs is False or not job.hosts:
        return set()
    have = {k.host for k in complete if k.rank is None and k.stream in NODE_STREAMS}
    return set(job.hosts) - have


def _hosts(hosts: set[str]) -> str:
    named = sorted(hosts)
    return ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")


def _who(rank: int | None, host: str | None) -> str:
    if rank is not None and host:
        return f"rank {rank} on {host}"
    if rank is not None:
        return f"rank {rank}"
    return host or "the whole job"


def changes(previous: Diagnosis | None, current: Diagnosis) -> list[str]:
    """What a reader of the first post needs to know about this revision; empty when nothing material changed."""
    if previous is None:
        return []
    out: list[str] = []
    old, new = previous.root_cause, current.root_cause
    if (old is None) != (new is None) or previous.verdict != current.verdict:
        out.append(f"verdict {previous.verdict} → {current.verdict}")
    if old and new:
        if old.signature != new.signature or (old.rank, old.host) != (new.rank, new.host):
            out.append(f"root cause {old.signature} ({_who(old.rank, old.host)}) → "
                       f"{new.signature} ({_who(new.rank, new.host)})")
        elif abs(old.confidence - new.confidence) >= 0.05:
            out.append(f"confidence {old.confidence:.0%} → {new.confidence:.0%}")
        fresh = [e for e in new.evidence if e not in old.evidence]
        if fresh and out:
            out.append(f"new evidence: {fresh[0].source}:{fresh[0].line}")
    before = {g.signature: g.count for g in previous.collateral}
    after = {g.signature: g.count for g in current.collateral}
    grown = sum(after.values()) - sum(before.values())
    if set(before) != set(after) or (grown and out):
        out.append(f"collateral {sum(before.values())} → {sum(after.values())} rank(s)/host(s)")
    return out
