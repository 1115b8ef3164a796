"""A Slurm job's output files and end state, read from Slurm itself, for the epilog (deploy/slurm/epilog.sh).

Upstream formats (SchedMD/slurm):
- `scontrol show job <id>`: slurm_sprint_job_info (src/api/job_info.c) prints StdErr=, StdIn= and StdOut= each
  alone on its own line ("\\n   StdOut=<path>", "line 30-32"), the path from slurm_get_job_stdout with its
  %j/%u/%x patterns already filled in, so the value is the rest of the line (a path may hold spaces); BatchHost=
  names the node that ran the batch script, where that output was written; StartTime= is local time
  (2026-12-03T10:00:00, "Unknown" before the job starts).
- `sacct -j <id> -o JobID,State,ExitCode,NodeList -P`: a header, then one `|`-separated row for the job and each
  step (4242, 4242.batch, 4242.extern, 4242.0); ExitCode is `<exit status>:<signal>` (sacct's man page), State
  may read "CANCELLED by 1000"; NodeList is a hostlist expression (gpu[001-003,007]).
Everything here is bounded: each command gets a timeout and a failure is a reason, never an exception, because
the epilog must not delay or fail (Slurm drains a node whose epilog fails).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from collect.send import Item
from ingest.chunking import StreamKey

# sacct State -> JobEvent.state (sacct's JOB STATE CODES); RUNNING/COMPLETING: the epilog can run before sacct
# has the end, and then the caller's own exit status decides
STATES = {"COMPLETED": "succeeded", "FAILED": "failed", "NODE_FAIL": "failed", "OUT_OF_MEMORY": "failed",
          "BOOT_FAIL": "failed", "TIMEOUT": "timeout", "DEADLINE": "timeout", "CANCELLED": "cancelled",
          "PREEMPTED": "preempted", "REVOKED": "cancelled"}
_PATH_LINE = re.compile(r"^\s*(StdOut|StdErr)=(.*?)\s*$", re.M)
_BATCH_HOST = re.compile(r"\bBatchHost=(\S+)")
_NODE_LIST = re.compile(r"(?:^|\s)NodeList=(\S+)")
_START_TIME = re.compile(r"\bStartTime=(\S+)")
_MAX_NODES = 1 << 17  # schemas.wire.MAX_HOSTS: a hostlist claiming more is not expanded


@dataclass
class SlurmJob:
    job_id: str
    stdout: str | None = None
    stderr: str | None = None
    batch_host: str | None = None
    start: datetime | None = None  # local time, as scontrol prints it
    hosts: list[str] = field(default_factory=list)
    state: str | None = None  # a JobEvent state, when sacct has the end
    exit_codes: dict[str, int] = field(default_factory=dict)  # host -> code (negative: the killing signal)
    reasons: list[str] = field(default_factory=list)  # what could not be read, for the epilog's log


def run(argv: list[str], timeout_s: float) -> tuple[str | None, str]:
    """(stdout, '') or (None, why): a missing, hung or failing command is a reason."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        return None, f"{argv[0]}: not found on PATH"
    except subprocess.TimeoutExpired:
        return None, f"{' '.join(argv)}: no answer in {timeout_s:g} s"
    if done.returncode != 0:
        return None, f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[:200]}"
    return done.stdout, ""


def expand_hostlist(expr: str) -> list[str]:
    """Slurm's hostlist syntax (src/common/hostlist.c): comma-separated names, each with bracketed ranges
    keeping their zero padding: gpu[001-002,010],login1 -> gpu001 gpu002 gpu010 login1."""
    names: list[str] = []
    for part in re.findall(r"[^,\[]*(?:\[[^\]]*\][^,\[]*)*", expr):
        if not part:
            continue
        expanded = [""]
        for literal, ranges in re.findall(r"([^\[]*)(?:\[([^\]]*)\])?", part):
            options = [""] if not ranges else [
                str(n).zfill(len(lo)) for r in ranges.split(",") for lo, _, hi in [r.partition("-")]
                if lo.isdigit() for n in range(int(lo), int(hi or lo) + 1)]
            expanded = [e + literal + o for e in expanded for o in options]
            if len(expanded) + len(names) > _MAX_NODES:
                return names
        names += [e for e in expanded if e]
    return names


def exit_code(text: str) -> int | None:
    """sacct's `status:signal`: the signal, negated, when one killed it (as torchrun reports -9)."""
    status, _, signal = text.partition(":")
    if not status.isdigit():
        return None
    return -int(signal) if signal.isdigit() and int(signal) else int(status)


def parse_show_job(text: str, job: SlurmJob) -> None:
    for key, value in _PATH_LINE.findall(text):
        setattr(job, key.lower(), value or None)
    if m := _BATCH_HOST.search(text):
        job.batch_host = m.group(1)
    if m := _START_TIME.search(text):
        job.start = _local_time(m.group(1))
    if (m := _NODE_LIST.search(text)) and m.group(1) != "(null)":
        job.hosts = expand_hostlist(m.group(1))


def _local_time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None  # Unknown, None


def parse_sacct(text: str, job: SlurmJob) -> None:
    rows = [line.split("|") for line in text.splitlines() if line.strip()]
    if not rows or rows[0][:1] != ["JobID"]:
        job.reasons.append("sacct: no JobID header")
        return
    for row in rows[1:]:
        if len(row) < 4:
            continue
        step, state, code_text, nodes = row[:4]
        code, word = exit_code(code_text), state.split(" ")[0].rstrip("+")
        if step == job.job_id:
            job.state = STATES.get(word, job.state)
            if not job.hosts and nodes not in ("", "None assigned"):
                job.hosts = expand_hostlist(nodes)
            continue
        step_hosts = expand_hostlist(nodes)
        if code is None or not step_hosts:
            continue
        # a step's code is its worst task's: it names a host only when the step ran on one (the batch step does)
        if len(step_hosts) == 1 and (code != 0 or step.endswith(".batch")):
            job.exit_codes.setdefault(step_hosts[0], code)


def read_job(job_id: str, timeout_s: float = 10.0) -> SlurmJob:
    job = SlurmJob(job_id)
    shown, why = run(["scontrol", "show", "job", job_id], timeout_s)
    if shown is None:
        job.reasons.append(why)
    else:
        parse_show_job(shown, job)
    acct, why = run(["sacct", "-j", job_id, "-o", "JobID,State,ExitCode,NodeList", "-P"], timeout_s)
    if acct is None:
        job.reasons.append(why)
    else:
        parse_sacct(acct, job)
    return job


def output_items(job: SlurmJob) -> list[Item]:
    """The batch script's StdOut and StdErr (once when they are one file), from the batch host, as `stdout` and
    `stderr` sources; an unreadable one is a reason."""
    items: list[Item] = []
    seen: set[str] = set()
    for stream, path in (("stdout", job.stdout), ("stderr", job.stderr)):
        if not path or path in seen or path == "/dev/null":
            continue
        seen.add(path)
        p = Path(path)
        if not p.is_file():
            job.reasons.append(f"{stream} {path}: not readable here")
            continue
        items.append(Item(StreamKey(stream, None, job.batch_host), p.name, path=p))  # type: ignore[arg-type]
    return items
