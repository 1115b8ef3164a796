"""The label: what a reader of the written files could tell, checked against the text after it is written.

A rank is named only with a clue: the cause on the rank's own prefixed lines, a launcher report naming it as the
first failure, the straggler's flight-recorder line, or the straggler's silence when every other rank printed
its watchdog timeout. A host alone is named when a kernel log, the launcher or the failing ranks' lines place the
fault there; else neither (``knowable: none``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .kinds import KINDS, job_class
from .story import Job

NONE_EVIDENCE = "(no line names where this started)"


def _silent_clue(job: Job, r: int) -> str:
    if any(f"Last enqueued NCCL work: {job.seq - 1}," in o.text for o in job.lines.get(r, [])):
        return "the straggler's own flight-recorder line shows it one collective behind"
    others = [q for q in range(job.world) if q != r]
    timed_out = [q for q in others if any("Watchdog caught collective operation timeout" in o.text
                                          for o in job.lines.get(q, []))]
    if len(timed_out) == len(others) and job.world > 2:
        return "every other rank printed its watchdog timeout; this one printed nothing"
    return ""


def _knowable(job: Job) -> tuple[str, list[str]]:
    lab, level = job.label, KINDS[job.kind][1]
    clues = list(lab.get("clues") or [])
    if level == "job":
        return "job", []
    if job.kind == "silent":
        c = _silent_clue(job, lab["rank"])
        return ("rank", [c]) if c else ("none", [])
    if level == "rank":
        named = lab.get("first_named")
        if named and named[0] == lab["rank"]:
            clues.append("the launcher's report names it as the first task to fail")
        if job.nccl_debug and job.kind in ("mem_kill", "crash", "ecc") and job.kernel_logs:
            clues.append("the kernel line's pid matches the rank's NCCL INFO lines")
        return ("rank", clues) if clues else ("none", [])
    h = lab["host"]
    if job.kind == "host_down":
        return ("host", ["the launcher names the lost node"]) if lab.get("launcher_line") else ("none", [])
    if job.kind == "switch_fatal":
        named = lab.get("first_named")
        if job.kernel_logs:
            clues.append("the node's kernel log holds the SXid")
        if named and named[1] == h:
            clues.append("the launcher names a task on that node as the first to fail")
        if job.nccl_debug:
            clues.append("NCCL INFO ties the failing ranks to the node")
        return ("host", clues) if len(clues) > 1 else ("none", [])
    return "host", clues


def label(job: Job, out: Path, rel: str, seed: int) -> dict[str, Any]:
    lab = job.label
    knowable, clues = _knowable(job)
    if job.kind == "host_down":
        lab["evidence"] = lab.get("launcher_line") or NONE_EVIDENCE
    elif job.kind == "walltime":
        lab["evidence"] = next(o.text for o in job.launcher if "TIME LIMIT" in o.text or "walltime" in o.text
                               or "resource allocation expired" in o.text)
    ev = lab["evidence"] or NONE_EVIDENCE
    root = out / rel
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ev in p.read_text())
    rank = lab["rank"] if knowable == "rank" else None
    host_i = lab["host"] if knowable in ("rank", "host") else None
    host = job.hosts[host_i].name if host_i is not None else None
    return {
        "id": rel, "path": rel, "failure_class": job_class(job.kind, job.layout),
        "initiating": {"rank": rank, "host": host, "evidence": ev},
        "root_cause": lab["root_cause"], "confidence": "high" if files else "medium",
        "generator": "bench.independent7", "seed": seed, "kind": job.kind, "layout": job.layout,
        "world_size": job.world, "nodes": len(job.hosts), "nproc_per_node": job.nproc,
        "torch_logging": "2.4+" if job.new_torch else "2.1", "nccl_debug": job.nccl_debug,
        "nccl_version": job.nccl_ver, "transport": job.transport, "flight_recorder": job.flight_recorder,
        "kernel_logs": job.kernel_logs, "kill_on_bad_exit": job.kill_on_bad_exit, "timeout_s": job.timeout_s,
        "clock_skew_s": lab["skew"], "knowable": knowable, "clues": clues, "cause_line_present": bool(files),
        "initiating_files": files,
        "bytes": sum(p.stat().st_size for p in root.rglob("*") if p.is_file()),
    }
