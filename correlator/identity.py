"""Who is who across a job: (host, pid) -> rank from NCCL init lines, addresses -> hosts, torchrun tables.

Survivors name the peer that failed by address ("Connection closed by remote peer 10.1.3.201<...>"), and the
kernel names a process by pid ("Killed process 4242 (python)"); these maps turn both back into ranks and hosts.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

from correlator.composer_launcher import composer_exits
from correlator.deepspeed_pids import deepspeed_ranks
from correlator.failure_tables import ExitRecord as ExitRecord  # re-exported: the exits are built here
from correlator.failure_tables import first_failure_rows, table_rows
from correlator.host_index import HostMap, short_name
from correlator.hostfile import slot_hosts
from correlator.hostnames import address_in_name
from correlator.kept import ContextRecord, members
from correlator.launcher_reports import add_launcher_reports
from correlator.pair_map import PairMap
from correlator.pod_nodes import listed_pod_addresses, lone_pods

if TYPE_CHECKING:  # local_ranks reads this module's maps to build itself
    from correlator.local_ranks import LocalRanks

_IFACE = re.compile(r"(?:\[\d+\])?(?P<name>[\w.-]+):(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:]+)")
_ADDR = re.compile(r"(?:\[\d+\])?[\w.-]+:(?P<ip>\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:]+(?:%\w+)?)<\d+>")


METADATA = "job metadata"
_WHO = attrgetter("who")
_HEX_DIGITS = "0123456789abcdefABCDEF"


def pci_bus(pci: str) -> int | None:
    """A PCI address's bus as NCCL's busId numbers it: "0000:3b:00" or "0000:3b:00.0" -> 0x3b; "3b:00" -> 0x3b."""
    parts = pci.split(":")
    try:
        return int(parts[-2] if len(parts) >= 3 else parts[0], 16) if len(parts) >= 2 else None
    except ValueError:
        return None


@dataclass
class IdentityMap:
    # (host, pid) -> rank and (host, PCI bus) -> rank: one small map a host, no key tuple a rank (pair_map.py)
    by_host_pid: PairMap[int] = field(default_factory=PairMap)
    by_pid: dict[int, int] = field(default_factory=dict)
    # rank -> host and address -> host, each with its inverse (host -> ranks, host -> addresses) kept beside it
    host_of_rank: HostMap[int] = field(default_factory=HostMap)
    host_of_ip: HostMap[str] = field(default_factory=HostMap)
    by_host_local: dict[tuple[str | None, int], int] = field(default_factory=dict)
    world_size: int | None = None
    exits: list[ExitRecord] = field(default_factory=list)
    host_of_source: dict[str, str] = field(default_factory=dict)  # a pod description names its node once
    host_of_line: dict[tuple[str, int], str] = field(default_factory=dict)  # (source, line) -> the pod a row is about
    device_offset: dict[str, int] = field(default_factory=dict)  # host -> rank - cudaDev, when constant
    # (host, device index a worker's own CUDA error names) -> rank, where its launcher makes that device the
    # worker's local rank (correlator/deepspeed_pids.py)
    rank_of_local_device: dict[tuple[str, int], int] = field(default_factory=dict)
    rank_of_bus: PairMap[int] = field(default_factory=PairMap)  # (host, PCI bus) -> rank
    # host -> NCCL's NICs: a set a host while read, then one frozenset of each distinct set (_shared_sets)
    interfaces: dict[str, AbstractSet[str]] = field(default_factory=dict)
    store_hosts: list[tuple[str, ContextRecord]] = field(default_factory=list)  # TCPStore peers clients lost
    # (rank, host) of each row a torchrun failure table heads "Root Cause (first observed failure)", with where
    first_failures: list[tuple[int, str | None, str, int]] = field(default_factory=list)
    # (rank, source, line) of the process Open MPI's mpirun reports "The first process to do so was:"
    first_exited: list[tuple[int, str, int]] = field(default_factory=list)
    sole_rank: dict[str, int] = field(default_factory=dict)  # host -> rank, where the host runs that rank alone
    local_ranks: LocalRanks | None = None  # (node, local rank) -> rank, once naming has read them
    pod_on: dict[str, str] = field(default_factory=dict)  # a node -> the one pod of the job it ran (pod_nodes.py)
    # (source, group id, group rank) of the ProcessGroupNCCL subgroup ranks whose global rank a line gives
    # (correlator/subgroups.py), once naming has read them
    group_ranks: frozenset[tuple[str, int, int]] = frozenset()
    pod_address: dict[str, str] = field(default_factory=dict)  # a pod's IP -> the pod (kubectl get pods -o wide)

    def __post_init__(self) -> None:
        # a caller may pass plain dicts: the maps are kept with their inverses whatever was given
        self.host_of_rank = HostMap(self.host_of_rank)
        self.host_of_ip = HostMap(self.host_of_ip)

    @property
    def one_node(self) -> bool:
        """The job runs on one node (correlator.local_ranks): a local rank is the global rank."""
        return self.local_ranks is not None and self.local_ranks.single_node

    def rank_of_pci(self, host: str | None, pci: str) -> int | None:
        """NVRM: Xid (PCI:0000:3b:00) -> the rank whose NCCL init line printed busId 3b000."""
        bus = pci_bus(pci)
        return None if host is None or bus is None else self.rank_of_bus.get((host, bus))

    def odd_interface_hosts(self) -> dict[str, tuple[str, int]]:
        """Hosts whose NCCL network interfaces differ from what most hosts use -> (what most use, how many)."""
        if len(self.interfaces) < 3:
            return {}
        usual = Counter(frozenset(v) for v in self.interfaces.values()).most_common(1)[0]
        if usual[1] < 0.6 * len(self.interfaces):
            return {}
        label = ",".join(sorted(usual[0]))
        return {h: (label, usual[1]) for h, v in self.interfaces.items() if frozenset(v) != usual[0]}

    def rank_of(self, host: str | None, pid: int | None, local_rank: int | None = None) -> int | None:
        if pid is not None:
            numbered = self.by_host_pid.get((host, pid)) if host is not None else None  # (a rank is never None)
            if numbered is not None:
                return numbered
            if pid in self.by_pid:
                return self.by_pid[pid]
        if local_rank is not None:
            return self.by_host_local.get((host, local_rank))
        return None

    def rank_of_device(self, host: str | None, device: int | None) -> int | None:
        """NCCL numbers a node's ranks cudaDev + k on most launchers; used only when every known pid agrees."""
        if host is None or device is None or host not in self.device_offset:
            return None
        return device + self.device_offset[host]

    def host_of(self, address: str) -> str | None:
        """A host for a peer address: an IP seen in NCCL's 'Using' lines, or a host name seen in the logs."""
        addr = address.strip("[]")
        if addr in self.host_of_ip:
            return self.host_of_ip[addr]
        # a survivor names its peer as its resolver does (NCCL prints getnameinfo's name): a name carrying an
        # address (ip-10-1-2-3.ec2.internal) is the host that advertises it, whatever the logs call that host
        carried = address_in_name(addr)
        if carried is not None and carried in self.host_of_ip:
            return self.host_of_ip[carried]
        if self.host_of_rank.has_host(addr) or self.host_of_ip.has_host(addr):
            return addr
        # a short name for a known host's long one (or the other way round); of several, the first by name
        alike = self.host_of_rank.hosts_named(short_name(addr)) | self.host_of_ip.hosts_named(short_name(addr))
        return min(alike) if alike else None

    def ranks_on(self, host: str) -> list[int]:
        return self.host_of_rank.keys_on(host)


