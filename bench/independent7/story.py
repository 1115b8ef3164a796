"""One failed job as true-time events: who prints what when, who dies how, what the kernel logs.

A `Job` holds every rank's lines (true time; the layout stamps them with the host's skewed clock), kernel and
fabric-manager lines per host, each rank's end (exit code or signal), the lines the launcher writes, and the
facts the label is built from. `kinds.py` plays the cause; `aftermath()` plays what the others print."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from . import texts
from .clocks import Host, local


@dataclass
class Out:
    t: float
    text: str
    err: bool = True


@dataclass
class Job:
    rng: random.Random
    jid: str
    layout: str
    kind: str
    hosts: list[Host]
    nproc: int
    by_node: bool  # ranks dealt round-robin over hosts (mpirun --map-by node) rather than in blocks
    t0: float
    new_torch: bool
    nccl_debug: bool
    flight_recorder: bool
    transport: str  # ib, efa, socket
    nccl_ver: str
    timeout_s: int
    kill_on_bad_exit: bool
    kernel_logs: bool
    tf: float = 0.0
    seq: int = 0
    pids: list[int] = field(default_factory=list)
    lines: dict[int, list[Out]] = field(default_factory=dict)
    kern: dict[int, list[tuple[float, str]]] = field(default_factory=dict)
    fm: dict[int, list[tuple[float, str]]] = field(default_factory=dict)
    end: dict[int, tuple[float, str, int]] = field(default_factory=dict)  # rank -> (t, "exit"|"signal", n)
    vanished: dict[int, float] = field(default_factory=dict)  # ranks that stop without a trace (host lost)
    hung: dict[int, float] = field(default_factory=dict)  # ranks alive but stuck (silent straggler)
    launcher: list[Out] = field(default_factory=list)
    task_lines: dict[int, list[Out]] = field(default_factory=dict)  # per-rank lines a launcher adds (pyxis)
    label: dict[str, Any] = field(default_factory=dict)

    @property
    def world(self) -> int:
        return self.nproc * len(self.hosts)

    def host_of(self, r: int) -> int:
        return r % len(self.hosts) if self.by_node else r // self.nproc

    def local_of(self, r: int) -> int:
        return r // len(self.hosts) if self.by_node else r % self.nproc

    def ranks_on(self, h: int) -> list[int]:
        return [r for r in range(self.world) if self.host_of(r) == h]

    def say(self, r: int, t: float, text: str | list[str], err: bool = True) -> None:
        for i, x in enumerate([text] if isinstance(text, str) else text):
            self.lines.setdefault(r, []).append(Out(t + i * 1e-5, x, err))

    def tl(self, r: int, t: float) -> float:
        """Rank r's host clock reading at true time t."""
        return local(self.hosts[self.host_of(r)], t)

    def nccl_line(self, r: int, level: str, msg: str, where: str = "") -> str:
        h = self.hosts[self.host_of(r)]
        return texts.nccl(h.name, self.pids[r], self.pids[r] + 417 + r % 7, self.local_of(r), level, msg, where)

    def first_end(self) -> tuple[float, int] | None:
        ends = sorted((t, r) for r, (t, _, _) in self.end.items())
        return ends[0] if ends else None


def ring_peers(job: Job, r: int) -> list[int]:
    """The ranks whose NCCL connections to r cross a node boundary (same local rank on the neighbouring hosts)."""
    n = len(job.hosts)
    if n == 1:
        return [(r + 1) % job.world, (r - 1) % job.world]
    h, lr = job.host_of(r), job.local_of(r)
    out = []
    for dh in (1, -1):
        other = (h + dh) % n
        for q in job.ranks_on(other):
            if job.local_of(q) == lr and q not in out:
                out.append(q)
    return out


def _transport_error(job: Job, r: int, peer: int, t: float) -> None:
    rng = job.rng
    ph = job.hosts[job.host_of(peer)]
    port = rng.randint(32768, 60999)
    if job.transport == "efa":
        where, msg = texts.efa_cq_error(rng)
    elif job.transport == "ib":
        where, msg = texts.ib_completion(ph.ip, port, job.hosts[job.host_of(r)].ip, rng.random() < 0.5)
    else:
        where, msg = texts.socket_closed(ph.ip, port)
    last = job.nccl_line(r, "WARN", msg, where).split(" NCCL WARN ", 1)[1]
    if job.nccl_debug:
        job.say(r, t, job.nccl_line(r, "WARN", msg, where))
    job.say(r, t + 0.02, texts.remote_error(job.new_torch, r, job.tl(r, t + 0.02), job.nccl_ver, last))
    job.end[r] = (t + rng.uniform(0.05, 0.6), "signal", 6)


def _delay(job: Job, vanished: bool) -> float | None:
    rng = job.rng
    if job.transport == "socket":
        return None if vanished else rng.uniform(0.005, 0.4)  # a lost host sends no FIN
    if job.transport == "ib":
        return rng.uniform(15, 38)
    return rng.uniform(8, 30)


def aftermath(job: Job, blocked_at: float, op: str = "ALLREDUCE", numel: int = 1) -> None:
    """Everyone still running: ring peers of a gone rank see the network break; the rest time out."""
    rng = job.rng
    gone = {r: (t, False) for r, (t, _, _) in job.end.items()}
    gone.update({r: (t, True) for r, t in job.vanished.items()})
    for r in range(job.world):
        if r in job.end or r in job.vanished or r in job.hung:
            continue
        hits = []
        for q in ring_peers(job, r):
            if q in gone:
                d = _delay(job, gone[q][1])
                if d is not None:
                    hits.append((gone[q][0] + d, q))
        t_out = blocked_at + rng.uniform(0, 1.2) + job.timeout_s + rng.uniform(0.005, 2.5)
        if hits and min(hits)[0] < t_out:
            t, q = min(hits)
            _transport_error(job, r, q, t)
            continue
        ran = int((t_out - blocked_at) * 1000)
        job.say(r, t_out, texts.watchdog_timeout(job.new_torch, r, job.tl(r, t_out), job.seq, op,
                                                 job.timeout_s * 1000, ran, numel))
        job.end[r] = (t_out + rng.uniform(0.05, 1.0), "signal", 6)
    if job.flight_recorder and job.new_torch and job.hung:
        _dump_signals(job)


def _dump_signals(job: Job) -> None:
    """The first rank to time out tells every rank, the hung one included, to dump its flight recorder."""
    first = min((t, r) for r, (t, _, _) in job.end.items() if r not in job.hung)
    t_sig = first[0] - 0.3
    for r in range(job.world):
        if r in job.vanished:
            continue
        t = t_sig + job.rng.uniform(0.05, 0.9)
        last = job.seq - 1 if r in job.hung else job.seq
        job.say(r, t, texts.dump_signal(r, job.tl(r, t), first[1], last))


def cut(job: Job, t_kill: float, sig: int = 9) -> None:
    """The launcher kills every rank still running at t_kill; what they would have printed later is lost."""
    for r in range(job.world):
        if r in job.vanished:
            continue
        if r not in job.end or job.end[r][0] > t_kill:
            job.end[r] = (t_kill + job.rng.uniform(0.001, 0.3), "signal", sig)
        job.lines[r] = [o for o in job.lines.get(r, []) if o.t <= job.end[r][0]]
