"""One job as true-time events: who prints what, when, and how each process ends.

Events carry the true time; `render.py` stamps them with the printing host's skewed clock in the zone of the
program that prints them. A rank's events after its end (killed, aborted) are dropped by `Job.end`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from .clocks import Host, make_hosts
from .texts import Line


@dataclass
class Ev:
    t: float
    host: int  # index into Job.hosts
    rank: int | None  # None: not a training process (kernel, launcher, health check, scheduler)
    src: str  # rank | kernel | launcher | agent | health | events
    style: str
    text: str
    cause: bool = False  # one of the culprit's own lines about the initiating fault


@dataclass
class Job:
    rng: random.Random
    layout: str
    kind: str
    hosts: list[Host]
    nproc: int
    rank_host: list[int]  # global rank -> host index
    local: list[int]  # global rank -> local rank (GPU index on its host)
    pids: list[int]
    agent_pids: list[int]
    new_torch: bool  # torch >= 2.4 logging (`[rankN]:` c10 prefix, PG prefixes, flight recorder)
    nccl_debug: bool  # NCCL_DEBUG=INFO
    ib: bool
    nccl_version: str
    flight_recorder: bool
    timeout_s: int
    kernel_logs: bool
    health: bool
    container_tz: int  # the zone the training containers / processes print in (hours)
    t0: float
    events: list[Ev] = field(default_factory=list)
    ends: dict[int, tuple[float, int]] = field(default_factory=dict)  # rank -> (true time, exit: code or -signal)
    host_dead: dict[int, float] = field(default_factory=dict)  # host index -> when it vanished
    seq: int = 0  # the SeqNum of the collective that never completes
    step: int = 0  # the training step at the fault
    culprit: int | None = None
    culprit_host: int | None = None
    evidence: str = ""
    root_cause: str = ""
    rank_clues: list[str] = field(default_factory=list)  # why a reader could tell the rank
    host_clues: list[str] = field(default_factory=list)  # why a reader could tell the host
    extra: dict[str, Any] = field(default_factory=dict)  # layout-specific facts (job id, pods, events)

    @property
    def world(self) -> int:
        return len(self.rank_host)

    def host_of(self, rank: int) -> Host:
        return self.hosts[self.rank_host[rank]]

    def ranks_on(self, h: int) -> list[int]:
        return [r for r in range(self.world) if self.rank_host[r] == h]

    def say(self, rank: int, t: float, lines: list[Line], cause: bool = False) -> None:
        for i, (style, text) in enumerate(lines):
            self.events.append(Ev(t + i * 1e-5, self.rank_host[rank], rank, "rank", style, text, cause))

    def note(self, src: str, host: int, t: float, texts: list[str], style: str = "err") -> None:
        for i, text in enumerate(texts):
            self.events.append(Ev(t + i * 1e-5, host, None, src, style, text))

    def end(self, rank: int, t: float, code: int) -> None:
        """The rank's process ends at t (first end wins); its later events are dropped."""
        if rank in self.ends and self.ends[rank][0] <= t:
            return
        self.ends[rank] = (t, code)
        self.events = [e for e in self.events if not (e.rank == rank and e.t > t)]

    def alive_at(self, rank: int, t: float) -> bool:
        return rank not in self.ends or self.ends[rank][0] > t

    def kill_host(self, h: int, t: float) -> None:
        """The host vanishes: nothing it would print after t reaches any file."""
        self.host_dead[h] = t
        self.events = [e for e in self.events if not (e.host == h and e.t > t)]
        for r in self.ranks_on(h):
            self.end(r, t, -9)


def new_job(rng: random.Random, layout: str, kind: str, nodes: int, nproc: int, t0: float) -> Job:
    big = rng.random() < 0.35
    tz = rng.choice((0, 0, -8, -7, -5, 1, 2, 8, 9))
    hosts = make_hosts(rng, nodes, big, tz)
    for h in hosts:
        h.boot = t0 - rng.uniform(2 * 86400, 40 * 86400)
    by_node = layout == "mpirun_plain" and rng.random() < 0.5  # --map-by node: rank r on host r mod N
    world = nodes * nproc
    rank_host = [r % nodes if by_node else r // nproc for r in range(world)]
    local = [r // nodes if by_node else r % nproc for r in range(world)]
    new_torch = rng.random() < 0.65
    pid0 = rng.randint(20000, 3_900_000)
    return Job(
        rng=rng, layout=layout, kind=kind, hosts=hosts, nproc=nproc, rank_host=rank_host, local=local,
        pids=[pid0 + 7 * r + rng.randint(0, 5) for r in range(world)],
        agent_pids=[rng.randint(1000, 19999) for _ in range(nodes)],
        new_torch=new_torch, nccl_debug=rng.random() < 0.45, ib=rng.random() < 0.7,
        nccl_version=rng.choice(("2.21.5", "2.23.4", "2.26.2")),
        flight_recorder=new_torch and rng.random() < 0.5,
        timeout_s=rng.choice((600, 600, 1200, 1800)),
        kernel_logs=rng.random() < 0.78, health=rng.random() < 0.5,
        container_tz=0 if rng.random() < 0.7 else tz, t0=t0,
        extra={"mpirun_map_by_node": by_node, "big_skew": big})


def ring_peers(job: Job, rank: int) -> list[int]:
    """The ranks on other hosts that exchange data with `rank` directly in NCCL's inter-node ring: the same
    local rank on the previous and the next host in ring order."""
    h = job.rank_host[rank]
    n = len(job.hosts)
    if n < 2:
        return []
    out = []
    for nh in ((h - 1) % n, (h + 1) % n):
        for r in job.ranks_on(nh):
            if job.local[r] == job.local[rank] and r not in out:
                out.append(r)
    return out


def pid_map_visible(job: Job) -> bool:
    """Whether a reader can join a pid to a rank from the ranks' own lines: NCCL INFO's `host:pid:tid` beside
    `Init COMPLETE`'s `rank N`."""
    return job.nccl_debug