def addresses_in(detail: str) -> list[str]:
    """The addresses an NCCL 'Using' line advertises (eth0:10.1.2.3<0>, [1]ib0:fe80::1%ib0<0>)."""
    return [m["ip"] for m in _ADDR.finditer(detail)]


def records_by_kind(records: Iterable[ContextRecord]) -> dict[str, list[ContextRecord]]:
    """The records of each kind, each kind's in the order given."""
    of_kind: dict[str, list[ContextRecord]] = defaultdict(list)
    for rec in records:
        of_kind[rec.kind].append(rec)
    return of_kind


def build_identity(records: Sequence[ContextRecord], rank_hosts: Mapping[int, str] | None = None,
                   exit_codes: Mapping[str, int] | None = None, *,
                   of_kind: Mapping[str, list[ContextRecord]] | None = None) -> IdentityMap:
    """``of_kind``: records_by_kind(records), where the caller has it already."""
    if of_kind is None:
        of_kind = records_by_kind(records)
    ids = IdentityMap()
    # Kind by kind, not record by record (a pass over 78,000 records at 4,096 ranks took 0.12 s): no map is
    # written by two kinds but host_of_rank, which the loop below and every record's speaker write (see _hosts).
    comm_size: dict[tuple[str | None, int], int] = {}
    init_hosts: dict[int, str] = {}  # rank -> host of its largest communicator's init line, the last one
    world: int | None = None  # the largest communicator's size
    # NCCL >= 2.19 also prints "comm 0x... rank R nRanks N nNodes ...": a numbering of the same kind
    for rec in (*of_kind.get("nccl_comm", ()), *of_kind.get("nccl_nodes", ())):
        who = rec.who
        if who.pid is None:
            continue
        fields = rec.fields
        rank, nranks = int(fields["rank"]), int(fields["nranks"])
        key = (who.host, who.pid)
        # A process belongs to several communicators; the largest one numbers ranks job-wide.
        if nranks >= comm_size.get(key, 0):
            comm_size[key] = nranks
            if who.host is not None:
                ids.by_host_pid[key] = rank
                init_hosts[rank] = who.host
            ids.by_pid[who.pid] = rank
        world = nranks if world is None or nranks > world else world
    if world is not None:
        ids.world_size = max(0, world)
    # Every rank of a node prints the same 'Using' lines, and a line read again changes nothing (the first
    # host of an address stays, interfaces are a set): each (host, line) is read once, 1,024 of 8,192 at 4,096 ranks.
    using_read: set[tuple[str, str]] = set()
    interfaces: defaultdict[str, set[str]] = defaultdict(set)
    for rec in of_kind.get("nccl_using", ()):
        host = rec.who.host
        if host is None:
            continue
        for said in members(rec, "detail", ""):  # a run of the speaker's lines (correlator/kept.py: GROUPED_KINDS)
            detail = str(said)
            if (host, detail) in using_read:
                continue
            using_read.add((host, detail))
            for m in _ADDR.finditer(detail):
                ids.host_of_ip.setdefault(m["ip"], host)
            if "OOB" not in detail:  # NET/IB's OOB names the IB side's control interface, not the choice made
                interfaces[host].update(m["name"] for m in _IFACE.finditer(detail))
    ids.interfaces = _shared_sets(interfaces)
    # the init line's bus (context.py: nccl_comm), the last line's where several name one: a process's later
    # communicators are numbered on the same GPU
    for rec in of_kind.get("nccl_comm", ()):
        host, bus = rec.who.host, rec.fields.get("bus")
        if host is not None and isinstance(bus, str) and bus and not bus.strip(_HEX_DIGITS):  # hex (str.strip)
            ids.rank_of_bus[(host, int(bus, 16) >> 12)] = int(rec.fields["rank"])
    ids.store_hosts.extend((str(rec.fields["host"]), rec) for rec in of_kind.get("store_remote", ()))
    ids.exits.extend(ExitRecord(None, int(rec.fields["local_rank"]), rec.who.host, int(rec.fields["pid"]),
                                int(rec.fields["exit_code"]), rec.source, rec.line_no)
                     for rec in of_kind.get("worker_failed", ()))
    _pod_exits(ids, of_kind)
    ids.exits.extend(composer_exits(of_kind))
    _mpi_exits(ids, of_kind)
    add_launcher_reports(ids, of_kind)  # mpirun's, prterun's and Flux's first-exit reports
    deepspeed_ranks(ids, of_kind)
    for rec in of_kind.get("ray_worker_rank", ()):  # Ray Train's worker table: a pid's rank, on its node's address
        rank, pid, ip = int(rec.fields["rank"]), int(rec.fields["pid"]), str(rec.fields["ip"])
        ids.by_pid.setdefault(pid, rank)
        ids.by_host_pid.setdefault((ip, pid), rank)
    _ray_train_death(ids, of_kind)
    for rec in of_kind.get("vllm_rank", ()):  # a vLLM worker's own rank line, under its process's prefix
        if (worker_pid := rec.who.pid) is not None:
            ids.by_pid.setdefault(worker_pid, int(rec.fields["rank"]))
            if rec.who.host is not None:
                ids.by_host_pid.setdefault((rec.who.host, worker_pid), int(rec.fields["rank"]))
    for rec in of_kind.get("vllm_mp_device", ()):  # a vLLM worker process's device is its rank, never 0 (context.py)
        if int(rec.fields["device"]) > 0:
            ids.by_pid.setdefault(int(rec.fields["pid"]), int(rec.fields["device"]))
    _source_hosts(ids, of_kind)
    ids.pod_on = {node: pod for pod, node in lone_pods(of_kind).items()}
    ids.pod_address = dict(listed_pod_addresses(of_kind))
    _hosts(ids, records, init_hosts)
    for rec in of_kind.get("ray_worker_rank", ()):  # where no line names a worker's host, its node's address does
        ids.host_of_rank.setdefault(int(rec.fields["rank"]), str(rec.fields["ip"]))
    rings = of_kind.get("nccl_ring", [])
    comms = of_kind.get("nccl_comm", [])
    # _table_rows reads each kind's cells in their order, never one kind's order against another's
    tables = [rec for kind in ("table_rank", "table_host", "table_exit", "table_time", "table_rule", "table_root")
              for rec in of_kind.get(kind, ())]
    _ring_ranks(ids, rings)
    _table_exits(ids, tables)
    _device_offsets(ids, comms)
    for rank, host in slot_hosts(of_kind).items():  # where no line placed it, its hostfile slot's host
        ids.host_of_rank.setdefault(rank, host)
    for rank, host in (rank_hosts or {}).items():
        ids.host_of_rank[int(rank)] = host
    _fill_exit_ranks(ids)
    _metadata_exits(ids, exit_codes or {})
    return ids


