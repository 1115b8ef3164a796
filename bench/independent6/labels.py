"""What a reader of the written files could tell: a rank only with a clue that names it, else the host when a
clue names that, else neither. Clues are looked for in the written text, so a line a launcher cut off is no clue."""

from __future__ import annotations

import re

from .kinds import KINDS
from .story import Job

# SkyPilot's node prefix (layouts.sky_prefix), stripped so a multi-line table reads as the agent wrote it
SKY_PREFIX = re.compile(r"^(?:\x1b\[36m)?\((?:head|worker\d+), rank=\d+, pid=\d+(?:, ip=[\d.]+)?\)(?:\x1b\[0m)? ", re.M)


def clues(job: Job, files: dict[str, str]) -> tuple[list[str], list[str]]:
    """(rank clues, host clues) for the job's culprit."""
    allt = "\n".join(SKY_PREFIX.sub("", t) for t in files.values())
    lines = allt.split("\n")
    rank_c: list[str] = []
    host_c: list[str] = []
    c, level = job.culprit, KINDS[job.kind][1]
    if level == "job":
        return rank_c, host_c
    if level == "host":
        h = job.hosts[job.culprit_host or 0]
        if any(f"{h.name}:" in ln and "Got async event : port error" in ln for ln in lines):
            host_c.append("nccl_async_event_on_host")
        if any("Link down" in t for p, t in files.items() if h.name in p or (h.alias and h.alias in p)):
            host_c.append("kernel_link_down")
        return rank_c, host_c
    assert c is not None
    ev = job.evidence
    node = job.node_of(c)
    h = job.hosts[node]
    cause = [ln for ln in lines if ev and ev in ln]
    marker = job.extra.get("cause_marker", ev)
    own = [ln for ln in lines if marker and marker in ln]
    if any(ln.startswith(f"[rank{c}]:") or f"[rank{c}]:" in ln[:80] for ln in own):
        rank_c.append("rank_prefix_on_cause_line")
    if job.layout == "kuberay" and any(f"pid={job.pids[c]}, ip={h.ip})" in ln for ln in own) and "world_rank=" in allt:
        rank_c.append("ray_worker_prefix_and_worker_table")
    if job.layout == "kuberay" and f"\tpid: {job.pids[c]}" in allt and "world_rank=" in allt:
        rank_c.append("actor_died_pid_and_worker_table")
    if re.search(rf"Root Cause \(first observed failure\):\n\[0\]:\n.*\n.*\n  rank      : {c} \(local_rank", allt):
        rank_c.append("torchrun_root_cause_table")
    block = re.search(rf"Begin global rank {c} STDERR-+\n(.*?)\n-+End global rank {c} STDERR", allt, re.S)
    if block and marker and marker in block.group(1):
        rank_c.append("composer_stderr_block")
    console = files.get(f"composer-node{node}.log", "")
    if job.layout == "composer" and job.local(c) == 0 and marker and marker in console:
        rank_c.append("composer_console_is_local_rank0")
    if job.layout == "composer" and f"Rank {c} crashed with exit code -9." in allt:
        rank_c.append("composer_crash_report_sigkill")
    if job.kind == "straggler":
        if cause:
            rank_c.append("flight_recorder_last_enqueued")
        others = [r for r in range(job.world) if r != c]
        if all(f"[Rank {r}] Watchdog caught collective operation timeout" in allt for r in others) and \
                f"[Rank {c}] Watchdog caught" not in allt:
            rank_c.append("only_rank_without_watchdog_timeout")
    pid_in_kernel = f"Killed process {job.pids[c]} " in allt or f"pid={job.pids[c]}, name=python3" in allt
    if pid_in_kernel and any(f"{h.name}:{job.pids[c]}:" in ln and f" rank {c} nranks" in ln for ln in lines):
        rank_c.append("kernel_pid_joined_to_nccl_init_rank")
    if any(h.name in p or (h.alias and h.alias in p) for p, t in files.items() if ev and ev in t):
        host_c.append("cause_in_host_kernel_log")
    if job.layout == "composer" and any(ev and ev in t for p, t in files.items() if p == f"composer-node{node}.log"):
        host_c.append("cause_in_node_console")
    return rank_c, host_c


def label(job: Job, files: dict[str, str], seed: int) -> dict[str, object]:
    cls, level = KINDS[job.kind]
    rank_c, host_c = clues(job, files)
    host = None
    if level == "rank" and job.culprit is not None:
        host = job.hosts[job.node_of(job.culprit)].name
    elif level == "host" and job.culprit_host is not None:
        host = job.hosts[job.culprit_host].name
    if level == "job":
        knowable, ini_rank, ini_host = "job", None, None
    elif level == "rank" and rank_c:
        knowable, ini_rank, ini_host = "rank", job.culprit, host
    elif host_c or (level == "rank" and rank_c):
        knowable, ini_rank, ini_host = "host", None, host
    else:
        knowable, ini_rank, ini_host = "none", None, None
    ev = job.evidence or f"(no line: {job.root_cause})"
    holders = sorted(p for p, t in files.items() if ev in t)
    return {"id": job.jid, "path": job.jid, "failure_class": cls,
            "initiating": {"rank": ini_rank, "host": ini_host, "evidence": ev},
            "root_cause": job.root_cause, "confidence": "high" if holders else "medium",
            "generator": "bench.independent6", "seed": seed, "kind": job.kind, "layout": job.layout,
            "world_size": job.world, "nodes": job.nodes, "nproc_per_node": job.nproc,
            "torch_logging": "2.4+" if job.torch_new else "2.1", "nccl_debug": "INFO" if job.nccl_info else "unset",
            "nccl_version": job.nccl_version, "ib": job.ib, "flight_recorder": job.fr,
            "kernel_logs": job.kernel_logs, "timeout_s": job.timeout_s,
            "clock_skew_s": [h.skew for h in job.hosts], "host_tz_hours": job.hosts[0].tz_hours,
            "knowable": knowable, "clues": rank_c + host_c if knowable != "none" else [],
            "cause_line_present": bool(holders), "initiating_files": holders,
            "bytes": sum(len(t.encode()) for t in files.values())}
