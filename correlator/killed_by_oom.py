"""A rank that a launcher reports SIGKILLed, and the one host whose kernel killed a process no rank is known to
own: one death seen from two sides. Pure.

The kernel's OOM killer (linux mm/oom_kill.c, oom_kill_process: "Out of memory: Killed process %d (%s)", then
SIGKILL) and a cgroup's (memory.max) end a process with SIGKILL; its launcher then reports that rank's exit as
-9 (torchrun, horovodrun's "Process name: N / Exit code: -9") or 137. Where the launcher's report names the rank
but no line places it on a host, and the kernel's line names the host and a pid that no line maps to a rank,
neither says the whole: the rank is on that host when it is the only rank killed so and that the only host with
such a kill, not known to run a single rank of its own (a node runs several: the ranks known on it do not rule
another out). Catalog entries tagged `sigkill` are those kills.
"""

from __future__ import annotations

from collections.abc import Sequence

from catalog.loader import Catalog
from correlator.dead_actor_kills import tie_killed_actor
from correlator.identity import IdentityMap
from correlator.named_by_elimination import Placement
from schemas.findings import Finding, Role

SIGKILL_CODES = frozenset({-9, 137})  # a negative signal (torchrun, horovodrun) or 128 + 9 (a shell, a container)


def place_killed_rank(findings: Sequence[Finding], catalog: Catalog, ids: IdentityMap) -> Placement | None:
    """Put the SIGKILLed rank on the host whose kernel killed an unowned process (ids.host_of_rank, by_host_pid);
    where, or None."""
    tie_killed_actor(findings, catalog, ids)  # Ray's dead actor and its pod's node's kill: no placement to return
    killed = {e.rank for e in ids.exits if e.exit_code in SIGKILL_CODES and e.rank is not None}
    unplaced = [rank for rank in killed if rank not in ids.host_of_rank]
    if len(killed) != 1 or len(unplaced) != 1:  # answered without reading a finding (most jobs: no SIGKILL)
        return None
    # a host known to run one rank runs no other (one_rank_hosts.py); one with ranks known may run more: a node
    # runs several, and NCCL's init line is often printed by one rank of each (its local rank 0)
    ranked_hosts = set(ids.sole_rank)
    kills: dict[str, set[int]] = {}
    for f in findings:
        sig = catalog.get(f.signature)
        pid = f.fields.get("pid")
        if (sig is None or "sigkill" not in sig.tags or f.role is not Role.INITIATING or f.speaker.host is None
                or f.speaker.rank is not None or f.speaker.host in ranked_hosts):
            continue
        if isinstance(pid, int) and ids.rank_of(f.speaker.host, pid) is not None:
            continue  # a process of a known rank: not an unowned kill
        kills.setdefault(f.speaker.host, set()).update([pid] if isinstance(pid, int) else [])
    if len(killed) != 1 or len(unplaced) != 1 or len(kills) != 1:
        return None
    (host, pids), rank = next(iter(kills.items())), unplaced[0]
    ids.host_of_rank[rank] = host
    if len(pids) == 1:
        ids.by_host_pid.setdefault((host, next(iter(pids))), rank)
    return Placement(host, True, f"host {host}: rank {rank} exited by SIGKILL and {host}'s kernel killed a "
                                 "process no other line places (placed by elimination)")
