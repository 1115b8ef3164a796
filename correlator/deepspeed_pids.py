"""Each DeepSpeed worker's pid and rank, from what its node's launcher prints. Pure.

deepspeed/launcher/launch.py starts a node's workers in local-rank order (`for local_rank in range(0,
num_local_procs)`, RANK = global_rank_mapping[local_node][local_rank]) and keeps them in that order in `processes`:
- it logs `process {pid} spawned with command: ...` as it starts each one (recent releases), and
- its sigkill_handler, once a worker fails or the launcher is stopped, logs `Killing subprocess {pid}` for each one
  in the same order.
So the k-th distinct pid a node's launcher names is its local rank k. It also logs `nnodes={n},
num_local_procs={p}, node_rank={r}` and `dist_world_size={w}`: global_rank_mapping numbers the nodes' workers one
node after another (world_info's order, node_rank's), so where every node runs p workers (w = n * p, or each of
the n nodes says p) local rank k of node r is rank r * p + k. The kernel's OOM kill names the pid; this names its
rank. Under pdsh each line carries its node's name (pdsh's `host: ` prefix); a launcher run alone names none.

The launcher also sets the node's CUDA_VISIBLE_DEVICES to its world_info slots (set_visible_devices_envs:
",".join(local_accelerator_ids)) and passes each worker --local_rank / LOCAL_RANK; the engine then takes device
`local_rank` of those (runtime/engine.py, _set_distributed_vars: set_device(device_rank), device_rank defaulting
to local_rank). So the device a worker's own CUDA error names (c10's OOM: "GPU %d has a total capacity of", the
process's device index, counted within CUDA_VISIBLE_DEVICES) is its local rank: (node, device) is rank r * p + k.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from correlator.kept import ContextRecord

if TYPE_CHECKING:  # identity.py calls this while it builds the map
    from correlator.identity import IdentityMap

_PID_KINDS = ("ds_spawned", "ds_killing")  # context.py: the launcher naming its workers, in local-rank order


def deepspeed_ranks(ids: IdentityMap, of_kind: Mapping[str, list[ContextRecord]]) -> None:
    """Map each worker pid a DeepSpeed launcher named to its rank (ids.by_host_pid, ids.by_pid), and each node's
    device indexes to its workers' ranks (ids.rank_of_local_device)."""
    layout = _layout(of_kind)
    if layout is None:
        return
    node_rank, nproc = layout
    for host, node in node_rank.items():
        if host is not None:
            for local in range(nproc):
                ids.rank_of_local_device.setdefault((host, local), node * nproc + local)
    for host, pids in _pids_in_order(of_kind).items():
        if host not in node_rank or len(pids) != nproc:
            continue  # a launcher that named more (a restart) or fewer workers than it ran: no order to trust
        for local, pid in enumerate(pids):
            rank = node_rank[host] * nproc + local
            if host is not None:
                ids.by_host_pid.setdefault((host, pid), rank)
                ids.host_of_rank.setdefault(rank, host)
            ids.by_pid.setdefault(pid, rank)


def _layout(of_kind: Mapping[str, list[ContextRecord]]) -> tuple[dict[str | None, int], int] | None:
    """(host -> node_rank, workers a node) where every node runs as many workers, else None."""
    nodes = of_kind.get("ds_node", ())
    if not nodes:
        return None
    node_rank: dict[str | None, int] = {}
    sizes, counts = set(), set()
    for rec in nodes:
        node_rank.setdefault(rec.who.host, int(rec.fields["node_rank"]))
        sizes.add(int(rec.fields["nproc"]))
        counts.add(int(rec.fields["nodes"]))
    worlds = {int(rec.fields["world"]) for rec in of_kind.get("ds_world", ())}
    if len(sizes) != 1 or len(counts) != 1:
        return None
    nproc, nnodes = next(iter(sizes)), next(iter(counts))
    if worlds != {nnodes * nproc} and not (not worlds and len(node_rank) == nnodes):
        return None  # nodes of different sizes (or one not heard from): r * p is not the mapping's numbering
    return node_rank, nproc


def _pids_in_order(of_kind: Mapping[str, list[ContextRecord]]) -> dict[str | None, list[int]]:
    """host -> the distinct pids its launcher named, in the order it named them: the spawn lines where it printed
    them (they come first), else the kill lines."""
    out: dict[str | None, list[int]] = {}
    for kind in _PID_KINDS:
        named: dict[str | None, list[int]] = {}
        for rec in sorted(of_kind.get(kind, ()), key=lambda r: (r.source, r.line_no)):
            pids = named.setdefault(rec.who.host, [])
            if (pid := int(rec.fields["pid"])) not in pids:
                pids.append(pid)
        for host, pids in named.items():
            out.setdefault(host, pids)
    return out