def _ray_train_death(ids: IdentityMap, of_kind: Mapping[str, list[ContextRecord]]) -> None:
    """The raylet's report of the one worker process that died (its node's address and pid) and Ray Train's
    "Worker N has failed." for the one worker whose call raised RayActorError (context.py: ray_died_pid,
    ray_train_failed) are about the same process: that pid is rank N. Never with several of either (a run that
    restarted, deaths Ray folded into one "[repeated Nx]" line): which death is which rank is then unknown."""
    failed = {int(rec.fields["rank"]) for rec in of_kind.get("ray_train_failed", ())}
    died = {(str(rec.fields["ip"]), int(rec.fields["pid"])) for rec in of_kind.get("ray_died_pid", ())}
    if len(failed) != 1 or len(died) != 1 or any("repeated" in rec.fields for rec in of_kind["ray_died_pid"]):
        return
    (ip, pid), rank = next(iter(died)), next(iter(failed))
    if ids.by_host_pid.setdefault((ip, pid), rank) == rank:  # a worker table that says otherwise wins
        ids.by_pid.setdefault(pid, rank)
        ids.host_of_rank.setdefault(rank, ip)


def _source_hosts(ids: IdentityMap, of_kind: Mapping[str, list[ContextRecord]]) -> None:
    """The node a pod's description names is its file's host; a file whose lines name several nodes (`kubectl get
    events` for the whole job: one Scheduled row a pod) is no one host's, and each of its rows about a pod is
    that pod's (context.py: k8s_event_pod)."""
    named: dict[str, set[str]] = defaultdict(set)
    for rec in (*of_kind.get("k8s_node", ()), *of_kind.get("k8s_assigned", ())):
        named[rec.source].add(str(rec.fields["host"]))
    ids.host_of_source.update((source, next(iter(hosts))) for source, hosts in named.items() if len(hosts) == 1)
    ids.host_of_line.update(((rec.source, rec.line_no), str(rec.fields["host"]))
                            for rec in of_kind.get("k8s_event_pod", ()))


