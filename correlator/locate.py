"""Which suspect to name, and whether to name a rank, a host or nobody (the whole job). Pure.

- An exit report is how a cause ends (issue 22, pattern 3): a suspect that only exit reports speak for gives way
  to one that printed a line saying why; when nobody did, the diagnosis says so and names what the exit codes
  show, with low confidence.
- When every rank fails the same way (the same cause-like line, its numbers and paths masked, on all or nearly
  all of the job's ranks within a short time), no single rank is the cause: the verdict is job-wide.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Sized
from datetime import timedelta

from correlator.events import Event, Target, when
from correlator.exits import cause_like, exit_report, task_exits
from correlator.identity import IdentityMap
from correlator.lone_reporter import lone_rank
from correlator.members import IMPLICATES_NAMED, ROLE_COLLATERAL, SCOPE_JOB, SCOPE_NODE, SCOPE_RANK
from correlator.scoring import Candidate
from correlator.templates import template
from correlator.versions import odd_version_hosts
from schemas.findings import Finding

# Schedulers report about a step, a pod or a node, never a rank: no rank-0 default for their lines.
REPORTS_ABOUT_STEPS = frozenset({"slurm", "k8s", "ray"})
JOB_WIDE_SHARE = 0.75  # of the job's known ranks failing the same way: a subset (one stage, one node) is not the job
JOB_WIDE_WINDOW = timedelta(minutes=2)  # a shared error strikes every rank at start-up, or at the same step


def _reasoned(cand: Candidate) -> bool:
    """Something besides exit reports speaks for it: a line that says why, a kill or crash, others' lines
    pointing at it, collective progress, error lines of its own."""
    return (cand.death or bool(cand.support_events) or cand.unique is not None
            or any(cause_like(ev) or ev.weight is not None for ev in cand.own_events))


def pick(ranked: list[Candidate]) -> tuple[list[Candidate], list[str], bool]:
    """The ranking with the suspect to name first, notes for the explanation, and whether only exit reports
    speak for that suspect (no line anywhere says why)."""
    top = ranked[0]
    if _reasoned(top) or not (top.exited or any(exit_report(ev) for ev in top.own_events)):
        return ranked, [], False
    for cand in ranked[1:]:
        if any(cause_like(ev) for ev in cand.own_events):
            note = (f"{top.target.label} is named only by exit reports, which say how a process ended, not why: "
                    f"the line that says why is {cand.target.label}'s")
            return [cand, *(c for c in ranked if c is not cand)], [note], False
    return ranked, ["no line in these logs says why it failed, only how processes ended (launcher exit reports): "
                    "this names what the exit codes show"], True


def _same_key(ev: Event) -> tuple[str, str]:
    """What 'the same way' means: the same entry, and for a catch-all entry the same masked text."""
    return ev.signature.id, template(ev.best.text) if ev.signature.generic else ""


def _line_key(f: Finding, ev: Event) -> tuple[str, str]:
    return f.signature, template(f.text) if ev.signature.generic else ""


def job_size(failures: Sequence[Event], ids: IdentityMap, logged: set[int]) -> int:
    """The ranks the job is known to have: NCCL's nranks, and every rank seen reporting, logging or exiting."""
    seen: set[int | None] = set(logged)  # one set, added to: a rank's entry in three was this step's peak
    seen.update(ev.reporter.rank for ev in failures)
    seen.update(e.rank for e in ids.exits)
    seen.update(e.rank for e in task_exits(failures, ids))
    seen.discard(None)
    return max(ids.world_size or 0, len(seen))


