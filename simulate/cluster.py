"""The simulated cluster (hosts, pids, addresses, skewed clocks) and the job's files before they are written.

Every line is kept with the true time it was printed and what it is (ordinary, a consequence, a cause), so the
knobs (missing and truncated shards, one interleaved file) can be applied afterwards and the ground truth still
says which ranks left consequences in what was written.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

GPUS_PER_NODE = 8
START = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)
TIMEOUT = timedelta(minutes=10)  # the default ProcessGroupNCCL timeout, 600000 ms


class Kind(Enum):
    INFO = "info"
    COLLATERAL = "collateral"  # a consequence printed by a rank that did not start the failure
    CAUSE = "cause"


@dataclass
class Cluster:
    world_size: int
    seed: int
    max_skew_s: float = 300.0
    gpus_per_node: int = GPUS_PER_NODE

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.nodes = max(1, -(-self.world_size // self.gpus_per_node))
        self.skew = {n: timedelta(seconds=self.rng.uniform(-self.max_skew_s, self.max_skew_s))
                     for n in range(self.nodes)}
        self.pids = {r: 20000 + self.rng.randrange(60000) for r in range(self.world_size)}
        # The hostile knobs draw from their own generator: with them off, self.rng's sequence is untouched.
        self.hrng = random.Random(self.seed ^ 0x4057113)

    def node(self, rank: int) -> int:
        return rank // self.gpus_per_node

    def host(self, rank: int) -> str:
        return self.host_name(self.node(rank))

    @staticmethod
    def host_name(node: int) -> str:
        return f"node{node:03d}"

    def ip(self, rank: int) -> str:
        node = self.node(rank)
        return f"10.0.{node // 250}.{node % 250 + 1}"

    def ib_ip(self, rank: int) -> str:
        node = self.node(rank)
        return f"10.1.{node // 250}.{node % 250 + 1}"

    def local(self, rank: int) -> int:
        return rank % self.gpus_per_node

    def ranks_on(self, node: int) -> list[int]:
        return list(range(node * self.gpus_per_node, min(self.world_size, (node + 1) * self.gpus_per_node)))

    def clock(self, rank: int, true_time: datetime) -> datetime:
        return true_time + self.skew[self.node(rank)]

    def node_clock(self, node: int, true_time: datetime) -> datetime:
        return true_time + self.skew[node]

    def bus(self, rank: int) -> int:
        """The PCI bus of the rank's GPU (NCCL prints busId 1b000, the kernel PCI:0000:1b:00)."""
        return 0x1B + 0x10 * (self.local(rank) % 8)


def glog(t: datetime) -> str:
    """PyTorch's glog stamp with nanoseconds: 1129 10:02:03.123456789."""
    return f"{t:%m%d %H:%M:%S}.{t.microsecond:06d}{t.microsecond % 997:03d}"


def std(t: datetime) -> str:
    """Python logging's default stamp: 2026-11-29 10:02:03,123."""
    return f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}"


def ctime(t: datetime) -> str:
    """dmesg -T: [Sun Nov 29 10:02:03 2026]."""
    return f"[{t:%a %b %d %H:%M:%S %Y}]"


@dataclass
class Line:
    time: datetime  # true time, before any clock skew
    text: str
    kind: Kind = Kind.INFO


@dataclass
class Shard:
    """One file of the job: a rank's log, a node's kernel log or agent log, the scheduler's output, a dump."""

    path: str
    rank: int | None = None
    host: str | None = None
    stream: str = "rank"  # rank | node | agent | scheduler | dump
    lines: list[Line] = field(default_factory=list)
    blob: bytes | None = None  # a binary or JSON Flight Recorder dump
    node: int | None = None  # the node it came from (None: the scheduler's), whatever its path says

    def add(self, t: datetime, text: str, kind: Kind = Kind.INFO) -> None:
        self.lines.append(Line(t, text, kind))

    def extend(self, t: datetime, texts: list[str], kind: Kind = Kind.INFO) -> None:
        for text in texts:
            self.lines.append(Line(t, text, kind))


class Job:
    """The files of one job, by path. Paths put a host's files in its directory: node004/rank37.log."""

    def __init__(self, c: Cluster) -> None:
        self.c = c
        self.shards: dict[str, Shard] = {}
        self.victim: int | None = None  # a scenario's initiating rank, when the caller chooses it
        self.knobs: Any = None  # the scenario's Knobs (cascade.py), for the helpers the hostile knobs change

    def rank(self, r: int) -> Shard:
        path = f"{self.c.host(r)}/rank{r}.log"
        if path not in self.shards:
            self.shards[path] = Shard(path, rank=r, host=self.c.host(r), node=self.c.node(r))
        return self.shards[path]

    def node(self, node: int, name: str, stream: str = "node") -> Shard:
        host = self.c.host_name(node)
        path = f"{host}/{name}"
        if path not in self.shards:
            self.shards[path] = Shard(path, host=host, stream=stream, node=node)
        return self.shards[path]

    def scheduler(self, name: str) -> Shard:
        if name not in self.shards:
            self.shards[name] = Shard(name, stream="scheduler")
        return self.shards[name]

    def dump(self, r: int, name: str, blob: bytes) -> None:
        path = f"{self.c.host(r)}/{name}"
        self.shards[path] = Shard(path, rank=r, host=self.c.host(r), stream="dump", blob=blob,
                                  node=self.c.node(r))

    def drop_rank(self, r: int) -> None:
        self.shards.pop(f"{self.c.host(r)}/rank{r}.log", None)
