"""Events: the findings of one traceback or multi-line message, kept together, and whom each one implicates."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from itertools import groupby
from operator import attrgetter
from typing import Any

from catalog.loader import Catalog
from catalog.model import Signature
from correlator.collectives import Lag
from correlator.event import Event as Event  # re-exported: the correlator imports it from here
from correlator.event import Target as Target
from correlator.identity import IdentityMap
from correlator.kept import ContextRecord
from correlator.members import (
    CATEGORY_LAUNCHER,
    CATEGORY_SCHEDULER,
    IMPLICATES_MAIN,
    IMPLICATES_NAMED,
    IMPLICATES_PEER,
    IMPLICATES_SELF,
    ROLE_COLLATERAL,
    ROLE_CONTEXT,
    ROLE_EITHER,
    ROLE_INITIATING,
    SCOPE_NODE,
    SCOPE_RANK,
)
from schemas.findings import Finding, Role, Speaker

_NO_OFFSET = timedelta(0)

NOT_JOINED = "pytorch.c10d.desync_not_joined"
MAX_TASKS = 1 << 16  # a task range longer than any job is not a range of ranks
_UNRANKED: Any = object()  # a (signature, generic, role) not looked up yet
_ORDER = attrgetter("order")
_SOURCE = attrgetter("source")
_BEST_ORDER = attrgetter("best.order")
# The launcher's and scheduler's reports of an ending: a table, its rows, an exit line, the teardown after it. An
# exit code with a class of its own (SIGKILL, SIGSEGV, SIGBUS, SIGTERM from outside) is not among them: its entry
# says what such an ending usually means, and how to confirm it.
NO_ERROR_FILE = "torchrun.no_error_file"
REPORTS_ONLY = frozenset({"torchrun.child_failed_error", "torchrun.root_cause_header", "torchrun.failure_rank_row",
                          "torchrun.failure_exit_row", "torchrun.worker_failed", "torchrun.worker_sigabrt",
                          "torchrun.sending_sigterm",
                          "torchrun.restart_attempt", NO_ERROR_FILE, "slurm.task_exit",
                          # spawn's "-- Process N terminated with the following error:" heads the worker's own
                          # traceback: the error under it says what failed, the head says whose it is
                          "pytorch.mp.spawn_process_failed",
                          # paddle.distributed.launch's "Container rank N status failed ... code C log F", and
                          # the older launcher's "ABORT!!! ... the trainer process with rank=[N] was aborted"
                          "paddle.launch.container_failed", "paddle.launch.trainers_aborted"})
# Signatures whose `device` is the speaking process's own CUDA device index, counted within its
# CUDA_VISIBLE_DEVICES: c10's CUDACachingAllocator OOM ("CUDA out of memory. ... GPU %d has a total capacity of")
OWN_DEVICE = frozenset({"cuda.oom"})
_ROLE_RANK = {ROLE_INITIATING: 3, ROLE_EITHER: 2, ROLE_COLLATERAL: 1, ROLE_CONTEXT: 0}
_SEVERITY_RANK = {"critical": 3, "error": 2, "warning": 1, "info": 0}


def victims_only(own: Sequence[Event], pointing: Sequence[Event]) -> bool:
    """A suspect's own lines are all a victim's (its watchdog's abort, the driver's report that its actor died)
    while others' lines point at it (a peer's IB completion error naming its node): those say what failed."""
    return bool(pointing) and all(ev.role is ROLE_COLLATERAL for ev in own)


def _rank_of(f: Finding, ids: IdentityMap) -> int | None:
    if f.speaker.rank is not None:
        return f.speaker.rank
    rank = ids.rank_of(f.speaker.host, f.speaker.pid)
    if rank is None and f.speaker.pid is not None and (f.speaker.host, f.speaker.pid) not in ids.by_host_pid:
        rank = ids.rank_of_device(f.speaker.host, f.speaker.device)
    return rank


def _host_of(f: Finding, ids: IdentityMap) -> str | None:
    return f.speaker.host or ids.host_of_line.get((f.source, f.line_no)) or ids.host_of_source.get(f.source)


def _target(rank: int | None, host: str | None, ids: IdentityMap) -> Target:
    if rank is not None and host is None:
        host = ids.host_of_rank.get(rank)
    return Target(rank, host)


def _self_target(f: Finding, sig: Signature, ids: IdentityMap) -> Target:
    fields = f.fields
    host = _host_of(f, ids)
    if isinstance(fields.get("host"), str):
        mapped = ids.host_of(str(fields["host"]))
        host = mapped or str(fields["host"])
    rank = fields.get("rank") if isinstance(fields.get("rank"), int) else None
    pid = fields.get("pid") if isinstance(fields.get("pid"), int) else None
    local_rank = fields.get("local_rank") if isinstance(fields.get("local_rank"), int) else None
    if isinstance(fields.get("pci"), str):
        kernel = _kernel_rank(host, pid, str(fields["pci"]), ids)
        if kernel is not None:
            return _target(*kernel, ids)
        pid = None  # no process of the host: the line's speaker decides, as for an Xid without a pid
    elif rank is None and (pid is not None or local_rank is not None):
        rank = ids.rank_of(host, pid, local_rank)
        if rank is None and local_rank is not None and (host is not None or _one_node_source(f.source, ids)):
            rank = next((e.rank for e in ids.exits if e.local_rank == local_rank and e.rank is not None
                         and (e.host == host or host is None)), None)
        if rank is None and local_rank is not None and ids.one_node:
            rank = local_rank  # a launcher's report by local rank (mp.spawn's process index) on a one-node job
    if rank is None and pid is None and local_rank is None and not isinstance(fields.get("host"), str):
        rank = _rank_of(f, ids)
    if rank is None and host is not None and sig.id in OWN_DEVICE and isinstance(fields.get("device"), int):
        rank = ids.rank_of_local_device.get((host, int(fields["device"])))  # the launcher made it the local rank
    if rank is None and host is not None and host in ids.sole_rank:
        rank = ids.sole_rank[host]  # every process of the job on that host is its one rank's
    if rank is None and isinstance(fields.get("pci"), str):
        rank = ids.rank_of_pci(host, str(fields["pci"]))
        if rank is not None:
            return _target(rank, host, ids)  # the kernel names the GPU; NCCL's init line names its rank
    if sig.scope is SCOPE_NODE and rank is None:
        return Target(None, host)
    return _target(rank, host, ids)


def _one_node_source(source: str, ids: IdentityMap) -> bool:
    """A local rank without its host may be looked up in the launcher's exit reports only where they name at
    most one node and ``source`` holds one node's output: with several nodes, local rank 2 is a rank on each."""
    if ids.local_ranks is not None and source in ids.local_ranks.shared:
        return False
    return len({e.host for e in ids.exits if e.host is not None}) <= 1


