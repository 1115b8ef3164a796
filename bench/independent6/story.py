"""One job as true-time events: what every rank would print and when it would exit if no launcher cut it short.
Layouts (layouts.py) then apply their launcher's tear-down (truncating ranks it kills) and render prefixes and
stamps with each host's clock."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from .clocks import Host

# An entry: (true time, channel, payload). Channels: "c10" (sev, src, msg), "py" (stderr text: tracebacks, which
# torch >= 2.3 prefixes with `[rankN]: ` as public logs show), "out" (stdout), "nccl" (NCCL's own lines, stdout).
Entry = tuple[float, str, Any]


@dataclass
class Job:
    rng: random.Random
    jid: str
    layout: str
    kind: str
    hosts: list[Host]
    nproc: int
    t0: float
    torch_new: bool
    fr: bool  # flight recorder + TORCH_NCCL_DUMP_ON_TIMEOUT (torch >= 2.4 only)
    nccl_info: bool
    ib: bool
    timeout_s: int
    kernel_logs: bool
    nccl_version: str
    script: str = "train.py"
    tf: float = 0.0  # when the fault happens (true time)
    seq: int = 0  # the collective sequence number in flight at tf
    culprit: int | None = None  # the rank whose fault started it, if the fault is a rank's
    culprit_host: int | None = None  # the node index, for node faults
    out: dict[int, list[Entry]] = field(default_factory=dict)
    exits: dict[int, tuple[float, int]] = field(default_factory=dict)  # natural exits
    kernel: dict[int, list[tuple[float, str]]] = field(default_factory=dict)  # node -> (true time, body)
    pids: dict[int, int] = field(default_factory=dict)
    buses: list[str] = field(default_factory=list)  # PCI bus per local GPU
    evidence: str = ""
    root_cause: str = ""
    clues: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def nodes(self) -> int:
        return len(self.hosts)

    @property
    def world(self) -> int:
        return self.nodes * self.nproc

    def node_of(self, rank: int) -> int:
        return rank // self.nproc

    def local(self, rank: int) -> int:
        return rank % self.nproc

    def emit(self, rank: int, t: float, channel: str, payload: Any) -> None:
        self.out.setdefault(rank, []).append((t, channel, payload))

    def c10(self, rank: int, t: float, lines: list[tuple[str, str, str]]) -> None:
        for i, line in enumerate(lines):
            self.emit(rank, t + i * 1e-5, "c10", line)

    def py(self, rank: int, t: float, lines: list[str]) -> None:
        for i, line in enumerate(lines):
            self.emit(rank, t + i * 1e-6, "py", line)

    def kern(self, node: int, t: float, bodies: list[str]) -> None:
        for i, body in enumerate(bodies):
            self.kernel.setdefault(node, []).append((t + i * 1e-4, body))

    def exit(self, rank: int, t: float, code: int) -> None:
        if rank not in self.exits or self.exits[rank][0] > t:
            self.exits[rank] = (t, code)


def new_job(rng: random.Random, jid: str, layout: str, kind: str, hosts: list[Host], nproc: int,
            t0: float) -> Job:
    torch_new = rng.random() < 0.75
    job = Job(rng=rng, jid=jid, layout=layout, kind=kind, hosts=hosts, nproc=nproc, t0=t0, torch_new=torch_new,
              fr=torch_new and rng.random() < 0.5, nccl_info=rng.random() < 0.45, ib=rng.random() < 0.7,
              timeout_s=rng.choice((600, 600, 900, 1800)), kernel_logs=rng.random() < 0.75,
              nccl_version=rng.choice(("2.20.5+cuda12.4", "2.21.5+cuda12.4", "2.23.4+cuda12.6")))
    job.buses = [f"{b:02x}" for b in sorted(rng.sample(range(0x0c, 0xe0), nproc))]
    base = rng.randint(3000, 90000)
    for r in range(job.world):
        job.pids[r] = base + 10 * job.node_of(r) + job.local(r) + rng.randint(0, 3) * 1000 * job.node_of(r)
    job.tf = t0 + rng.uniform(900, 5 * 3600)
    job.seq = rng.randint(2000, 90000)
    return job
