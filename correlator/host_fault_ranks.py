"""A node's line about one of its processes or GPUs, and the one rank of that node the job singles out: one
failure. Pure.

Some kernel lines name one process or one GPU of the node: the hung-task watchdog's "INFO: task %s:%d blocked for
more than %ld seconds." (kernel/hung_task.c, check_hung_task), an Xid's "NVRM: Xid (PCI:%s): %d, pid=%s, ..." (the
GPU by bus id, the process by the host's pid), a segfault's "%s[%d]: segfault at %lx ip ..." (arch/x86/mm/fault.c,
show_signal_msg). Where nothing maps that pid or bus to a rank (a container's pids differ from the host's; no
NCCL_DEBUG, no busId), the line names its node alone. The process it stopped is the rank that stopped taking part
in the job's collectives, and the job's other logs often single that rank out: its ProcessGroupNCCL status or dump
signal says it enqueued fewer collectives than the others ("last enqueued NCCL work"), its Flight Recorder dump
lags (collectives.py), or the others name it as the one they wait on (Horovod's stall inspector, "[missing ranks:
1]"). When one node has such a line and the job singles out exactly one rank, not known to run on another node, the two
are one failure (as gpu_faults.py pairs an Xid with the one rank that saw its GPU fail): the node's line is the
cause, that rank its place.
"""

from __future__ import annotations

from collections.abc import Sequence

from correlator.events import NOT_JOINED, Event, Target
from correlator.exits import exit_report
from correlator.identity import IdentityMap
from correlator.members import IMPLICATES_NAMED, ROLE_INITIATING

_ONE_OF_THE_NODE = ("pid", "pci")  # fields by which a node's line names one process or one GPU of it


def pin_node_faults(failures: Sequence[Event], ids: IdentityMap) -> tuple[int, str] | None:
    """Re-target the node's one-process lines to the one rank singled out on that node; the (rank, host), or
    None where the logs do not say it that plainly (several nodes with such lines, none or several such ranks)."""
    node_lines: dict[str, list[Event]] = {}
    for ev in failures:
        if (ev.reporter.rank is None and ev.reporter.host is not None and ev.role is ROLE_INITIATING
                and not ev.stale and any(k in ev.best.fields for k in _ONE_OF_THE_NODE)):
            if _placed(ev, ids):  # its GPU or process is a known rank's (gpu_faults.py, a pid map): not this rule's
                return None
            node_lines.setdefault(ev.reporter.host, []).append(ev)
    if len(node_lines) != 1:
        return None
    host, events = next(iter(node_lines.items()))
    pod = ids.pod_on.get(host)  # the job's one pod on that Kubernetes node: the name its ranks know (pod_nodes.py)
    singled = _singled_out(failures)
    if len(singled) != 1:
        return None
    rank = next(iter(singled))
    known = ids.host_of_rank.get(rank)
    if known is not None and known not in (host, pod):  # (as gpu_faults.py: a rank not known to run elsewhere)
        return None
    where = known or pod or host
    ids.host_of_rank.setdefault(rank, where)
    for ev in events:
        ev.reporter = Target(rank, where)
        ev.implicated = [ev.reporter]
    return rank, where


def _placed(ev: Event, ids: IdentityMap) -> bool:
    host, fields = ev.reporter.host, ev.best.fields
    pci, pid = fields.get("pci"), fields.get("pid")
    return ((isinstance(pci, str) and ids.rank_of_pci(host, pci) is not None)
            or (isinstance(pid, int) and ids.rank_of(host, pid) is not None))


def _singled_out(failures: Sequence[Event]) -> set[int]:
    """Ranks the collective sequence numbers show behind the others (not the mere absence from a timeout list, an
    inference from silence), or that others' lines name as the one they wait on; never an exit report."""
    out: set[int] = set()
    for ev in failures:
        if ev.stale or ev.absence or exit_report(ev):  # (the absence lag is a NAMED entry's event too)
            continue
        if (ev.signature.id == NOT_JOINED and not ev.absence) or (
                ev.signature.implicates is IMPLICATES_NAMED and ev.role is ROLE_INITIATING):
            out.update(t.rank for t in ev.implicated if t.rank is not None)
    return out