def _kernel_rank(host: str | None, pid: int | None, pci: str, ids: IdentityMap) -> tuple[int, str] | None:
    """The rank a node's Xid is about: the process it names (kernel_rc.c `pid=%s`, the RM client's ProcessID, a
    pid of the host's, so only a process of the same host printing that pid is it; a container's own pids differ
    from the host's, and then no match is made rather than a wrong one), else the rank whose NCCL init line
    printed the GPU's bus id, else the host's one rank; on the host, or in the one pod of the job a Kubernetes
    node ran (correlator.pod_nodes). With the rank, its host as the job's identity knows it."""
    if host is None:
        return None
    for where in (host, ids.pod_on.get(host)):
        if where is None:
            continue
        rank = ids.by_host_pid.get((where, pid)) if pid is not None else None
        if rank is None and pid is not None and where == host:
            rank = _unhosted_pid_rank(pid, host, ids)
        if rank is None:
            rank = ids.rank_of_pci(where, pci)
        if rank is None and where != host:
            rank = ids.sole_rank.get(where)
        if rank is not None:
            return rank, ids.host_of_rank.get(rank) or where
    return None


def _unhosted_pid_rank(pid: int, host: str, ids: IdentityMap) -> int | None:
    """The rank of a process that printed its pid on a line naming no host (vLLM's `(VllmWorker rank=R pid=P)`
    prefix, multiproc_executor.py; the OOM kill's pid is read the same way, IdentityMap.rank_of), where that rank
    is known on no other host than the kernel's. A container's pids differ from the host's: no match is made."""
    rank = ids.by_pid.get(pid)
    if rank is None or ids.host_of_rank.get(rank) not in (None, host):
        return None
    return rank


