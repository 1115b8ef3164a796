"""From a local rank to the global one. Pure.

torchrun's own line prefix, "[default3]:", is the role's name and the LOCAL rank of the worker on its node
(torch/distributed/elastic/multiprocessing/tail_log.py: header=f"[{self._name}{local_rank}]:"); rank 3 of node 1
in a job of 8 per node is global rank 11. A local rank becomes a global one only where the logs say so:
- a line that names both (torchrun's "[default3]:" before c10's "[rank11]:", or before c10d's "[Rank 11]");
- a process NCCL's init line numbers ("comm 0x... rank 11 nranks 16 cudaDev 3", by host and pid) that prints
  under a local prefix;
- torchrun's failure table ("rank: 11 (local_rank: 3)", with the node's host);
- the agent's rendezvous result (torch/distributed/elastic/agent/server/api.py): "local_ranks=[0, 1, 2, 3]" and
  "global_ranks=[4, 5, 6, 7]" in the same order, else group_rank x nproc_per_node + local rank;
- a job on one node: every local rank is its global rank. One node where the logs say so: NCCL's "nNodes 1" on
  the job's largest communicator, torchrun's "group_world_size=1" or "max_nodes : 1", or a world size no larger
  than the local ranks seen; or, where nothing counts nodes, logs that name no host at all (one machine's
  console, as torchrun --standalone prints it).
Where nothing says, the global rank stays unknown: the diagnosis names the host, not the local index as a rank.
Local ranks are keyed by node: the host where a line names one, else the source (one agent's output).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from correlator.identity import METADATA, IdentityMap
from correlator.kept import ContextRecord
from correlator.speakers import Who, who_from_path

Node = tuple[str, str]  # ("host", name) or ("source", name)
AMBIGUOUS = -1  # two different global ranks were seen for one (node, local rank)


@dataclass
class LocalRanks:
    by_node: dict[tuple[Node, int], int] = field(default_factory=dict)  # (node, local rank) -> rank or AMBIGUOUS
    hosts: dict[tuple[str, int], str | None] = field(default_factory=dict)  # (source, local rank) -> its host
    single_node: bool = False  # the job runs on one node: a local rank is the global rank
    nodes_said: bool = False  # something says how many nodes (then the world-size rule does not guess)
    # sources whose lines name two hosts or more (one `srun -l` file of every node's torchrun): not one node, so
    # a local rank of theirs is no node's without its host
    shared: set[str] = field(default_factory=set)

    def teach(self, node: Node, local: int, rank: int) -> None:
        known = self.by_node.setdefault((node, local), rank)
        if known != rank:
            self.by_node[(node, local)] = AMBIGUOUS

    def host_of(self, source: str, local: int) -> str | None:
        """The host local rank ``local`` of ``source`` names on its other lines (NCCL's header), if one only."""
        return None if source in self.shared else self.hosts.get((source, local))

    def global_of(self, host: str | None, source: str | None, local: int) -> int | None:
        """The global rank of local rank ``local`` of ``host`` (or, without a host, of ``source``'s node)."""
        for node in (("host", host) if host else None,
                     ("source", source) if source and source not in self.shared else None):
            if node is None:
                continue
            rank = self.by_node.get((node, local))
            if rank is not None:
                return None if rank == AMBIGUOUS else rank
        return local if self.single_node else None


def local_ranks(records: Sequence[ContextRecord], of_kind: Mapping[str, list[ContextRecord]],
                speakers: Iterable[tuple[Who, str]], ids: IdentityMap, store_world: int | None = None,
                shared: set[str] | frozenset[str] = frozenset()) -> LocalRanks:
    """``speakers``: every (who, source) of the findings and records; ``ids`` built from the same records;
    ``store_world``: the job's size as its TCPStore counted clients, if a line says; ``shared``: sources known
    to hold several nodes' output besides those whose speakers name two hosts."""
    out = LocalRanks()
    max_local = -1
    hosts_named = False
    local_hosts: set[str] = set()
    # a node's size from local ranks said with their host: srun -l's "3: " numbers tasks (one per node under
    # torchrun), a local rank of no node
    max_placed = -1
    every_host: set[str] = set()
    speakers = list(speakers)
    out.shared = _shared_sources(speakers) | shared
    for who, source in speakers:
        hosts_named = hosts_named or who.host is not None
        if who.host is not None:
            every_host.add(who.host)
        if who.local_rank is None:
            continue
        max_local = max(max_local, who.local_rank)
        if who.host is not None:
            local_hosts.add(who.host)
            max_placed = max(max_placed, who.local_rank)
        if who.host is not None and out.hosts.setdefault((source, who.local_rank), who.host) != who.host:
            out.hosts[(source, who.local_rank)] = None  # two hosts' workers in one source: neither
        rank = who.rank if who.rank is not None else ids.rank_of(who.host, who.pid)
        if rank is not None:
            _teach(out, who.host, source, who.local_rank, rank)
    for row in ids.exits:
        hosts_named = hosts_named or row.host is not None
        if row.rank is not None and row.local_rank is not None and row.source != METADATA:
            _teach(out, row.host, row.source, row.local_rank, row.rank)
    _rendezvous(out, of_kind)
    _nodes(out, of_kind, ids, max_local, hosts_named)
    world = ids.world_size or store_world or _world_from_blocks(out, max_local + 1)
    _last_block(out, _with_a_silent_node(local_hosts, every_host, world, max_local + 1), world, max_local + 1)
    _fill_blocks(out, max_placed + 1)
    return out


def _shared_sources(speakers: Iterable[tuple[Who, str]]) -> set[str]:
    """The sources whose speakers name two hosts or more."""
    first: dict[str, str] = {}
    shared: set[str] = set()
    for who, source in speakers:
        if who.host is not None and source not in shared and first.setdefault(source, who.host) != who.host:
            shared.add(source)
    return shared


def _fill_blocks(out: LocalRanks, nproc: int) -> None:
    """A node's block, where its known local ranks agree on its base (global = base + local:
    _assign_worker_ranks): the rest of the block, a worker that printed nothing with its rank on it."""
    if out.single_node or nproc < 2:
        return
    for host, said in _bases(out).items():
        base = set(said)
        if len(base) != 1 or (b := next(iter(base))) == AMBIGUOUS or b < 0:
            continue
        # one known worker gives the base too, where it falls on a block boundary of nodes alike (a node's
        # block starts at a multiple of the node's size when every node runs as many workers)
        if len(said) >= 2 or b % nproc == 0:
            for local in range(nproc):
                out.by_node.setdefault((("host", host), local), b + local)


def _world_from_blocks(out: LocalRanks, nproc: int) -> int | None:
    """The job's size where nothing says it but the nodes' blocks leave one hole below the highest: one node's
    block (rank 0's, often: its node was lost first) is missing, and the job ends with the highest block."""
    if out.single_node or nproc < 2:
        return None
    bases = {host: set(said) for host, said in _bases(out).items()}
    known = [next(iter(b)) for b in bases.values() if len(b) == 1]
    if not known or len(known) != len(bases) or len(set(known)) != len(known) or any(b % nproc for b in known):
        return None
    top = max(known)
    hole = set(range(0, top, nproc)) - set(known)
    return top + nproc if len(hole) == 1 else None


def _bases(out: LocalRanks) -> dict[str, list[int]]:
    """Each host's block base (global rank - local rank) as each of its known local ranks gives it, AMBIGUOUS
    for one seen with two global ranks; hosts in the order ``by_node`` first names them."""
    bases: dict[str, list[int]] = defaultdict(list)
    for (node, local), rank in out.by_node.items():
        if node[0] == "host":
            bases[node[1]].append(rank - local if rank != AMBIGUOUS else AMBIGUOUS)
    return bases


def _with_a_silent_node(workers_seen: set[str], every_host: set[str], world: int | None, nproc: int) -> set[str]:
    """The nodes whose workers printed, and the one node no worker printed on where one node of the job is
    missing and exactly one other host is named (its pod's description, its kernel log): a node lost before its
    workers said anything."""
    if not world or nproc < 1 or world % nproc or len(workers_seen) != world // nproc - 1:
        return workers_seen
    others = every_host - workers_seen
    return workers_seen | others if len(others) == 1 else workers_seen


def _last_block(out: LocalRanks, hosts: set[str], world: int | None, nproc: int) -> None:
    """torchrun numbers each node's workers as one block: global rank = the node's base + local rank, the bases
    the sums of the lower group ranks' local world sizes (torch/distributed/elastic/agent/server/api.py,
    _assign_worker_ranks). A job of ``world`` ranks on world / nproc nodes, every node's base known but one's:
    that node has the block left over."""
    if out.single_node or not world or nproc < 1 or world % nproc or len(hosts) != world // nproc:
        return
    bases = {host: set(said) for host, said in _bases(out).items() if host in hosts}
    unknown = [h for h in hosts if h not in bases]
    known = [next(iter(b)) for b in bases.values() if len(b) == 1]
    if len(unknown) != 1 or len(known) != len(hosts) - 1 or len(set(known)) != len(known):
        return
    left = set(range(0, world, nproc)) - set(known)
    if len(left) == 1:
        base = left.pop()
        for local in range(nproc):
            out.teach(("host", unknown[0]), local, base + local)


def fill_exits(ids: IdentityMap, local: LocalRanks) -> None:
    """The global rank of each exit torchrun's agent reported by local rank ("failed (exitcode: -9) local_rank:
    5 (pid: 22)"), where ``local`` knows it."""
    for rec in ids.exits:
        if rec.rank is None and rec.local_rank is not None and rec.source != METADATA:
            rec.rank = local.global_of(rec.host, rec.source, rec.local_rank)
            if rec.rank is not None and rec.pid is not None:
                ids.by_pid.setdefault(rec.pid, rec.rank)


def fill_hosts(ids: IdentityMap, local: LocalRanks) -> None:
    """The host of each global rank a node's block places there (a worker that printed nothing, read from its
    node's other workers or its run folder) where no line of its own says: its node's faults are its own."""
    for (node, _), rank in local.by_node.items():
        if node[0] == "host" and rank != AMBIGUOUS:
            ids.host_of_rank.setdefault(rank, node[1])


def _teach(out: LocalRanks, host: str | None, source: str, local: int, rank: int) -> None:
    if host:
        out.teach(("host", host), local, rank)
    if source not in out.shared:
        out.teach(("source", source), local, rank)


def _near(records: Iterable[ContextRecord], rec: ContextRecord, lines: int = 12) -> ContextRecord | None:
    """The record of ``records`` in ``rec``'s source nearest after-or-before it, within ``lines`` lines."""
    near = [r for r in records if r.source == rec.source and abs(r.line_no - rec.line_no) <= lines]
    return min(near, key=lambda r: abs(r.line_no - rec.line_no), default=None)


def _ranks(text: object) -> list[int]:
    return [int(x) for x in str(text).replace(" ", "").split(",") if x.isdigit()]


def _rendezvous(out: LocalRanks, of_kind: Mapping[str, list[ContextRecord]]) -> None:
    """Each rendezvous result maps its node's local ranks to global ones; a later one (a restart) wins."""
    globals_ = of_kind.get("rdzv_global_ranks", [])
    groups = of_kind.get("rdzv_group_rank", [])
    nproc = of_kind.get("launch_nproc", [])
    latest: dict[str, dict[int, int]] = defaultdict(dict)
    for rec in of_kind.get("rdzv_local_ranks", []):
        local = _ranks(rec.fields["ranks"])
        found = _near(globals_, rec)
        if found is not None and len(_ranks(found.fields["ranks"])) == len(local):
            latest[rec.source] = dict(zip(local, _ranks(found.fields["ranks"]), strict=True))
            continue
        group = _near(groups, rec)
        # torchrun gives every node nproc_per_node workers (launcher/api.py): the node's first is group x nproc
        size = next((int(r.fields["nproc"]) for r in nproc if r.source == rec.source), len(local))
        if group is not None and local:
            latest[rec.source] = {k: int(group.fields["group_rank"]) * size + k for k in local}
    for source, pairs in latest.items():
        for local_rank, rank in pairs.items():
            out.teach(("source", source), local_rank, rank)


def _nodes(out: LocalRanks, of_kind: Mapping[str, list[ContextRecord]], ids: IdentityMap, max_local: int,
           hosts_named: bool) -> None:
    """Whether the logs say the job runs on one node."""
    counts = [int(r.fields["nodes"]) for kind in ("rdzv_nodes", "launch_nodes") for r in of_kind.get(kind, [])]
    world = ids.world_size
    for rec in of_kind.get("nccl_nodes", []):
        if world is None or int(rec.fields["nranks"]) >= world:  # the job's largest communicator
            counts.append(int(rec.fields["nodes"]))
    if counts:
        out.nodes_said = True
        out.single_node = max(counts) == 1
    elif world is not None:
        # every rank of the job numbered by NCCL's init lines on one host: that host is the job's one node
        placed = {rank: host for (host, _), rank in ids.by_host_pid.items() if rank < world}
        out.single_node = world <= max_local + 1 or (len(placed) == world and len(set(placed.values())) == 1)
    else:
        out.single_node = not hosts_named


def named_by_paths(sources: Iterable[str], local: LocalRanks) -> tuple[set[int], set[str]]:
    """The ranks and hosts the paths of ``sources`` name: rank7.log, node017/..., or torchrun --log-dir's
    <host>/.../attempt_0/7/ where the local ranks of that host are known. Each path read once (the diagnosis read
    each twice: a second per 100,000 files)."""
    ranks: set[int] = set()
    hosts: set[str] = set()
    for source in sources:
        who = who_from_path(source)
        rank = local.global_of(who.host, source, who.local_rank) if (
            who.rank is None and who.local_rank is not None) else who.rank
        if rank is not None:
            ranks.add(rank)
        if who.host:
            hosts.add(who.host)
    return ranks, hosts
