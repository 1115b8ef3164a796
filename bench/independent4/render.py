"""Records to text lines: each program's prefix, stamped with the writing host's own (skewed) clock."""

from __future__ import annotations

from .clocks import absl, c10, horovod, pylog, wall
from .nccl_torch import Rec
from .story import Ev, Job

LEVEL_NAME = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}


def module_of(where: str) -> str:
    return where.split(".py")[0].replace("/", ".")


def fmt(job: Job, ev: Ev, rec: Rec, t: float) -> list[str]:
    host = job.hosts[ev.host]
    w = wall(job.epoch, host, t)
    lines = rec.msg.split("\n")
    st = rec.style
    if st == "c10":
        # c10 MessageLogger: torch >= 2.3 adds `[rankN]:` and a nanosecond stamp; torch 2.1 printed `[E File.cpp:N]`
        head = f"[rank{ev.rank}]:[{c10(w, rec.level)} {rec.where}] " if job.torch_new else f"[{rec.level} {rec.where}] "
        return [head + lines[0], *lines[1:]]
    if st == "nccl":
        r = ev.rank if ev.rank is not None else 0
        ts = f"[{w:%Y-%m-%d %H:%M:%S}] " if job.nccl_ts else ""
        pid = job.pid_of[r]
        who = f"{ts}{host.name}:{pid}:{pid + 211 + r % 7}"
        if rec.level == "INFO":
            return [f"{who} [{job.local_of[r]}] NCCL INFO {x}" for x in lines]
        where = rec.where
        if not job.label.get("nccl_version", "").startswith("2.30"):
            where = where.split(" (")[0]  # the (function) went into WARN lines in 2.30 (src/debug.cc)
        return [f"{who} [{job.local_of[r]}] {where} NCCL WARN {lines[0]}", *lines[1:]]
    if st == "absl":
        return [f"{absl(w, rec.level, 140000 + job.pid_of[ev.rank or 0] % 9999, rec.where)} {lines[0]}", *lines[1:]]
    if st == "hvd":
        return [f"{horovod(w, rec.level, rec.where)} {lines[0]}", *lines[1:]]
    if st == "pylog":
        return [f"{pylog(w)}\t{LEVEL_NAME.get(rec.level, rec.level)} {rec.where} -- {lines[0]}", *lines[1:]]
    if st == "agent":
        if job.torch_new:  # torch >= 2.2 elastic logging (glog-like, thread id then path:line)
            return [f"{rec.level}{w:%m%d %H:%M:%S}.{w.microsecond:06d} {job.label.get('agent_pid', 1)} "
                    f"{rec.where}] {x}" for x in lines]
        return [f"[{pylog(w)}] {module_of(rec.where)}: [{LEVEL_NAME[rec.level]}] {x}" for x in lines]
    return lines


def visible(job: Job) -> list[Ev]:
    """Events that got written: nothing from a dead host after it died, nothing from a process after it exited."""
    out = []
    for ev in job.events:
        td = job.dead_hosts.get(ev.host)
        if td is not None and ev.t > td and ev.chan in ("out", "err", "kern"):
            continue
        if ev.rank is not None and ev.rank in job.exits and ev.t > job.exits[ev.rank][0] + 0.05:
            continue
        if ev.rank is not None and ev.rank in job.hung and ev.t > job.label["t_fault"] and \
                not any(r.msg.startswith("[PG ID") and "dump signal" in r.msg for r in ev.recs):
            continue
        out.append(ev)
    return out


def lines_of(job: Job, evs: list[Ev], spread: float = 0.0004) -> list[tuple[float, Ev, str]]:
    """(time, event, line) for every line of every record; a record's lines are written one after the other."""
    out = []
    for ev in evs:
        k = 0
        for rec in ev.recs:
            for line in fmt(job, ev, rec, ev.t):
                out.append((ev.t + k * spread, ev, line))
                k += 1
    return out
