"""Cluster topology, clocks and host names of one generated job, and the event record stories emit."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

# Host name families: each job draws one, so names differ between jobs the way clusters differ.
_FAMILIES = [
    ("gpu-{r}{n:02d}", "{short}.cluster.internal"),
    ("dgx{n:03d}", "{short}.hpc.example.org"),
    ("node-{n}", "{short}.ib.local"),
    ("trn-{r}-{n:02d}", "{short}.compute.internal"),
    ("a100-{n:02d}", "{short}.lab.example.net"),
]


@dataclass
class Ev:
    """One thing that happened: t is true seconds since job start; src is where it shows up.

    src: "rank" (stdout/stderr of a rank), "kernel" (a host's kernel ring buffer), "sched" (Slurm/k8s/Ray
    control plane), "agent" (a per-node launcher). Text may hold clock placeholders rendered per host:
    @GLOG@ (MMDD HH:MM:SS.ffffff), @C10@ (c10's own: month unpadded, nanoseconds), @PYTS@ (YYYY-MM-DD
    HH:MM:SS,mmm), @ISO@ (YYYY-MM-DDTHH:MM:SS).
    """

    t: float
    src: str
    text: str
    rank: int | None = None
    host: int | None = None


@dataclass
class Topo:
    rng: random.Random
    hosts: list[str]
    nproc: int
    fqdn: list[str] = field(default_factory=list)
    ips: list[str] = field(default_factory=list)
    skew: list[float] = field(default_factory=list)
    uptime0: list[float] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    t0: float = 0.0
    job_id: int = 0
    torch_new: bool = True  # torch >= 2.4 glog stamps in c10 lines; else the 2.0-2.2 "[E ProcessGroupNCCL.cpp:N]"
    nccl_info: bool = True  # NCCL_DEBUG=INFO was set
    nccl_ver: tuple[int, int, int] = (2, 20, 5)
    seq: int = 0  # the collective sequence number the job was in when it broke

    @property
    def world(self) -> int:
        return len(self.hosts) * self.nproc

    def node(self, rank: int) -> int:
        return rank // self.nproc

    def local(self, rank: int) -> int:
        return rank % self.nproc

    def ranks_on(self, host: int) -> list[int]:
        return list(range(host * self.nproc, (host + 1) * self.nproc))

    def bus(self, local: int) -> str:
        """PCI bus of the GPU a local rank drives (NCCL prints busId as e.g. 1b000)."""
        return ["1b", "29", "3b", "4d", "9c", "ab", "ba", "db"][local % 8]

    def nccl_prefix(self, rank: int) -> str:
        # NVIDIA/nccl src/debug.cc ncclDebugLog: "%s:%d:%d [%d] " hostname (cut at the first '.'), pid, tid, cudaDev
        return f"{self.hosts[self.node(rank)]}:{self.pids[rank]}:{self.pids[rank] + 37} [{self.local(rank)}]"

    def stamp(self, text: str, t: float, host: int | None) -> str:
        skew = self.skew[host] if host is not None else 0.0
        dt = datetime.fromtimestamp(self.t0 + t + skew, tz=UTC)
        if "@" not in text:
            return text
        c10 = f"{dt.month}{dt.day:02d} {dt.strftime('%H:%M:%S')}.{dt.microsecond * 1000 + int(t * 1e9) % 1000:09d}"
        return (
            text.replace("@C10@", c10)
            .replace("@GLOG@", dt.strftime("%m%d %H:%M:%S.%f"))
            .replace("@PYTS@", dt.strftime("%Y-%m-%d %H:%M:%S,") + f"{dt.microsecond // 1000:03d}")
            .replace("@ISO@", dt.strftime("%Y-%m-%dT%H:%M:%S"))
        )

    def uptime(self, t: float, host: int) -> float:
        """Seconds since boot on a host at true job time t (dmesg's clock, which no skew affects)."""
        return self.uptime0[host] + t


def make_topo(rng: random.Random, nodes: int, nproc: int) -> Topo:
    short_fmt, fqdn_fmt = rng.choice(_FAMILIES)
    rack = rng.choice("abcdefgh")
    start = rng.randint(1, 60)
    hosts = [short_fmt.format(r=rack, n=start + i) for i in range(nodes)]
    net = rng.randint(1, 250)
    topo = Topo(rng=rng, hosts=hosts, nproc=nproc)
    topo.fqdn = [fqdn_fmt.format(short=h) for h in hosts]
    topo.ips = [f"10.{net}.{rng.randint(0, 255)}.{rng.randint(2, 254)}" for _ in hosts]
    big = rng.random() < 0.35
    topo.skew = [0.0] + [rng.uniform(-45, 45) if big else rng.uniform(-2.5, 2.5) for _ in hosts[1:]]
    topo.uptime0 = [rng.uniform(3_000, 4_000_000) for _ in hosts]
    topo.pids = [rng.randint(2_000, 4_000_000) for _ in range(nodes * nproc)]
    topo.t0 = datetime(2026, rng.randint(1, 11), rng.randint(1, 28), rng.randint(0, 23), tzinfo=UTC).timestamp()
    topo.job_id = rng.randint(100_000, 9_999_999)
    topo.torch_new = rng.random() < 0.6
    topo.nccl_info = rng.random() < 0.6
    topo.nccl_ver = rng.choice([(2, 18, 6), (2, 19, 3), (2, 20, 5), (2, 21, 5)])
    topo.seq = rng.randint(40, 90_000)
    return topo
