"""The label: corpus schema (`id`, `path`, `failure_class`, `initiating` {rank, host, evidence}, `root_cause`,
`confidence`) plus generator fields. A rank or host is named only where a reader of the written files could
tell it; `knowable` says which (rank, host, or none) and `clues` why."""

from __future__ import annotations

import re

from .kinds import KINDS
from .story import Job

NONE_EVIDENCE = "(no line in these files names where it started)"
PID_KINDS = ("ecc", "xid119", "host_oom", "segv", "ckpt_hang")


def _in(files: dict[str, str], s: str) -> list[str]:
    return sorted(k for k, t in files.items() if s and s in t)


def _launcher_names(job: Job, text: str, c: int) -> str | None:
    """mpirun's, torchrun's table's or vLLM's report naming the culprit as the first failure."""
    jid = job.extra.get("jobid")
    if f"process rank {c} with PID" in text or f"Process name: [[{jid},1],{c}]\n" in text:
        return "mpirun report"
    for m in re.finditer(r"Root Cause \(first observed failure\):\n(?:.*\n){3}.*  rank      : (\d+) ", text):
        if int(m.group(1)) == c:  # the table's lines may carry a launcher's prefix (srun's label, torchx's role)
            return "torchrun table"
    if f"Worker proc VllmWorker-{c} died" in text:
        return "vLLM worker monitor"
    return None


def _absence(job: Job, text: str, c: int) -> bool:
    """Every other rank reported its watchdog timeout and the culprit did not: its silence names it."""
    says = [f"Rank {r}] Watchdog caught" in text for r in range(job.world)]
    return not says[c] and all(s for r, s in enumerate(says) if r != c)


def _rank_clues(job: Job, files: dict[str, str]) -> list[str]:
    c = job.culprit
    assert c is not None
    text = "\n".join(files.values())
    clues = list(job.rank_clues)
    if (named := _launcher_names(job, text, c)) is not None:
        clues.append(named)
    if job.kind in PID_KINDS and _in(files, job.evidence) and (job.nccl_debug or job.layout == "vllm_serve"):
        clues.append("kernel pid + NCCL INFO pid")
    oom_here = job.kind == "cuda_oom" and job.layout == "deepspeed_pdsh" and "GPU " in job.evidence
    if oom_here and _in(files, job.evidence):
        clues.append("OOM's GPU index + pdsh host + global_rank_mapping")
    if job.kind in ("straggler", "ckpt_hang"):
        if job.evidence and job.evidence.startswith("[PG ID") and _in(files, job.evidence):
            clues.append("flight-recorder dump")
        elif _absence(job, text, c):
            clues.append("absent watchdog line")
    return clues


def _host_clue(job: Job, files: dict[str, str], mode_exit: bool) -> bool:
    if job.kernel_logs and _in(files, job.evidence) and job.kind in (*PID_KINDS, "xid79"):
        return True
    return job.layout == "deepspeed_pdsh" and mode_exit


def _node_lost_evidence(job: Job, files: dict[str, str]) -> None:
    h = job.culprit_host
    assert h is not None
    name = job.hosts[h].name
    if job.layout == "deepspeed_pdsh":
        job.evidence = f"{name}: ssh exited with exit code 255"
    elif job.layout == "mpirun_plain":
        job.evidence = f"Remote daemon: [[{job.extra['jobid']},0],{h + 1}] on node {name}"


def initiating(job: Job, files: dict[str, str]) -> tuple[int | None, str | None, list[str]]:
    level = KINDS[job.kind][1]
    if level == "job":
        return None, None, []
    if level == "host":
        h = job.culprit_host
        assert h is not None
        if job.kind == "node_lost":
            _node_lost_evidence(job, files)
        host = job.hosts[h].ip if job.layout == "vllm_serve" else job.hosts[h].name
        clues = ["evidence line"] if _in(files, job.evidence) else []
        if job.kind == "ib_flap" and job.nccl_debug and "NET/IB : Got async event : port error" in \
                "\n".join(files.values()):
            clues.append("NCCL async event on the host")
        return (None, host, clues) if clues else (None, None, [])
    c = job.culprit
    assert c is not None
    h = job.rank_host[c]
    host = job.hosts[h].ip if job.layout == "vllm_serve" and len(job.hosts) > 1 else job.hosts[h].name
    clues = _rank_clues(job, files)
    if clues:
        return c, host, clues
    if _host_clue(job, files, job.kind not in ("straggler", "ckpt_hang")):
        return None, host, ["host only"]
    return None, None, []


def label(job: Job, files: dict[str, str], name: str, cls: str, seed: int) -> dict[str, object]:
    rank, host, clues = initiating(job, files)
    evidence = job.evidence or NONE_EVIDENCE
    holders = _in(files, evidence)
    knowable = "rank" if rank is not None else "host" if host else "none"
    return {
        "id": name, "path": name, "failure_class": cls,
        "initiating": {"rank": rank, "host": host, "evidence": evidence},
        "root_cause": job.root_cause, "confidence": "high" if holders else "medium",
        "generator": "bench.independent5", "seed": seed, "kind": job.kind, "layout": job.layout,
        "world_size": job.world, "nodes": len(job.hosts), "nproc_per_node": job.nproc,
        "torch_logging": "2.4+" if job.new_torch else "2.1", "nccl_debug": "INFO" if job.nccl_debug else "unset",
        "nccl_version": job.nccl_version, "ib": job.ib, "flight_recorder": job.flight_recorder,
        "kernel_logs": job.kernel_logs, "health_check": job.health, "timeout_s": job.timeout_s,
        "clock_skew_s": max(abs(h.skew) for h in job.hosts), "host_tz_hours": job.hosts[0].tz_hours,
        "container_tz_hours": job.container_tz, "knowable": knowable, "clues": clues,
        "cause_line_present": bool(holders), "initiating_files": holders,
        "bytes": sum(len(t.encode()) for t in files.values()),
    }
