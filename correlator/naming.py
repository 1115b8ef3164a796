"""Who is who, settled before the correlator weighs anything: each host under one name (correlator.hostnames)
and each local rank under its global rank where the logs give it (correlator.local_ranks). Pure.

The findings and records come back with their speakers renamed, so every later step (events, blame, exit codes,
clock offsets) sees one identity per host and per rank. Nothing is copied when nothing changes: most jobs name
each host one way and print global ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import groupby
from operator import attrgetter

from correlator.composer_launcher import block_speakers
from correlator.events import task_ids
from correlator.few import FewSets
from correlator.host_index import short_name
from correlator.hostnames import aliases
from correlator.hosts_file import hosts_file_names
from correlator.hydra_labels import as_labelled
from correlator.identity import IdentityMap, addresses_in, build_identity, records_by_kind
from correlator.kept import ContextRecord, members
from correlator.local_ranks import LocalRanks, fill_exits, fill_hosts, local_ranks
from correlator.one_rank_hosts import fill_one_rank_exits, on_one_rank_hosts, one_rank_hosts
from correlator.pod_hostnames import pod_hostnames
from correlator.pod_nodes import listed_pod_addresses
from correlator.pods import file_ranks
from correlator.ray_nodes import ray_node_ips, ray_same_nodes
from correlator.ray_reports import dead_actors
from correlator.role_prefixes import as_local, role_rank_prefixes
from correlator.sieve import SIGNATURE, having
from correlator.speakers import Who, folder_host, who_from_path
from correlator.srun_agents import agent_sources, as_agents
from correlator.srun_output import starts_launchers, task_file_ranks
from correlator.subgroups import confirmed as confirmed_group_ranks
from correlator.subgroups import global_ranks as subgroup_ranks
from correlator.table_lines import table_speakers
from correlator.teardown_pids import place_spawn_pids, place_teardown_pids
from schemas.findings import Finding, Speaker

_ADDR_IN_USING = "nccl_using"
# srun: error: HOST: task N: Exited with exit code C / Segmentation fault / Bus error
_SRUN_EXITS = frozenset({"slurm.task_exit", "slurm.task_segfault", "slurm.task_sigbus"})
_WHO, _SOURCE, _SOURCE_SPEAKER = attrgetter("who"), attrgetter("source"), attrgetter("source", "speaker")
_HOST_FIELDS = ("table_host", "k8s_node", "k8s_assigned", "store_remote")  # record kinds whose fields name a host


@dataclass
class Named:
    findings: list[Finding]
    context: list[ContextRecord]
    of_kind: dict[str, list[ContextRecord]]
    ids: IdentityMap
    local: LocalRanks


def settle(findings: list[Finding], context: list[ContextRecord], of_kind: dict[str, list[ContextRecord]],
           ids: IdentityMap, rank_hosts: Mapping[int, str] | None, exit_codes: Mapping[str, int] | None,
           sources: Sequence[str] = ()) -> Named:
    """``ids``: build_identity of ``context`` (with ``rank_hosts`` and ``exit_codes``), rebuilt where a name
    changes; ``sources``: every source read, matched or not."""
    if labelled := as_labelled(findings, context):  # MPICH Hydra's "[R] " label, read per source
        findings, context = labelled
        of_kind = records_by_kind(context)
        ids = build_identity(context, rank_hosts, exit_codes, of_kind=of_kind)
    findings = table_speakers(findings, ids.exits, of_kind) or findings
    findings = block_speakers(findings, of_kind) or findings
    state = _Naming(findings, context, of_kind, ids, rank_hosts, exit_codes, _speakers(findings, context))
    names = _host_names(state.pairs, findings, of_kind)
    folders, files, same = _folder_hosts(state.pairs, of_kind.get("table_host", ()))
    same += _scheduler_hosts(state.pairs, rank_hosts or {})
    srun_named = _srun_task_hosts(findings, of_kind)
    same += srun_named
    same += ray_same_nodes(findings)
    listed = listed_pod_addresses(of_kind)  # a pod listing's pod is Kubernetes' name for the Ray node at its IP
    same += listed
    listed_names, canonical = hosts_file_names(of_kind)  # an /etc/hosts line's names: one machine
    cut = pod_hostnames(names)  # a pod's hostname (an Indexed Job's, one cut to 63 characters): its pod
    same += [*listed_names, *cut]
    canonical += [full for _, full in cut]
    scheduler = [*(rank_hosts or {}).values(), *(srun for srun, _ in srun_named), *(pod for _, pod in listed),
                 *ray_node_ips(findings, context, of_kind)]
    renamed = {n: c for n, c in aliases(names, _advertised(of_kind, ids), scheduler, same, folders,
                                                  files, canonical).items()
               if n != c}
    if renamed:
        state.step(_rename_hosts(state.findings, state.context, renamed))
    state.step(as_agents(state.findings, state.context, agent_sources(state.ids.exits)))
    state.step(subgroup_ranks(state.findings, state.context, state.of_kind))  # a subgroup's rank, where logged
    role_named = role_rank_prefixes(state.pairs, state.ids)
    if role_named:
        state.step(as_local(state.findings, state.context, role_named))
    local = local_ranks(state.context, state.of_kind, state.pairs, state.ids, _store_world(state.findings),
                        shared=_srun_multi_node_sources(state.findings))
    state.ids.local_ranks = local
    # only a speaker with a local rank and no global one is renamed: where none is (every speaker, distinct, in
    # pairs), no line of every rank needs reading
    if any(w.local_rank is not None and w.rank is None for w, _ in state.pairs):
        state.step(_global_ranks(state.findings, state.context, local))
    subjects = dead_actors(state.findings, state.of_kind)  # Ray's reports of a dead worker (correlator/ray_reports.py)
    if subjects is not None:  # the findings' speakers alone: the records, so of_kind and ids, stand
        state.findings = subjects  # (and pairs is not rebuilt)
    if not starts_launchers(state.of_kind):  # the script says a file is a node's: no content says otherwise
        state.step(file_ranks(state.pairs, state.findings, state.context, sources))
    state.step(task_file_ranks(state.pairs, state.findings, state.context, state.of_kind, sources))
    state.step(_lone_process(state.pairs, state.findings, state.context, state.ids), speakers=False)
    fill_exits(state.ids, local)
    fill_hosts(state.ids, local)
    single = one_rank_hosts(state.ids, state.of_kind)
    if state.step(on_one_rank_hosts(state.findings, state.context, single), speakers=False):
        fill_exits(state.ids, local)
        fill_hosts(state.ids, local)
    fill_one_rank_exits(state.ids, single)
    place_teardown_pids(state.ids, local, state.of_kind)  # the agent's SIGTERMed pids, by local-rank order
    place_spawn_pids(state.ids, local, state.of_kind, {w.rank for w, _ in state.pairs if w.rank is not None})
    state.ids.sole_rank = {host: rank for rank, host in single.values()}
    state.ids.group_ranks = confirmed_group_ranks(state.of_kind)
    return Named(state.findings, state.context, state.of_kind, state.ids, local)


@dataclass
class _Naming:
    """What settle's steps read, each step's findings and records taken in turn."""

    findings: list[Finding]
    context: list[ContextRecord]
    of_kind: dict[str, list[ContextRecord]]
    ids: IdentityMap
    rank_hosts: Mapping[int, str] | None
    exit_codes: Mapping[str, int] | None
    pairs: list[tuple[Who, str]]  # _speakers of findings and context

    def step(self, changed: tuple[list[Finding], list[ContextRecord]] | None, speakers: bool = True) -> bool:
        """Take a renaming step's findings and records (None: it changed nothing, and nothing is rebuilt) and
        rebuild what is read from them; the speakers too unless no later step reads them (40 ms at 1,024
        ranks). Whether anything changed."""
        if changed is None:
            return False
        self.findings, self.context = changed
        self.of_kind = records_by_kind(self.context)
        self.ids = build_identity(self.context, self.rank_hosts, self.exit_codes, of_kind=self.of_kind)
        if speakers:
            self.pairs = _speakers(self.findings, self.context)
        return True


def _store_world(findings: Sequence[Finding]) -> int | None:
    """The job's size as the TCPStore server counts its clients ("Timed out after 901 seconds waiting for
    clients. 15/16 clients joined.": pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp, the server
    waits for world_size workers), where no NCCL init line counts the ranks."""
    sizes = [f.fields["world"] for f in findings if isinstance(f.fields.get("world"), int)]
    return max(sizes, default=None)


def _lone_process(pairs: Sequence[tuple[Who, str]], findings: list[Finding], context: list[ContextRecord],
                  ids: IdentityMap) -> tuple[list[Finding], list[ContextRecord]] | None:
    """A source (one terminal's paste, one node's console) whose NCCL header lines come from one process that no
    init line numbers, and whose rank-prefixed lines ("[rank4]:", c10d's "[Rank 4]") name one rank no process is
    mapped to, on one host: that process is that rank, and the rank's lines are on that host. PyTorch prints its
    own lines under the rank (c10's prefix), NCCL its own under host:pid:tid (src/debug.cc); a paste of one
    failing process shows both and nothing ties them but this. Not when the device NCCL names exceeds the rank
    (local device d is local rank d, at most the global rank)."""
    # one process, rank and host a source, almost always: no set each (correlator/few.py)
    processes: FewSets[str, tuple[str, int, int | None]] = FewSets()
    ranks: FewSets[str, int] = FewSets()
    hosts: FewSets[str, str] = FewSets()
    mapped = set(ids.by_host_pid.values())
    for who, source in pairs:
        if who.host:
            hosts.add(source, who.host)
        if who.pid is not None and who.host is not None and who.rank is None:
            if (who.host, who.pid) not in ids.by_host_pid:
                processes.add(source, (who.host, who.pid, who.device))
        elif who.rank is not None and who.pid is None:
            ranks.add(source, who.rank)
    same: dict[tuple[str, str, int], int] = {}  # (source, host, pid) -> rank
    for source, procs in processes.items():
        seen = ranks.get(source)
        if len(procs) != 1 or len(seen) != 1 or hosts.count(source) != 1:
            continue
        (host, pid, device), rank = next(iter(procs)), next(iter(seen))
        if rank not in mapped and (device is None or device <= rank):
            same[(source, host, pid)] = rank
    if not same:
        return None
    host_of = {(source, rank): host for (source, host, _), rank in same.items()}

    def paired(who: Who, source: str) -> Who:
        rank = same.get((source, who.host or "", who.pid)) if who.rank is None and who.pid is not None else None
        if rank is not None:
            return who._replace(rank=rank)
        if who.rank is not None and who.host is None and (host := host_of.get((source, who.rank))) is not None:
            return who._replace(host=host)
        return who

    out_f = []
    for f in findings:
        new = paired(_who(f.speaker), f.source)
        out_f.append(f if new == _who(f.speaker) else replace(f, speaker=replace(f.speaker, rank=new.rank,
                                                                                 host=new.host)))
    out_c = []
    for rec in context:
        who = paired(rec.who, rec.source)
        out_c.append(rec if who is rec.who else rec._replace(who=who))
    return out_f, out_c


def _who(s: Speaker) -> Who:
    return Who(s.rank, s.host, s.pid, s.device, s.local_rank)


def _speakers(findings: Sequence[Finding], context: Sequence[ContextRecord]) -> list[tuple[Who, str]]:
    """Each distinct (speaker, source) of the records, then of the findings, in the order first seen. Built with
    C-level maps: at 1,024 ranks a Python loop over the 30,000 records and findings took 40 ms."""
    pairs = dict.fromkeys(zip(map(_WHO, context), map(_SOURCE, context), strict=True))
    # A source's findings come together and share their speakers: each run of one (source, speaker) gives its
    # pair once, the first of each distinct pair where it was first seen, as before. A tuple is compared source
    # first and a speaker by identity before its Python-level eq, so a rank's findings cost no Python call; a map
    # of every distinct (speaker's id, source), held beside the pairs, was naming's peak (0.3 KB a rank; issue 23).
    for (source, speaker), _ in groupby(findings, _SOURCE_SPEAKER):
        pairs.setdefault((_who(speaker), source))
    return list(pairs)


def _host_names(pairs: Sequence[tuple[Who, str]], findings: Sequence[Finding],
                of_kind: Mapping[str, list[ContextRecord]]) -> list[str]:
    """Every host name the lines give, in the order first seen."""
    seen: dict[str, None] = dict.fromkeys(who.host for who, _ in pairs if who.host)
    for kind in _HOST_FIELDS:
        for rec in of_kind.get(kind, ()):
            if isinstance(rec.fields.get("host"), str):
                seen.setdefault(rec.fields["host"])
    for f in findings:
        if "host" in f.fields and isinstance(f.fields["host"], str):
            seen.setdefault(f.fields["host"])
    return list(seen)


def _folder_hosts(pairs: Sequence[tuple[Who, str]], tables: Sequence[ContextRecord] = ()
                  ) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """The hosts the sources' folders name (node017/train.log), the hosts only their file names name (node1.log,
    gpt-4002729-gpu12.out), and (path's host, line's host) where all the lines of a source that name a host name
    one other (node017's NCCL headers say ip-10-0-0-17): a collector files each node's logs under the node's name,
    while a file's own name is often an index (node1.log for the second node) or the scheduler's short name (Slurm's
    --output pattern %x-%j-%N.out: job name, job id, node name), never more sure than the host the process
    printed. A torchrun agent's failure table (``tables``: its `host :` row, the agent's socket.getfqdn(),
    torch/distributed/elastic/multiprocessing/errors) names the host of the file it is printed in, as a line's
    own header does."""
    lines: FewSets[str, str] = FewSets()  # one host a source, almost always: no set each (correlator/few.py)
    for who, source in pairs:
        if who.host:
            lines.add(source, who.host)
    for rec in tables:
        lines.add(rec.source, str(rec.fields["host"]))
    folders: list[str] = []
    files: list[str] = []
    same: list[tuple[str, str]] = []
    for source in sorted(lines):
        folder, named = folder_host(source), lines.get(source)
        if folder is not None:
            folders.append(folder)
            others = named - {folder}
            if others and len({short_name(h) for h in others}) == 1:  # one host, perhaps spelt two ways (below)
                same.append((folder, min(others)))
        elif ((own := who_from_path(source).host) in named
              and len(shorts := {short_name(h) for h in named - {own}}) == 1 and own not in shorts):
            # its name and the lines' one, perhaps spelt two ways (torchrun's failure table prints the agent's
            # socket.getfqdn(), NCCL's header gethostname()'s short name: one host); a file named by the host's
            # own short name is no other name for it
            files.append(own)
            same.append((own, min(named - {own})))
    return folders, files, same


def _scheduler_hosts(pairs: Sequence[tuple[Who, str]], rank_hosts: Mapping[int, str]) -> list[tuple[str, str]]:
    """(the scheduler's host of a rank, the host that rank's own lines name), where its lines name one."""
    if not rank_hosts:
        return []
    named: dict[int, set[str]] = {}
    for who, _ in pairs:
        if who.rank is not None and who.host:
            named.setdefault(who.rank, set()).add(who.host)
    return [(rank_hosts[r], next(iter(h))) for r, h in named.items() if r in rank_hosts and len(h) == 1]


def _srun_multi_node_sources(findings: Sequence[Finding]) -> set[str]:
    """The sources where srun's exit lines name two nodes or more: one `srun -l` file of several nodes' tasks."""
    hosts: dict[str, set[str]] = {}
    for f in having(findings, SIGNATURE, _SRUN_EXITS):  # srun's exit lines alone, picked in C
        host = f.fields.get("host")
        if isinstance(host, str):
            hosts.setdefault(f.source, set()).add(host)
    return {source for source, named in hosts.items() if len(named) >= 2}


def _srun_task_hosts(findings: Sequence[Finding], of_kind: Mapping[str, list[ContextRecord]]
                     ) -> list[tuple[str, str]]:
    """(srun's name of a task's node, the host that task's NCCL lines name), where srun's exit lines name the
    task's node and the task's lines name one other host: srun -l labels each line with its task."""
    named: dict[int, set[str]] = {}
    for rec in of_kind.get("srun_task_host", ()):
        task, host = rec.fields.get("task"), rec.fields.get("host")
        if isinstance(task, int) and isinstance(host, str):
            named.setdefault(task, set()).add(host)
    if not named:
        return []
    node: dict[int, set[str]] = {}
    for f in findings:
        host = f.fields.get("host")
        if f.signature in _SRUN_EXITS and isinstance(host, str):
            for task in task_ids(f.fields):
                node.setdefault(task, set()).add(host)
    out = {(next(iter(node[t])), next(iter(hosts))) for t, hosts in named.items()
           if len(hosts) == 1 and len(node.get(t, ())) == 1}
    return sorted(pair for pair in out if pair[0] != pair[1])


def _advertised(of_kind: Mapping[str, list[ContextRecord]], ids: IdentityMap) -> list[tuple[str, str]]:
    """(host, address) for every address a host's NCCL interface line advertises."""
    pairs = {(host, ip) for ip, host in ids.host_of_ip.items()}
    # host_of_ip keeps an address's first host only: count them all; each (host, line) once (every rank of a node
    # prints the same lines)
    lines = {(rec.who.host, str(detail)) for rec in of_kind.get(_ADDR_IN_USING, ())
             for detail in members(rec, "detail", "")}
    for host, detail in lines:
        if host:
            pairs.update((host, ip) for ip in addresses_in(detail))
    return sorted(pairs)


def _rename_hosts(findings: list[Finding], context: list[ContextRecord], renamed: Mapping[str, str]
                  ) -> tuple[list[Finding], list[ContextRecord]]:
    speakers: dict[Speaker, Speaker] = {}

    def speaker(s: Speaker) -> Speaker:
        if s not in speakers:
            speakers[s] = replace(s, host=renamed[s.host]) if s.host is not None and s.host in renamed else s
        return speakers[s]

    out_f = []
    for f in findings:
        new = speaker(f.speaker)
        host = f.fields.get("host")
        fields = {**f.fields, "host": renamed[host]} if isinstance(host, str) and host in renamed else f.fields
        out_f.append(f if new is f.speaker and fields is f.fields else replace(f, speaker=new, fields=fields))
    out_c = []
    for rec in context:
        old = rec.who.host
        who = rec.who._replace(host=renamed[old]) if old is not None and old in renamed else rec.who
        host = rec.fields.get("host")
        fields = ({**rec.fields, "host": renamed[host]} if rec.kind in _HOST_FIELDS and isinstance(host, str)
                  and host in renamed else rec.fields)
        out_c.append(rec if who is rec.who and fields is rec.fields else rec._replace(who=who, fields=fields))
    return out_f, out_c


def _global_ranks(findings: list[Finding], context: list[ContextRecord], local: LocalRanks
                  ) -> tuple[list[Finding], list[ContextRecord]] | None:
    """The findings and records whose speaker's local rank ``local`` maps to a global one, with that rank (and
    the host its other lines name, where the line names none); None when there is none."""
    # Only the lines said under a local rank alone can change: the positions of those, found in a comprehension
    # each (every rank's other lines are passed over there), and the lists copied only where one does change.
    speakers: dict[tuple[Speaker, str], Speaker] = {}
    renamed: dict[int, Finding] = {}
    for at in [at for at, f in enumerate(findings) if f.speaker.rank is None and f.speaker.local_rank is not None]:
        f = findings[at]
        s = f.speaker
        key = (s, f.source)
        if key not in speakers:
            said = int(s.local_rank or 0)  # not None: chosen so above
            host = s.host or local.host_of(f.source, said)
            rank = local.global_of(host, f.source, said)
            speakers[key] = s if rank is None and host == s.host else replace(s, rank=rank, host=host)
        if (new := speakers[key]) is not s:
            renamed[at] = replace(f, speaker=new)
    moved: dict[int, ContextRecord] = {}
    for at in [at for at, rec in enumerate(context) if rec.who.rank is None and rec.who.local_rank is not None]:
        rec = context[at]
        who = rec.who
        said = int(who.local_rank or 0)  # not None: chosen so above
        host = who.host or local.host_of(rec.source, said)
        rank = local.global_of(host, rec.source, said)
        if rank is not None or host != who.host:
            moved[at] = rec._replace(who=who._replace(rank=rank, host=host))
    if not renamed and not moved:
        return None
    out_f, out_c = list(findings), list(context)
    for at, f in renamed.items():
        out_f[at] = f
    for at, rec in moved.items():
        out_c[at] = rec
    return out_f, out_c
