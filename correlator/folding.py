"""Folding one suspect into another that is the same process or the same event seen from two sides. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from correlator.identity import IdentityMap
from schemas.findings import Role

if TYPE_CHECKING:
    from correlator.scoring import Board


def fold_hosts_into_ranks(board: Board) -> None:
    """Blame that names only a host (a peer address) goes to the rank on that host with a fault of its own."""
    for key, cand in list(board.by_key.items()):
        if not isinstance(key, tuple) or cand.target.host is None:
            continue
        on_host = [c for c in board.by_key.values()
                   if c.target.rank is not None and c.target.host == cand.target.host and c.own_fault]
        if not on_host:
            continue
        heir = max(on_host, key=lambda c: c.score)
        heir.score += cand.score
        heir.own_fault = heir.own_fault or cand.own_fault
        heir.death, heir.exited = heir.death or cand.death, heir.exited or cand.exited
        heir.reasons += [f"its host {cand.target.host}: {r}" for r in cand.reasons]
        heir.support_events += cand.support_events
        heir.own_events += [ev for ev in cand.own_events if ev not in heir.own_events]
        del board.by_key[key]


def named_first(ids: IdentityMap) -> dict[str, set[int]]:
    """Source -> the ranks a launcher's report in it names the first to fail: torchrun's "Root Cause (first
    observed failure)" row, Open MPI's "The first process to do so was: Process name: [[j,1],R]"."""
    out: dict[str, set[int]] = {}
    for rank, _, source, _ in ids.first_failures:
        out.setdefault(source, set()).add(rank)
    for rank, source, _ in ids.first_exited:
        out.setdefault(source, set()).add(rank)
    return out


def fold_job_into_located(board: Board, named_first: Mapping[str, set[int]]) -> None:
    """A line that names no rank or host (slurmstepd's "Detected 1 oom_kill event in StepId=...") and a cause on
    one rank or host that its catalog entry relates to it, of the same category (the kernel's "Out of memory:
    Killed process"), are one event seen from two sides: the one that says where is the suspect. So is the same
    fault printed once without a prefix and once by one rank (a traceback's `CUDA error: X` and that rank's
    watchdog carrying X): the process that printed both is that rank. And a cause printed without a prefix in
    the console of a launcher that names one process the first to fail (mpirun without --tag-output: "The first
    process to do so was: Process name: [[j,1],R]"; torchrun's "Root Cause (first observed failure)" row) is that
    process's: the rank that printed it exited first."""
    job = board.by_key.get(("host", None))
    if job is None or job.target.rank is not None or (said := job.best_event()) is None:
        return
    sig = said.signature
    located, same = [], []
    for cand in board.by_key.values():
        ev = cand.best_event() if cand is not job and cand.own_fault else None
        if ev is not None and ev.signature.category == sig.category and (
                sig.id in ev.signature.related or ev.signature.id in sig.related):
            located.append(cand)
        elif ev is not None and ev.signature.id == sig.id and cand.target.rank is not None:
            same.append(cand)
    if not located and len(same) == 1:
        located = same  # more than one rank printing it: the unprefixed copy is any of theirs
    # A cause printed without a prefix in a launcher's console that names one process the first to fail: the
    # console is that process's (mpirun without --tag-output, torchrun without --tee)
    firsts = named_first.get(said.best.source, set())
    # (not a line a local rank prefixes: a node's worker, and the report may be another node's agent's)
    console = (not located and not same and len(firsts) == 1 and said.role is Role.INITIATING
               and all(f.speaker.local_rank is None for f in said.findings))
    if console:
        located = [c for c in board.by_key.values() if c is not job and c.target.rank in firsts]
    hosts = {c.target.host for c in located}
    if not located or len(hosts) != 1:
        return  # two places with the same kind of fault: the job's line does not say which
    heir = max(located, key=lambda c: c.score)
    heir.score += job.score
    if console:  # the first process's console: the job's lines are its own
        heir.reasons += [f"the first to fail by its launcher's report, in whose console: {r}" for r in job.reasons]
        heir.own_events += [ev for ev in job.own_events if ev not in heir.own_events]
        heir.own_fault = heir.own_fault or job.own_fault
        heir.support_events += job.support_events
    else:
        heir.reasons += [f"the same event without a place: {r}" for r in job.reasons]
        heir.support_events += job.own_events + job.support_events
    del board.by_key[("host", None)]
