"""The pids torchrun's agent names as it tears a node's workers down, each at its local rank. Pure.

When a worker fails, the agent's SubprocessContext._poll stops the others and then names the first failure
(pytorch/pytorch torch/distributed/elastic/multiprocessing/api.py): _close walks ``subprocess_handlers``, a dict
built ``for local_rank in range(self.nprocs)``, and logs "Sending process P closing signal SIGTERM" for each
worker still running, in local-rank order; then "failed (exitcode: N) local_rank: L (pid: F)". So where one
failure line and a run of n - 1 SIGTERMed pids sit together and the node runs n workers, only worker L had exited
and the pids are the other local ranks, in increasing order. Each pid then has its global rank where the local
ones are known: a kernel line that names a pid (an Xid's `pid=`, the OOM killer's victim) names its rank.
Where fewer pids are named (another worker had died too), nothing is placed: which one is missing is unknown.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from math import gcd

from correlator.identity import IdentityMap
from correlator.kept import ContextRecord, members
from correlator.local_ranks import LocalRanks
from correlator.speakers import who_from_path

NEAR = 3  # lines between the SIGTERM run and the failure line (the agent's own lines only, in its output)


def place_teardown_pids(ids: IdentityMap, local: LocalRanks, of_kind: Mapping[str, list[ContextRecord]]) -> None:
    """ids.by_host_pid learns each SIGTERMed worker's rank where its local rank follows from the order."""
    failures = of_kind.get("worker_failed", [])
    bounds = _workers_bounds(local) if failures else None
    if bounds is None:
        return
    runs = _by_source(of_kind.get("worker_sigterm", []))
    bases = _node_bases(local)
    for failed in failures:
        host = failed.who.host or _agent_host(ids, failed.source)
        run = _adjacent_run(runs.get(failed.source, ()), failed)
        if host is None or run is None:
            continue
        pids = [int(pid) for pid in members(run, "pid") if pid is not None]
        exited, workers = int(failed.fields["local_rank"]), len(pids) + 1
        if not _fits(workers, bounds) or exited >= workers or len(set(pids)) != len(pids):
            continue
        base = bases.get(host)
        for local_rank, pid in zip([r for r in range(workers) if r != exited], pids, strict=True):
            rank = local.global_of(host, failed.source, local_rank)
            if rank is None and base is not None:
                rank = base + local_rank  # the node's workers are numbered from its first rank (_workers_bounds)
            if rank is not None:
                ids.by_host_pid.setdefault((host, pid), rank)


def _agent_host(ids: IdentityMap, source: str) -> str | None:
    """The host an agent's output is from, where its lines name none: the host its failure table names (every
    row of one agent's table is its node's), else its file's name."""
    hosts = {row.host for row in ids.exits if row.source == source and row.host is not None}
    if len(hosts) == 1:
        return next(iter(hosts))
    return ids.host_of_source.get(source) or who_from_path(source).host


def _workers_bounds(local: LocalRanks) -> tuple[int, int] | None:
    """What the local ranks the logs tie to global ones say of how many workers a node runs: at least the highest
    local rank + 1, and a divisor of every node's first global rank (torchrun numbers a node's workers from
    node_rank * nproc_per_node: torch/distributed/elastic/agent/server/api.py, _assign_worker_ranks, global rank =
    base + local rank); (the least, the gcd of the nodes' first ranks, 0 where every known node is the first)."""
    locals_ = [lr for (_, lr), rank in local.by_node.items() if rank >= 0]
    if not locals_:
        return None
    return max(locals_) + 1, gcd(*(rank - lr for (_, lr), rank in local.by_node.items() if rank >= 0))


def _node_bases(local: LocalRanks) -> dict[str, int]:
    """Each host's first global rank, where the local ranks tied to global ones on it all say the same one (read
    once for every node: looked up per failure line, it was quadratic in nodes)."""
    seen: dict[str, set[int]] = {}
    for ((kind, name), lr), rank in local.by_node.items():
        if kind == "host" and name is not None and rank >= 0:
            seen.setdefault(name, set()).add(rank - lr)
    return {host: next(iter(b)) for host, b in seen.items() if len(b) == 1}


def _fits(workers: int, bounds: tuple[int, int]) -> bool:
    """Whether a node of ``workers`` workers agrees with those bounds: where a node other than the first is known,
    its first rank is a multiple of it (one more worker dead before the teardown makes one fewer pid: 3 of 4
    workers divides no first rank 4, 8, 12 ...)."""
    least, step = bounds
    return workers == least if step == 0 else workers >= least and step % workers == 0


def _by_source(runs: Sequence[ContextRecord]) -> dict[str, list[ContextRecord]]:
    """The runs of each output, in their order: every node's agent has its failure line, and looking for its run
    among every node's was quadratic in nodes (at 8,192 ranks, 9% of correlation's counted lines)."""
    found: dict[str, list[ContextRecord]] = {}
    for run in runs:
        found.setdefault(run.source, []).append(run)
    return found


def _adjacent_run(runs: Sequence[ContextRecord], failed: ContextRecord) -> ContextRecord | None:
    """The run of SIGTERM lines printed just before the failure line (or just after it, as some releases and
    collectors order them), among ``runs``: those of its output."""
    near = [run for run in runs if abs(run.line_no - failed.line_no) <= _span(run)]
    return min(near, key=lambda run: abs(run.line_no - failed.line_no), default=None)


def _span(run: ContextRecord) -> int:
    """How far a run's first line may sit from the failure line: its own length and a few lines."""
    return len(members(run, "pid")) + NEAR


SPAWN_NEAR = 20  # lines between mp.spawn's SIGTERM run and its exception: the parent's traceback sits between


def place_spawn_pids(ids: IdentityMap, local: LocalRanks, of_kind: Mapping[str, list[ContextRecord]],
                     named: Collection[int] = ()) -> None:
    """torch.multiprocessing.spawn's teardown (spawn.py, ProcessContext.join): the processes still alive are
    SIGTERMed in process-index order, then ProcessExitedException names the failed index. Where the run holds every
    other index's pid (n - 1 of them) and the job is one node, the index is the rank (mp.spawn passes it to each
    process as its first argument, the rank on one node): ids.by_pid learns each pid's rank. ``named``: the ranks
    the job's lines name; one node where the logs say so, or where the n processes are the whole job (no rank
    named at or above n, no larger world)."""
    exited = of_kind.get("spawn_exited", [])
    if not exited:
        return
    runs = _by_source(of_kind.get("worker_sigterm", []))
    for failed in exited:
        before = [run for run in runs.get(failed.source, ()) if 0 < failed.line_no - run.line_no <= _span(run) +
                  SPAWN_NEAR]
        run = max(before, key=lambda r: r.line_no, default=None)
        if run is None:
            continue
        pids = [int(pid) for pid in members(run, "pid") if pid is not None]
        index, size = int(failed.fields["local_rank"]), len(pids) + 1
        whole = bool(named) and max(named) < size and ids.world_size in (None, size)
        if index >= size or len(set(pids)) != len(pids) or not (local.single_node or whole):
            continue
        host = failed.who.host
        for rank, pid in zip([r for r in range(len(pids) + 1) if r != index], pids, strict=True):
            ids.by_pid.setdefault(pid, rank)
            if host is not None:
                ids.by_host_pid.setdefault((host, pid), rank)