def _pod_exits(ids: IdentityMap, of_kind: Mapping[str, list[ContextRecord]]) -> None:
    """A pod's container exit codes from `kubectl describe pod`, for the pod its Name: line (or file) names."""
    exits = of_kind.get("k8s_exit", ())
    if not exits:
        return
    pod_of = {rec.source: str(rec.fields["host"]) for rec in reversed(of_kind.get("k8s_pod", []))}
    for rec in exits:
        pod = pod_of.get(rec.source, rec.who.host)
        if pod is not None:
            ids.exits.append(ExitRecord(None, None, pod, None, int(rec.fields["exit_code"]), rec.source, rec.line_no))


MPI_APP_JOB = 1  # ORTE/PRRTE's local job id of the application mpirun launched (0: its daemons)


def _mpi_exits(ids: IdentityMap, of_kind: Mapping[str, list[ContextRecord]]) -> None:
    """Open MPI's report of the first process to exit non-zero: its name line, then its exit code on the next line
    of the same file. Only the launched application's (local job 1) vpid is a rank; a spawned job's is not."""
    codes = {(rec.source, rec.line_no): rec for rec in of_kind.get("mpi_exit_code", ())}
    for rec in (*of_kind.get("mpi_exit_name", ()), *of_kind.get("hvd_exit_name", ())):  # horovodrun's: no job id
        code = codes.get((rec.source, rec.line_no + 1))
        if code is None or int(rec.fields.get("job", MPI_APP_JOB)) != MPI_APP_JOB:
            continue
        ids.exits.append(ExitRecord(int(rec.fields["rank"]), None, None, None, int(code.fields["exit_code"]),
                                    rec.source, code.line_no))
        ids.first_exited.append((int(rec.fields["rank"]), rec.source, rec.line_no))