def job_wide(root: Event, failures: Sequence[Event], size: int, offsets: Mapping[str | None, timedelta]) -> int:
    """How many processes fail as the root does, when that is (nearly) the whole job and no other process has a
    reason of its own; 0 otherwise."""
    if exit_report(root) or root.signature.implicates is IMPLICATES_NAMED:
        return 0  # (a line naming a rank is about that rank: every rank printing it is no job-wide failure)
    if not cause_like(root):  # victims' lines alike everywhere, and no rank with a line of its own
        reporters = {ev.reporter for ev in failures if ev.signature.id == root.signature.id}
        others = {ev.reporter for ev in failures if ev.role is not ROLE_COLLATERAL} - reporters
        return len(reporters) if len(reporters) >= 3 and not others else 0
    key = _same_key(root)
    same = [ev for ev in failures if not ev.stale and _same_key(ev) == key]
    named = {ev.reporter.rank for ev in same if ev.reporter.rank is not None}
    reporters = {ev.reporter for ev in same}
    for ev in failures:
        # another reason: from a rank that does not fail this way, or anywhere in a log that names no rank
        if cause_like(ev) and _same_key(ev) != key and (ev.reporter not in reporters or not named):
            return 0
    # a log without rank prefixes: each such line is one process's (interleaved tracebacks may share an event)
    count = len(named) if named else sum(1 for ev in same for f in ev.findings if _line_key(f, ev) == key)
    times = sorted(t for ev in same if (t := when(ev, offsets)) is not None)
    if len(times) >= 2 and times[-1] - times[0] > JOB_WIDE_WINDOW:
        return 0
    if count < 2 or count < JOB_WIDE_SHARE * size or (not named and size < 2):
        return 0  # unnamed copies are different processes only when the job's size says there are that many
    return count


def _spread(root: Event, failures: Sequence[Event]) -> tuple[set[Target], set[str | None]]:
    """Reporters (and their hosts) whose own fault is the root's signature."""
    same = [ev for ev in failures if ev.signature.id == root.signature.id]
    return {ev.reporter for ev in same}, {ev.reporter.host for ev in same}


STORE_TAGS = frozenset({"store", "tcpstore"})


def _store_lost_by_others(host: str, failures: Sequence[Event], ids: IdentityMap) -> bool:
    """`host` ran rank 0 and ranks or agents of other hosts failed a store operation: torchrun's agent of group
    rank 0 hosts the c10d rendezvous and sets MASTER_ADDR to its own host (elastic/agent/server/api.py,
    _set_master_addr_port), where env:// serves the TCPStore from rank 0. Where no line places rank 0, the host
    the workers' TCPStore clients name (`remote=[host]:port`) is its host: the process group's store is served by
    rank 0 (torch/distributed/rendezvous.py _create_c10d_store: `start_daemon = rank == 0`), or by the agent store
    at MASTER_ADDR, group rank 0's host."""
    if ids.host_of_rank.get(0) != host and (0 in ids.host_of_rank or not _named_store_host(host, ids)):
        return False
    # a line placed nowhere counts: the host that served the store is gone, its agent cannot have printed it
    return any(ev.reporter.host != host and STORE_TAGS & set(ev.signature.tags) for ev in failures)


