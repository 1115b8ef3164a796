"""Hosts, names, addresses, GPUs, clocks: the physical side of one job.

Nothing here prints a log line; layouts and kinds ask a Host for its names, its clock and its GPUs.
"""

from __future__ import annotations

import datetime as _dt
import random
import string
from dataclasses import dataclass, field

# H100/A100 8-GPU baseboards: PCI buses of the eight GPUs as `lspci` / NVRM print them (domain 0000).
# Values are typical of HGX systems; the mapping local rank -> bus is fixed per host.
HGX_BUSES = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
A100_BUSES = ["07", "0f", "47", "4e", "87", "90", "b7", "bd"]
# Root ports above each GPU (for PCIe AER lines), one per GPU bus.
ROOT_PORT = {b: f"{int(b, 16) - 2:02x}" for b in HGX_BUSES + A100_BUSES}


@dataclass
class Host:
    index: int  # position in the allocation / hostfile / pod list
    short: str  # gethostname() as NCCL prints it
    fqdn: str  # socket.getfqdn() as torchelastic's table prints it
    ip: str
    skew: float  # seconds this host's clock is ahead of true time
    boot: float  # true epoch seconds of boot (dmesg raw stamps count from here)
    buses: list[str]
    pod: str | None = None  # Kubernetes pod running on it (host label on k8s)
    k8s_node: str | None = None  # the Kubernetes node name
    node_rank: int = 0  # torchrun / launcher node rank (may differ from index)
    pids: list[int] = field(default_factory=list)  # worker pid per local rank
    agent_pid: int = 0

    def clock(self, t: float) -> float:
        return t + self.skew


def _aws_ip(rng: random.Random) -> str:
    return f"10.{rng.randint(0, 3)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"


def make_hosts(rng: random.Random, n: int, style: str, nproc: int, t0: float, big_skew: bool) -> list[Host]:
    """`style` picks a naming scheme: slurm, aws_ec2, aws_pcluster, gcp_vm, gke, onprem."""
    hosts: list[Host] = []
    base_ip = _aws_ip(rng)
    a, b, _c, _ = base_ip.split(".")
    prefix = rng.choice(["gpu", "dgx", "hgx-", "nid00", "cn"])
    rack = rng.randint(1, 9)
    start = rng.randint(1, 180)
    pool_hash = "".join(rng.choice("0123456789abcdef") for _ in range(8))
    gcp_proj = rng.choice(["a3mega", "a3u", "train"])
    pc_queue = rng.choice(["p5", "compute-gpu", "train"])
    pc_type = rng.choice(["p548xlarge", "p4d24xlarge", "p5en48xlarge"])
    used = set()
    for i in range(n):
        while True:
            ip = f"{a}.{b}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
            if ip not in used:
                used.add(ip)
                break
        if style == "slurm":
            short = f"{prefix}{start + i:03d}" if not prefix.endswith("-") else f"{prefix}r{rack}-{start + i:02d}"
            fqdn = f"{short}.cluster.internal"
        elif style == "onprem":
            short = f"node-{start + i:04d}"
            fqdn = f"{short}.hpc.example.org"
        elif style == "aws_ec2":
            short = "ip-" + ip.replace(".", "-")
            fqdn = short + ".ec2.internal"
        elif style == "aws_pcluster":
            short = f"{pc_queue}-st-{pc_type}-{start + i}"
            fqdn = short + ".pcluster.local"
        elif style == "gcp_vm":
            short = f"{gcp_proj}-vm-{start + i}"
            fqdn = f"{short}.us-central1-a.c.ml-{pool_hash[:4]}.internal"
        else:  # gke: the container's hostname is the pod; the node has the GKE name
            suffix = "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(4))
            short = f"gke-{gcp_proj}-gpu-pool-{pool_hash}-{suffix}"
            fqdn = short
        skew = rng.uniform(-40, 40) if big_skew else rng.uniform(-2.0, 2.0)
        buses = list(rng.choice([HGX_BUSES, A100_BUSES]))[: max(nproc, 1)]
        if nproc > 8:
            buses = (HGX_BUSES * 2)[:nproc]
        h = Host(i, short, fqdn, ip, skew, t0 - rng.uniform(3600 * 5, 3600 * 24 * 40), buses)
        h.agent_pid = rng.randint(1000, 90000)
        base = rng.randint(1000, 400000)
        h.pids = [base + 7 * k + rng.randint(0, 5) for k in range(nproc)]
        hosts.append(h)
    return hosts


# ---- time formatting (always from a host clock value, i.e. after skew) ----


def utc(t: float) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(t, tz=_dt.UTC)


def iso(t: float) -> str:  # 2026-12-07 06:12:01
    return utc(t).strftime("%Y-%m-%d %H:%M:%S")


def iso_ms(t: float) -> str:  # 2026-12-07 06:12:01,123  (python logging asctime)
    d = utc(t)
    return d.strftime("%Y-%m-%d %H:%M:%S") + f",{d.microsecond // 1000:03d}"


def rfc3339n(t: float) -> str:  # 2026-12-07T06:12:01.123456789Z (kubectl --timestamps)
    d = utc(t)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{d.microsecond:06d}{int(t * 1e9) % 1000:03d}Z"


def glog(t: float, sev: str = "E") -> str:  # E1207 06:12:01.123456789 (c10 MessageLogger, torch >= 2.4)
    d = utc(t)
    return f"{sev}{d:%m%d} {d:%H:%M:%S}.{d.microsecond:06d}{int(t * 1e9) % 1000:03d}"


def glog_us(t: float, sev: str = "I") -> str:  # I1207 06:12:01.123000 (torch._logging, elastic, 6 digits)
    d = utc(t)
    return f"{sev}{d:%m%d} {d:%H:%M:%S}.{(d.microsecond // 1000) * 1000:06d}"


def syslog_ts(t: float) -> str:  # Dec  7 06:12:01
    d = utc(t)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S}"


def journal_ts(t: float) -> str:  # Dec 07 06:12:01
    return utc(t).strftime("%b %d %H:%M:%S")


def slurm_ts(t: float) -> str:  # 2026-12-07T06:12:01 (slurm_make_time_str default)
    return utc(t).strftime("%Y-%m-%dT%H:%M:%S")


def elastic_table_ts(t: float) -> str:  # 2026-12-07_06:12:01 (ProcessFailure.timestamp_isoformat)
    return utc(t).strftime("%Y-%m-%d_%H:%M:%S")


def stamp_compact(t: float) -> str:  # 20261207061201 (DeepSpeed log_name_prefix)
    return utc(t).strftime("%Y%m%d%H%M%S")


def nemo_dir_ts(t: float) -> str:  # 2026-12-07_06-12-01 (exp_manager version dir)
    return utc(t).strftime("%Y-%m-%d_%H-%M-%S")
