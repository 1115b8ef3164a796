"""The kernel's kill of a DataLoader worker, tied to the rank whose worker it was. Pure.

A rank whose data-loading subprocess is killed raises "DataLoader worker (pid N) is killed by signal: Killed"
(torch/utils/data/_utils/signal_handling.py via torch/csrc/DataLoader.cpp), naming the worker's pid; the
kernel's OOM killer names the same pid on its node ("Out of memory: Killed process N (pt_data_worker)",
mm/oom_kill.c). The worker pid is the rank's by that line alone: nothing else maps it, because the worker is not
the rank's own process. Both lines carry it as `worker_pid`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from correlator.identity import IdentityMap
from correlator.sieve import with_field_at
from schemas.findings import Finding


def worker_kills(findings: Sequence[Finding], ids: IdentityMap) -> list[Finding] | None:
    """``findings`` with each host's kill of a worker pid a rank named spoken for that rank (and the rank placed on
    the host where nothing placed it), or None when there is none."""
    owner: dict[int, int] = {}  # worker pid -> the rank that named it
    at = with_field_at(findings, "worker_pid")  # the few lines that name a worker pid, found in C
    for i in at:
        f = findings[i]
        pid = f.fields.get("worker_pid")
        if isinstance(pid, int) and f.speaker.rank is not None:
            owner.setdefault(pid, f.speaker.rank)
    if not owner:
        return None
    out, changed = list(findings), False
    for i in at:
        f = out[i]
        pid, host = f.fields.get("worker_pid"), f.speaker.host
        rank = owner.get(pid) if isinstance(pid, int) and f.speaker.rank is None and host is not None else None
        known = ids.host_of_rank.get(rank) if rank is not None else None
        if rank is None or host is None or (known is not None and known != host):
            continue
        ids.host_of_rank.setdefault(rank, host)
        out[i] = replace(f, speaker=replace(f.speaker, rank=rank))
        changed = True
    return out if changed else None
