"""A GPU that failed under a process, seen from two sides: the kernel's Xid and the rank's CUDA error. Pure.

When a GPU falls off the bus (Xid 79), loses its GSP (Xid 119), or hits an uncorrectable ECC or NVLink error (Xid
48, 94/95, 74), the driver logs an Xid on the node, naming the GPU by PCI bus id, and the process that used the GPU
gets a CUDA error back from its next call: cudaErrorLaunchFailure ("unspecified launch failure"),
cudaErrorECCUncorrectable, cudaErrorNvlinkUncorrectable (CUDA runtime API, cudaError enum; NVIDIA's Xid catalog
lists these as what applications see). The Xid is the cause and the rank is its place. An Xid names its rank by
the pid it prints (kernel_rc.c `pid=%s`) or by the bus id NCCL's init line printed (identity.rank_of_pci); many
logs have neither (no NCCL_DEBUG, a container's pids), and then the two stay strangers: the node's Xid without a
rank, the rank's CUDA error without its cause. They are one failure when the logs hold exactly one node with a
GPU-fault Xid no process is known for, and exactly one rank that printed such a CUDA error, not known to run
elsewhere: the Xid's bus id is then that rank's GPU. Catalog entries tagged `gpu_fault_seen` are the CUDA errors.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from catalog.loader import Catalog
from catalog.model import Signature
from correlator.identity import IdentityMap, pci_bus
from schemas.findings import Finding, Role

SEEN_TAG = "gpu_fault_seen"
_GPU_FAULT_TAGS = frozenset({"hardware", "gsp", "fallen_off_bus"})  # an Xid of the GPU, not of the application


def pair_gpu_fault(findings: Sequence[Finding], catalog: Catalog, ids: IdentityMap,
                   present: Collection[str] | None = None) -> tuple[int, str] | None:
    """Tie the one unplaced GPU-fault Xid to the one rank that saw its GPU fail (ids.rank_of_bus, host_of_rank);
    the (rank, host), or None. ``present``: the signatures among ``findings``, where known: without both a GPU-fault
    Xid and a CUDA error that saw one, no finding is read."""
    if present is not None and not _both_sides(present, catalog):
        return None
    xids: dict[str, set[int]] = {}  # host -> the PCI buses of its unplaced GPU-fault Xids
    seen: set[int] = set()
    for f in findings:
        sig = catalog.get(f.signature)
        if sig is None or f.role in (Role.COLLATERAL, Role.CONTEXT):
            continue
        if SEEN_TAG in sig.tags:
            rank = f.speaker.rank if f.speaker.rank is not None else f.fields.get("rank")
            if isinstance(rank, int):
                seen.add(rank)
        elif _gpu_fault_xid(sig) and f.speaker.host is not None and f.speaker.rank is None:
            pci = f.fields.get("pci")
            bus = pci_bus(pci) if isinstance(pci, str) else None
            if bus is not None and not _placed(f, bus, ids):
                xids.setdefault(f.speaker.host, set()).add(bus)  # one name a host: naming.settle ran
    if len(xids) != 1 or len(seen) != 1:
        return None
    (host, buses), rank = next(iter(xids.items())), next(iter(seen))
    known = ids.host_of_rank.get(rank)
    # a rank known in its pod is on the node that ran that pod alone (pod_nodes.lone_pods)
    if len(buses) != 1 or (known is not None and known != host and ids.pod_on.get(host) != known):
        return None
    ids.host_of_rank.setdefault(rank, host)
    ids.rank_of_bus[(host, next(iter(buses)))] = rank
    return rank, host


def _both_sides(present: Collection[str], catalog: Catalog) -> bool:
    sigs = [sig for sig in map(catalog.get, present) if sig is not None]
    return any(SEEN_TAG in sig.tags for sig in sigs) and any(_gpu_fault_xid(sig) for sig in sigs)


def _gpu_fault_xid(sig: Signature) -> bool:
    return sig.id.startswith("xid.") and not _GPU_FAULT_TAGS.isdisjoint(sig.tags)


def _placed(f: Finding, bus: int, ids: IdentityMap) -> bool:
    """A process of a known rank is named by the Xid's pid or bus: no pairing is needed."""
    host, pid = f.speaker.host or "", f.fields.get("pid")
    return (isinstance(pid, int) and (host, pid) in ids.by_host_pid) or (host, bus) in ids.rank_of_bus