def locate(cand: Candidate, root: Event, failures: Sequence[Event], ids: IdentityMap,
           sources: Sized, offsets: Mapping[str | None, timedelta],
           logged: set[int]) -> tuple[int | None, str | None, list[str]]:
    """The rank and host to name, or None where the fault belongs to a node or to the whole job."""
    notes: list[str] = []
    rank, host = cand.target.rank, cand.target.host
    if rank is None and host is None and root.weight is not None:  # derived from several lines (derived.py)
        return None, None, ["derived from how lines relate, not from one rank's line: the fault is the job's, "
                            "no single rank or host is named"]
    scope = root.signature.scope
    reporters, hosts = _spread(root, failures)
    all_hosts = {ev.reporter.host for ev in failures}
    if root not in cand.own_events and (host is not None or rank is not None):
        notes.append(f"{cand.target.label} printed no cause of its own here: the others' lines point at it")
        if rank is None and host is not None and _store_lost_by_others(host, failures, ids):
            notes.append(f"{host} ran rank 0, whose host serves the job's store (torchrun's rendezvous, env:// "
                         "TCPStore), and the others lost that store: rank 0's loss is the first they felt")
            rank = 0
        return rank, host, notes
    if scope is SCOPE_JOB and not cand.own_events and host is not None:
        notes.append(f"the others' failures point at {host}: its configuration differs from theirs")
        return None, host, notes
    if scope is SCOPE_JOB and len(odd := odd_version_hosts(failures, ids)) == 1:
        notes.append(f"{next(iter(odd))} runs an NCCL release no other host runs: its image differs")
        return None, next(iter(odd)), notes
    if scope is SCOPE_JOB and rank is not None and lone_rank(root, failures, rank):
        notes.append(f"only rank {rank} printed it, the other ranks failed otherwise: it showed where rank {rank} runs")
        return rank, host if host is not None else ids.host_of_rank.get(rank), notes
    if scope is SCOPE_JOB:
        # a line that names no host (srun's step report, a launcher's summary) is no host without the fault
        if (len(hosts) >= 2 and hosts >= all_hosts - {None}) or len(sources) == 1 or hosts == all_hosts:
            notes.append("this is a configuration every rank shares, so no single rank is named")
            return None, None, notes
        if len(hosts) == 1:
            notes.append("only this host shows it: its configuration differs from the others'")
            return None, next(iter(hosts)), notes
    if scope is SCOPE_NODE:
        if len({h for h in hosts if h}) >= 2:
            notes.append(f"{len(hosts)} hosts report it: a platform setting shared by the nodes, not one rank")
            return None, None, notes
        alike = node_wide(host, root, failures)
        # the node itself (its kernel, its agent re-printing the worker's error) is not another rank of it
        ranked = {r.rank for r in reporters if r.rank is not None}
        if (len(ranked) > 1 or len(alike) > 1) and rank is not None:
            notes.append(f"{max(len(ranked), len(alike))} ranks of the node report {root.signature.category.value} "
                         "faults of the node: a node-level fault")
            rank = None
    if scope is SCOPE_RANK and (count := job_wide(root, failures, job_size(failures, ids, logged), offsets)):
        notes.append(f"{count} processes, the whole job as far as these logs show, fail the same way: no single "
                     "rank is the cause")
        if len(hosts) == 1 and None not in hosts:  # all on one host: what they share may be the host's
            return None, next(iter(hosts)), notes
        return None, None, notes
    # (a victim's line says nothing about who started it: no default for it)
    if (rank is None and host is None and not _ranks_anywhere(ids, failures) and len(sources) == 1
            and root.signature.id.split(".")[0] not in REPORTS_ABOUT_STEPS and root.role is not ROLE_COLLATERAL):
        notes.append("no rank is named anywhere in this log; a log without rank prefixes is rank 0's")
        rank = 0
    if rank is None and host is not None and "node_failure" in root.signature.tags and ids.host_of_rank.get(0) == host:
        # torchrun's agent of group rank 0 sets MASTER_ADDR to its own host (elastic/agent/server/api.py,
        # _set_master_addr_port) and env:// serves the store from rank 0: the others lost the node as the store's
        notes.append(f"{host} ran rank 0, whose process serves the job's TCPStore: its loss is the first the others "
                     "felt, and every rank of the node went with it")
        rank = 0
    if rank is None and (local := root.best.speaker.local_rank) is not None:
        notes.append(f"local rank {local}" + (f" of {host}" if host else "") + " printed it; these logs do not "
                     f"say its global rank (torchrun's [default{local}] prefix numbers a node's own workers)")
    return rank, host, notes


def _named_store_host(host: str, ids: IdentityMap) -> bool:
    """Whether the TCPStore clients' `remote=` names ``host`` (under any of its names)."""
    return any((ids.host_of(named) or named) == host for named, _ in ids.store_hosts)


def node_wide(host: str | None, root: Event, failures: Sequence[Event]) -> set[int]:
    """Ranks of the host reporting faults of the node of the root's kind (every rank seeing its NIC fail)."""
    return {ev.reporter.rank for ev in failures if ev.reporter.host == host and ev.reporter.rank is not None
            and ev.role is not ROLE_COLLATERAL and ev.signature.scope is SCOPE_NODE
            and ev.signature.category == root.signature.category}


def _ranks_anywhere(ids: IdentityMap, failures: Sequence[Event]) -> bool:
    """Whether the logs number their ranks at all (a local rank counts: its global rank is unknown, not 0)."""
    return bool(ids.by_pid or ids.host_of_rank or any(ev.reporter.rank is not None
                                                      or ev.best.speaker.local_rank is not None for ev in failures))