def _table_exits(ids: IdentityMap, tables: list[ContextRecord]) -> None:
    """The exits torchrun's failure tables report, and the ranks their rows map (none overriding the logs')."""
    ids.first_failures.extend(first_failure_rows(tables))
    for row in table_rows(tables):
        ids.exits.append(row)
        if row.rank is not None:
            if row.host:
                ids.host_of_rank.setdefault(row.rank, row.host)
                if row.pid is not None:
                    ids.by_host_pid.setdefault((row.host, row.pid), row.rank)
            if row.pid is not None:
                ids.by_pid.setdefault(row.pid, row.rank)
            if row.local_rank is not None:
                ids.by_host_local.setdefault((row.host, row.local_rank), row.rank)


def _shared_sets(of_host: Mapping[str, AbstractSet[str]]) -> dict[str, AbstractSet[str]]:
    """Each host's set as one frozenset of each distinct value, in the same order: the hosts of a job use the
    same NICs, and a set a host held to the diagnosis's end was 44 bytes a rank at 8 ranks a host (issue 23)."""
    shared: dict[frozenset[str], frozenset[str]] = {}
    return {host: shared.setdefault(names := frozenset(v), names) for host, v in of_host.items()}


def _hosts(ids: IdentityMap, records: Sequence[ContextRecord], init_hosts: dict[int, str]) -> None:
    """host_of_rank as one pass over the records in order would leave it: a rank's host from the last init line
    of its largest communicator where one was printed, else from the first record whose speaker names both rank
    and host. Speakers are taken once each, in the order they first speak: a rank's thousands of records share
    a few."""
    for who in dict.fromkeys(map(_WHO, records)):
        if who.rank is not None and who.host is not None:
            ids.host_of_rank.setdefault(who.rank, who.host)
    ids.host_of_rank.update(init_hosts)


def _metadata_exits(ids: IdentityMap, exit_codes: Mapping[str, int]) -> None:
    """The scheduler's exit codes, by rank or host; a rank the logs already gave an exit code keeps that one."""
    logged = {e.rank for e in ids.exits if e.rank is not None}
    for key, code in exit_codes.items():
        rank = int(key) if key.strip().isdigit() else None
        if rank is not None and rank in logged:
            continue
        host = ids.host_of_rank.get(rank) if rank is not None else key
        ids.exits.append(ExitRecord(rank, None, host, None, int(code), METADATA, 0))


def _ring_ranks(ids: IdentityMap, records: list[ContextRecord]) -> None:
    """``records``: the nccl_ring ones. Older logs print no init line, only rings: `Ring 00 : 2[3d000] ->
    3[3e000]` says the printer is rank 2. A ring's numbering is its communicator's, so it names only processes
    nothing else maps, and only when every ring line of that process agrees."""
    seen: dict[tuple[str, int], set[int]] = defaultdict(set)
    mapped = ids.by_host_pid  # a process mapped already is never numbered by its rings: its lines are not read
    for rec in records:
        host, pid = rec.who.host, rec.who.pid
        if host is not None and pid is not None and (host, pid) not in mapped:
            seen[(host, pid)].add(int(rec.fields["rank"]))
    for (host, pid), ranks in seen.items():
        if len(ranks) == 1 and (host, pid) not in ids.by_host_pid:
            rank = next(iter(ranks))
            ids.by_host_pid[(host, pid)] = rank
            ids.by_pid.setdefault(pid, rank)
            ids.host_of_rank.setdefault(rank, host)


def _device_offsets(ids: IdentityMap, records: list[ContextRecord]) -> None:
    """``records``: the nccl_comm ones. A host's rank - cudaDev, where every mapped init line agrees on it."""
    offsets: dict[str, set[int]] = defaultdict(set)
    for rec in records:
        who = rec.who
        if who.host and who.device is not None:
            rank = int(rec.fields["rank"])
            if ids.by_host_pid.get((who.host, who.pid or -1)) == rank:
                offsets[who.host].add(rank - who.device)
    for host, values in offsets.items():
        if len(values) == 1:
            ids.device_offset[host] = next(iter(values))


def _fill_exit_ranks(ids: IdentityMap) -> None:
    """Exits by pid or (host, local rank) that the logs map; the rest wait for correlator.local_ranks."""
    for rec in ids.exits:
        if rec.rank is None:
            rec.rank = ids.rank_of(rec.host, rec.pid, rec.local_rank)
        if rec.rank is not None and rec.pid is not None:
            ids.by_pid.setdefault(rec.pid, rec.rank)