_NAMING_FIELDS = frozenset(("host", "pid", "rank", "local_rank", "pci"))  # what says whose a line is
# what says whom a line is about: its own process, or the peer it lost (NCCL's `Call to recv from <peer> failed`
# heads the back trace that ends in the proxy's `[Proxy Service <its own rank>] Failed to execute operation`)
_WHOSE_FIELDS = _NAMING_FIELDS | {"peer"}


def _implicated(ev: Event, ids: IdentityMap, peers: dict[str, tuple[Target, ...] | None] | None = None
                ) -> str | None:
    """Sets whom ``ev`` implicates (its ``implicated``, or the peer address no host is known for). ``peers``: what
    each peer address came to before (build_events: every survivor of a dead rank names the same address, and
    the answer depends on the address alone); returns an address looked up and mapped to a host, for the caller
    to store its answer, shared, under it."""
    sig, f = ev.signature, ev.best
    if sig.implicates is IMPLICATES_SELF:
        # A message that runs on names whom on a later line (Ray's OOM kill: "Task was killed ...", then "Memory
        # on the node (IP: ...) where the task (..., pid=...)"): that line says whose it is.
        naming = next((g for g in ev.findings if (g.signature == sig.id or g.signature in REPORTS_ONLY)
                       and not _NAMING_FIELDS.isdisjoint(g.fields)),
                      f) if len(ev.findings) > 1 and _NAMING_FIELDS.isdisjoint(f.fields) else f
        ev.implicated = [_self_target(naming, sig, ids)]
    elif sig.implicates is IMPLICATES_NAMED:
        # every line of the event that names ranks (srun prints its task exits in a run, one event)
        named = dict.fromkeys(r for g in ev.findings if g.signature == sig.id for r in task_ids(g.fields))
        ev.implicated = [_target(r, None, ids) for r in named or task_ids(f.fields)]
    elif sig.implicates is IMPLICATES_PEER and isinstance(f.fields.get("peer"), str):
        peer = str(f.fields["peer"])
        if peers is not None and peer in peers:
            known = peers[peer]
            if known is None:
                ev.unmapped_peer = peer
            else:
                ev.implicated = known
            return None
        host = ids.host_of(peer)
        if host is None:
            ev.unmapped_peer = peer
            if peers is not None:
                peers[peer] = None
            return None
        on_host = ids.ranks_on(host)
        ev.implicated = [Target(on_host[0] if len(on_host) == 1 else None, host)]
        return peer
    return None


def task_ids(fields: Mapping[str, object]) -> list[int]:
    """The ranks a line names: `rank`, and `ranks` as srun and torchrun print lists ("1,3", "0-2,4-7")."""
    rank = fields.get("rank")
    ranks: list[int] = [rank] if isinstance(rank, int) else []
    listed = fields.get("ranks")
    if isinstance(listed, int):  # a list of one, read as a number
        ranks.append(listed)
    elif isinstance(listed, str):
        for part in listed.replace(" ", "").split(","):
            low, _, high = part.partition("-")
            if low.isdigit() and (high.isdigit() or not high) and int(high or low) - int(low) < MAX_TASKS:
                ranks.extend(range(int(low), int(high or low) + 1))
    return ranks


def event_rank(finding: Finding, sig: Signature) -> tuple[int, int, int, int, int]:
    """Order findings inside one event: any line over a launcher's report of how a process ended (the report is
    how a cause ends, never the cause where the event holds another line), specific over generic, causes over
    wrappers and victims, severe first."""
    return (0 if sig.id in REPORTS_ONLY else 1, 0 if finding.generic else 1, 0 if sig.wrapper else 1,
            _ROLE_RANK[finding.role], _SEVERITY_RANK.get(sig.severity, 0))


def _ranked(f: Finding, catalog: Catalog) -> tuple[int, Signature, bool] | None:
    """event_rank(f, its signature) as one int that orders as the tuple does, the signature, and whether it
    implicates the main process; None for a signature the catalog does not hold."""
    sig = catalog.get(f.signature)
    if sig is None:
        return None
    report, generic, wrapper, role, severity = event_rank(f, sig)
    return (((report * 4 + generic) * 4 + wrapper) * 4 + role) * 4 + severity, sig, sig.implicates is IMPLICATES_MAIN


