"""A job's shape: nodes, their names in several styles, ranks, pids, addresses and each node's clock.

Global rank = node_rank * nproc_per_node + local_rank: torchrun gives each node's workers one block of ranks
(torch/distributed/elastic/agent/server/api.py: SimpleElasticAgent._assign_worker_ranks). Under the c10d
rendezvous the node ranks follow the order in which agents joined, not the host names, so a job may have its
node ranks shuffled against its host list.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

HOST_STYLES = ("short", "fqdn", "ip", "pod")


@dataclass
class Node:
    index: int  # position in the host list (what the scheduler printed)
    node_rank: int  # the group rank torchrun assigned
    short: str  # gethostname()
    fqdn: str  # socket.getfqdn(), printed by torchrun's failure table
    ip: str
    skew: float  # seconds this node's clock is ahead of true time
    boot: float  # true epoch seconds at which the node booted (dmesg's zero)
    pci: list[str] = field(default_factory=list)  # PCI bus id of each local GPU


@dataclass
class Job:
    rng: random.Random
    job_id: str
    slurm_id: int
    nodes: list[Node]
    nproc: int
    t0: float  # true epoch seconds at which training started
    style: str
    host_style: str
    torch_new: bool  # c10 '[rankN]:[E.. file:line]' logging (torch >= 2.2) or the bare '[E file:line]' form
    nccl_version: str
    nccl_debug: bool  # NCCL_DEBUG=INFO set
    pid_base: dict[int, int] = field(default_factory=dict)
    agent_pid: dict[int, int] = field(default_factory=dict)
    seq: int = 0  # the collective sequence number the job was in when it failed
    op: str = "ALLREDUCE"
    numel: int = 1
    timeout_ms: int = 600000

    @property
    def world(self) -> int:
        return len(self.nodes) * self.nproc

    def by_rank(self, rank: int) -> tuple[Node, int]:
        nr, lr = divmod(rank, self.nproc)
        for n in self.nodes:
            if n.node_rank == nr:
                return n, lr
        raise KeyError(rank)

    def rank_of(self, node: Node, local: int) -> int:
        return node.node_rank * self.nproc + local

    def ranks_on(self, node: Node) -> list[int]:
        return [self.rank_of(node, lr) for lr in range(self.nproc)]

    def pid(self, rank: int) -> int:
        node, lr = self.by_rank(rank)
        return self.pid_base[node.index] + lr

    def host(self, node: Node) -> str:
        """The name a person would use for this node in a label."""
        return node.short

    def local_time(self, node: Node, t: float) -> datetime:
        """True time t read off this node's (skewed) clock."""
        return datetime.fromtimestamp(t + node.skew, tz=UTC)


def _names(rng: random.Random, style: str, n: int, job_name: str) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    base = rng.randint(1, 400)
    octet = rng.randint(1, 200)
    prefix = rng.choice(["gpu", "dgx", "hgx", "node", "a100-", "h100-"])
    domain = rng.choice(["cluster.local", "hpc.example.org", "ml.corp.internal"])
    for i in range(n):
        ip = f"10.{octet}.{(base + i) // 250}.{(base + i) % 250 + 2}"
        if style == "short":
            short = f"{prefix}{base + i:03d}"
            fqdn = short
        elif style == "fqdn":
            short = f"{prefix}{base + i:03d}"
            fqdn = f"{short}.{domain}"
        elif style == "ip":  # cloud VMs name themselves after their address
            short = "ip-" + ip.replace(".", "-")
            fqdn = f"{short}.us-west-2.compute.internal"
        else:  # Kubernetes: the pod name is the hostname, the headless service gives the FQDN
            short = f"{job_name}-worker-{i}"
            fqdn = f"{short}.{job_name}.default.svc.cluster.local"
            ip = f"10.244.{rng.randint(0, 60)}.{rng.randint(2, 250)}"
        out.append((short, fqdn, ip))
    return out


def make_job(rng: random.Random, job_id: str, style: str, n_nodes: int, nproc: int) -> Job:
    host_style = "pod" if style.startswith("k8s") else rng.choice(["short", "fqdn", "ip"])
    job_name = rng.choice(["llm-pretrain", "vit-ft", "moe-train", "gpt-sft"]) + f"-{rng.randint(10, 99)}"
    names = _names(rng, host_style, n_nodes, job_name)
    order = list(range(n_nodes))
    # c10d rendezvous hands out group ranks in join order; static rendezvous and k8s operators keep the order
    if style in ("torchrun_nodes", "k8s_torchrun") and n_nodes > 1 and rng.random() < 0.5:
        rng.shuffle(order)
    t0 = datetime(2026, rng.randint(1, 11), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59),
                  tzinfo=UTC).timestamp()
    big_skew = rng.random() < 0.3
    nodes = []
    for i, (short, fqdn, ip) in enumerate(names):
        skew = 0.0 if i == 0 else rng.uniform(-40.0, 40.0) if big_skew else rng.uniform(-2.0, 2.0)
        buses = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"][:nproc] if nproc <= 8 else []
        nodes.append(Node(index=i, node_rank=order[i], short=short, fqdn=fqdn, ip=ip, skew=skew,
                          boot=t0 - rng.uniform(3600, 40 * 86400), pci=[f"0000:{b}:00" for b in buses]))
    job = Job(rng=rng, job_id=job_id, slurm_id=rng.randint(100000, 9999999), nodes=nodes, nproc=nproc, t0=t0,
              style=style, host_style=host_style, torch_new=rng.random() < 0.75,
              nccl_version=rng.choice(["2.18.6", "2.20.5", "2.21.5", "2.23.4"]), nccl_debug=rng.random() < 0.6)
    for n in nodes:
        job.agent_pid[n.index] = rng.randint(2000, 90000)
        job.pid_base[n.index] = job.agent_pid[n.index] + rng.randint(5, 40)
    job.seq = rng.randint(300, 90000)
    job.op = rng.choice(["ALLREDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "ALLREDUCE"])
    job.numel = rng.choice([1, 8, 1048576, 262144000, 33554432])
    job.timeout_ms = rng.choice([600000, 600000, 1800000, 300000])
    return job


def fmt_delta(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)
