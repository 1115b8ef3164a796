"""A host that runs one rank: every line of the host is that rank's. Pure.

A pod's log names the pod (correlator.speakers.who_from_path), a node's kernel log names the node, and neither
prints a rank; a rank's NCCL lines number it. Where the logs say that a host runs a single rank, the two are one:
the pod's traceback printed with no prefix, the OOM killer's line, an Xid, a pod's OOMKilled status are that
rank's. NCCL >= 2.19 counts a communicator's processes on each node (src/init.cc, "comm %p rank %d nRanks %d
nNodes %d localRanks %d localRank %d MNNVL %d"): localRanks 1 in the job's largest communicator is one rank on
that node. Without that line, a job whose every rank is on a host of its own (as many hosts as ranks, each
numbering one; where nothing prints the job's size, ranks 0..n-1 each placed on a host of its own) says the same.

On Kubernetes the kernel log names the node, not the pod: `kubectl describe pod` prints the pod's `Name:` and the
`Node:` it was scheduled on (name/IP). A node on which exactly one of the job's pods ran, that pod running one
rank, speaks for that rank too: its lines are the pod's (the name the job's identity knows the rank by), so the
kernel's line and the pod's exit code are one suspect, not two.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

from correlator.identity import IdentityMap
from correlator.kept import ContextRecord
from schemas.findings import Finding

OneRank = dict[str, tuple[int, str]]  # a host's name -> its one rank, and the rank's host as the identity names it


def one_rank_hosts(ids: IdentityMap, of_kind: Mapping[str, list[ContextRecord]]) -> OneRank:
    """host -> its one rank (and that rank's host), for the hosts the logs say run one rank each."""
    per_host = Counter(ids.host_of_rank.values())
    rank_of = {host: (rank, host) for rank, host in ids.host_of_rank.items() if per_host[host] == 1}
    # the job's size, or, where nothing prints it, ranks 0..n-1 all placed: a numbering with no hole
    world = ids.world_size or (len(ids.host_of_rank) if max(ids.host_of_rank, default=-1) + 1 == len(
        ids.host_of_rank) else None)
    if world and world > 1 and len(ids.host_of_rank) == world and len(per_host) == world:
        return _with_nodes(rank_of, of_kind)
    counted: dict[str, int] = {}  # host -> localRanks of its largest communicator's init line
    largest: dict[str, int] = {}
    for rec in of_kind.get("nccl_nodes", ()):
        host, fields = rec.who.host, rec.fields
        if host is None or "local_ranks" not in fields:
            continue
        nranks = int(fields["nranks"])
        if nranks >= largest.get(host, 0):
            largest[host], counted[host] = nranks, int(fields["local_ranks"])
    return _with_nodes({host: rank for host, rank in rank_of.items() if counted.get(host) == 1}, of_kind)


def _with_nodes(rank_of: OneRank, of_kind: Mapping[str, list[ContextRecord]]) -> OneRank:
    """`rank_of` and each node that ran exactly one of the job's pods, that pod being in `rank_of`."""
    pod_of = {rec.source: str(rec.fields["host"]) for rec in of_kind.get("k8s_pod", ())}
    pods_on: dict[str, set[str]] = {}
    for rec in of_kind.get("k8s_node", ()):
        if (pod := pod_of.get(rec.source)) is not None:
            pods_on.setdefault(str(rec.fields["host"]), set()).add(pod)
    nodes = {node: rank_of[pod] for node, (pod, *more) in ((n, sorted(p)) for n, p in pods_on.items())
             if not more and pod in rank_of and node not in rank_of}
    return rank_of | nodes if nodes else rank_of


def on_one_rank_hosts(findings: list[Finding], context: list[ContextRecord], hosts: OneRank
                      ) -> tuple[list[Finding], list[ContextRecord]] | None:
    """The findings and records of ``hosts`` that name no rank, under the host's one rank; None if none. A line
    naming no host either (a traceback without a prefix) is its file's host's, where every line of the file that
    names a host names that one (a pod's own log)."""
    if not hosts:
        return None
    named: dict[str, set[str]] = {}
    for source, host in (*((f.source, f.speaker.host) for f in findings), *((r.source, r.who.host) for r in context)):
        if host is not None:
            named.setdefault(source, set()).add(host)
    host_of_source = {source: next(iter(h)) for source, h in named.items() if len(h) == 1 and next(iter(h)) in hosts}

    def placed(rank: int | None, host: str | None, local: int | None, source: str) -> str | None:
        if rank is not None or local:
            return None
        where = host if host is not None else host_of_source.get(source)
        return where if where in hosts else None

    out_f = [f if (where := placed(f.speaker.rank, f.speaker.host, f.speaker.local_rank, f.source)) is None
             else replace(f, speaker=replace(f.speaker, rank=hosts[where][0], host=hosts[where][1])) for f in findings]
    out_c = [rec if (where := placed(rec.who.rank, rec.who.host, rec.who.local_rank, rec.source)) is None
             else rec._replace(who=rec.who._replace(rank=hosts[where][0], host=hosts[where][1])) for rec in context]
    changed = any(a is not b for a, b in zip(out_f, findings, strict=True)) or any(
        a is not b for a, b in zip(out_c, context, strict=True))
    return (out_f, out_c) if changed else None


def fill_one_rank_exits(ids: IdentityMap, hosts: OneRank) -> None:
    """An exit reported for a host (a pod's container status) is its one rank's."""
    for rec in ids.exits:
        if rec.rank is None and rec.local_rank is None and rec.host is not None and rec.host in hosts:
            rec.rank = hosts[rec.host][0]
