"""A Ray actor that died, and the kernel kill on the node that ran its pod: one death seen from two sides. Pure.

Ray's ActorDiedError (python/ray/exceptions.py) says an actor's worker process died ("The actor is dead because
its worker process has died", a SYSTEM_ERROR exit) and names it by pid and node address; Ray Train's worker table
gives its rank (correlator/ray_reports.py). It does not say what ended it. Under KubeRay each Ray node is a pod, and
the kernel of the Kubernetes node that ran the pod logs an OOM kill ("Memory cgroup out of memory: Killed process
%d", linux mm/oom_kill.c) with the pid of the host's pid namespace, which no line of the pod prints. Where the logs
hold exactly one dead actor of a known rank and exactly one such kill of a process no rank is known for, on the
node that ran that rank's pod and no other of the job's (pod_nodes.lone_pods), the kill is that actor's death.
"""

from __future__ import annotations

from collections.abc import Sequence

from catalog.loader import Catalog
from correlator.identity import IdentityMap
from schemas.findings import Finding, Role

ACTOR_DIED = "ray.actor_died"


def tie_killed_actor(findings: Sequence[Finding], catalog: Catalog, ids: IdentityMap) -> int | None:
    """Record the one unowned kill's (node, pid) as the one dead actor's rank (ids.by_host_pid); the rank, or None."""
    if not ids.pod_on:
        return None  # answered without reading a finding: no pod listing, no node of a pod
    dead = {_rank(f, ids) for f in findings if f.signature == ACTOR_DIED}
    dead.discard(None)
    if len(dead) != 1:
        return None
    rank = next(iter(dead))
    assert rank is not None
    kills: set[tuple[str, int]] = set()
    for f in findings:
        sig = catalog.get(f.signature)
        pid = f.fields.get("pid")
        if (sig is None or "sigkill" not in sig.tags or f.role is not Role.INITIATING or f.speaker.host is None
                or f.speaker.rank is not None or not isinstance(pid, int)):
            continue
        if ids.rank_of(f.speaker.host, pid) is None:
            kills.add((f.speaker.host, pid))
    if len(kills) != 1:
        return None
    node, pid = next(iter(kills))
    pod, known = ids.pod_on.get(node), ids.host_of_rank.get(rank)
    if pod is None or known is None or pod not in (known, ids.pod_address.get(known)):
        return None  # the rank's host is its pod, or the pod's address (Ray's name for its node)
    ids.by_host_pid.setdefault((node, pid), rank)
    return rank


def _rank(f: Finding, ids: IdentityMap) -> int | None:
    """The dead actor's rank: its line's, else the worker table's for the pid and address ActorDiedError names."""
    if f.speaker.rank is not None:
        return f.speaker.rank
    if f.speaker.host is None or f.speaker.pid is None:
        return None
    return ids.rank_of(f.speaker.host, f.speaker.pid)