def reports_exit(sig: Signature) -> bool:
    """A launcher's entry, or the scheduler's about one task: its lines with an exit code report how a process
    ended (see exits.exit_report)."""
    return sig.category is CATEGORY_LAUNCHER or (sig.category is CATEGORY_SCHEDULER and sig.scope is SCOPE_RANK)


def _groups(findings: Sequence[Finding], catalog: Catalog) -> Iterator[list[Finding]]:
    """The findings of each event, by (source, first line, whether it reports an exit), in the order each event's
    first finding comes. One source's events at a time where each source's findings come together (they do, as
    read): a key and a list for every event of the job, held at once, were the peak of building them (0.5 KB a
    rank at 8,192 ranks; issue 23). The events are those one map of the whole job makes, in its order."""
    # An exit report is never part of another message: srun's `task N: Exited` lines printed right after the
    # last traceback are srun's, not the traceback's, and would otherwise hide its exception.
    runs = [source for source, _ in groupby(map(_SOURCE, findings))]
    by_source = len(runs) == len(set(runs))
    del runs
    groups: dict[tuple[str, int, bool], list[Finding]] = defaultdict(list)
    exit_sigs: dict[str, bool] = {}
    source: str | None = None
    for f in findings:
        if by_source and f.source != source:
            yield from groups.values()
            groups, source = defaultdict(list), f.source
        reports = exit_sigs.get(f.signature)
        if reports is None:
            entry = catalog.get(f.signature)
            reports = exit_sigs[f.signature] = entry is not None and reports_exit(entry)
        groups[(f.source, f.event, reports and ("exit_code" in f.fields or "signal" in f.fields))].append(f)
    yield from groups.values()


def build_events(findings: Sequence[Finding], catalog: Catalog, ids: IdentityMap,
                 context_read: frozenset[str] | None = None) -> list[Event]:
    """The events of ``findings``, in order. With ``context_read``, an event whose best line is a context line is
    made only where one of its lines is of those signatures: the caller reads no other (a survivor's work status
    is one event a rank, which nothing after the failures are picked reads; issue 23: memory per rank)."""
    # A 4,096-rank job's 35,000 findings are of a dozen signatures: each (signature, generic, role) is ranked once,
    # its event_rank packed into one int (each part is below 4), with whether it waits on the main process.
    ranked: dict[tuple[str, bool, Role], tuple[int, Signature, bool] | None] = {}
    # one Target a value: a rank's events name it again and again (frozen: sharing changes nothing read). Keyed
    # by its (rank, host), and a tuple of them by their identities: hashed in C (a Target hashes in Python code)
    targets: dict[tuple[int | None, str | None], Target] = {}
    named: dict[tuple[int, ...], tuple[Target, ...]] = {}
    peers: dict[str, tuple[Target, ...] | None] = {}  # see _implicated
    events = []
    for members in _groups(findings, catalog):
        best: Finding | None = None
        best_key: tuple[int, bool, bool, int] | None = None
        sig: Signature | None = None
        waiting: Finding | None = None  # the earliest line of the event that waits on the main process
        for f in members:
            facts = ranked.get((f.signature, f.generic, f.role), _UNRANKED)
            if facts is _UNRANKED:
                facts = ranked[(f.signature, f.generic, f.role)] = _ranked(f, catalog)
            if facts is None:
                continue
            if len(members) == 1:  # most events (a rank's lone timeout or reset): nothing to weigh it against
                best, sig, waiting = f, facts[1], f if facts[2] else None
                break
            # of lines that rank alike, one that does not yield to another of the message (catalog `yields_to`: the
            # AER before the Xid 79 it led to), then the one that says whose it is (srun's `task 8: Out Of Memory`
            # under slurmstepd's `Detected 1 oom_kill event`, one message), then the first
            stays = not facts[1].yields_to or all(m.signature not in facts[1].yields_to for m in members)
            key = (facts[0], stays, not _WHOSE_FIELDS.isdisjoint(f.fields), -f.order)
            if best_key is None or key > best_key:
                best, best_key, sig = f, key, facts[1]
            if facts[2] and (waiting is None or f.order < waiting.order):
                waiting = f
        if best is None or sig is None:
            continue
        if context_read is not None and best.role is ROLE_CONTEXT and all(
                f.signature not in context_read for f in members):
            continue
        rank, host = _rank_of(best, ids), _host_of(best, ids)
        if rank is not None and host is None:  # as _target
            host = ids.host_of_rank.get(rank)
        reporter = targets.get((rank, host)) or targets.setdefault((rank, host), Target(rank, host))
        ordered = (best,) if len(members) == 1 else tuple(sorted(members, key=_ORDER))
        ev = Event(best, sig, ordered, reporter)
        peer = _implicated(ev, ids, peers)
        # one tuple a distinct value too: a rank's events name the same targets (a tuple here is one shared already)
        if ev.implicated and type(ev.implicated) is not tuple:
            implicated = tuple([targets.setdefault((t.rank, t.host), t) for t in ev.implicated])
            ev.implicated = named.setdefault(tuple(map(id, implicated)), implicated)
            if peer is not None:
                peers[peer] = ev.implicated
        # A traceback through such a frame usually ends in the timeout it led to, which is the event's best line.
        if waiting is not None and reporter.rank != 0:
            ev.waits_on = (_target(0, None, ids), waiting)
        events.append(ev)
    events.sort(key=_BEST_ORDER)
    return events


def lag_events(lags: Iterable[Lag], catalog: Catalog, ids: IdentityMap, weights: dict[str, float]) -> list[Event]:
    """Collective-progress evidence as events naming the rank, so that it is weighed and cited like any line."""
    sig = catalog.get(NOT_JOINED)
    if sig is None:
        return []
    out = []
    for order, lag in enumerate(lags):
        target = _target(lag.rank, None, ids)
        f = Finding(signature=sig.id, role=sig.role, source=lag.source, line_no=lag.line_no, text=lag.text,
                    speaker=Speaker(rank=lag.rank, host=target.host), order=(1 << 62) + order)
        out.append(Event(f, sig, [f], target, [target], weight=weights[lag.kind], reason=lag.reason,
                         absence=lag.kind == "absent"))
    return out


def clock_offsets(events: list[Event], context: Iterable[ContextRecord] = (),
                  ids: IdentityMap | None = None) -> dict[str | None, timedelta]:
    """Per-host clock offsets from lines that happen together: the same collective failing everywhere.

    Ranks of one job time out on the same SeqNum within a second or two of each other (and abort on it within
    seconds when a peer dies), so the spread of those lines between hosts is mostly clock skew.
    """
    by_seq: dict[int, dict[str | None, list[float]]] = defaultdict(lambda: defaultdict(list))
    for ev in events:
        f = ev.best
        seq = f.fields.get("seq")
        if isinstance(seq, int) and f.time is not None and f.clock == "wall" and ev.role is ROLE_COLLATERAL:
            by_seq[seq][ev.reporter.host].append(f.time.timestamp())
    for rec in context:
        if rec.kind != "pg_status":
            continue
        seq = rec.fields.get("seq")
        if isinstance(seq, int) and rec.time is not None:
            host = rec.who.host or (ids.host_of_rank.get(rec.who.rank) if ids and rec.who.rank is not None else None)
            by_seq[seq][host].append(rec.time.timestamp())
    offsets: dict[str | None, list[float]] = defaultdict(list)
    for hosts in by_seq.values():
        if len(hosts) < 2:
            continue
        medians = {h: sorted(ts)[len(ts) // 2] for h, ts in hosts.items()}
        center = sorted(medians.values())[len(medians) // 2]
        for host, value in medians.items():
            offsets[host].append(value - center)
    return {h: timedelta(seconds=sorted(v)[len(v) // 2]) for h, v in offsets.items()}


def when(ev: Event, offsets: Mapping[str | None, timedelta]) -> datetime | None:
    """When ``ev`` was printed by the job's clock (its host's offset taken off), if it carries a wall-clock time."""
    best = ev.best
    if best.time is None or best.clock != "wall":
        return None
    return best.time - offsets.get(ev.reporter.host, _NO_OFFSET)
