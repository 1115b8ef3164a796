"""One node, many names: how each tool names the same machine (issue 22, pattern 2).

The scheduler has its node name (Slurm's NodeName, the pod's name on Kubernetes): that is the identity a
diagnosis must report, and the one the simulator's truth holds. The other tools print what they see:
- NCCL: gethostname() cut at the first '.' (NVIDIA/nccl src/misc/utils.cc getHostName, called from
  src/debug.cc ncclDebugInit);
- torchrun's failure table: socket.getfqdn() (pytorch/pytorch
  torch/distributed/elastic/multiprocessing/errors/__init__.py ChildFailedError._format_failure);
- NCCL's "Connection closed by remote peer": getnameinfo() of the peer's address, its reverse-DNS name
  (NVIDIA/nccl src/misc/socket.cc socketProgress -> ncclSocketToString(numericHostForm=0));
- the kernel log as journald or rsyslog write it: the kernel's hostname; raw dmesg: no host at all;
- everything that prints a socket address numerically: the IP.

Flavours:
- "slurm": NodeName node003, kernel hostname node003.cluster.internal (so NCCL prints node003);
- "aws": ParallelCluster NodeName gpu-st-p4d24xlarge-4, hostname ip-10-0-0-4, FQDN ip-10-0-0-4.ec2.internal
  (the same address the job's lines use);
- "k8s": pod trainjob-worker-3 (hostname = pod name), FQDN trainjob-worker-3.trainjob.default.svc.cluster.local,
  pod IPs 10.244.N.M whose reverse names are 10-244-N-M.trainjob.default.svc.cluster.local.
"""

from __future__ import annotations

from dataclasses import dataclass

FLAVOURS = ("slurm", "aws", "k8s")


@dataclass(frozen=True)
class NodeNames:
    scheduler: str  # the identity: what Slurm or Kubernetes calls the node
    kernel: str  # gethostname(): what journald and rsyslog print
    nccl: str  # gethostname() cut at the first '.'
    fqdn: str  # socket.getfqdn(): torchrun's failure table
    ip: str  # the address NCCL bootstraps on
    reverse: str  # getnameinfo() of that address

    def all(self) -> set[str]:
        return {self.scheduler, self.kernel, self.nccl, self.fqdn, self.ip, self.reverse}


def node_names(flavour: str, node: int, default_ip: str) -> NodeNames:
    """The names of node ``node`` (0-based) under ``flavour``; ``default_ip`` is the address the job's lines use."""
    if flavour == "slurm":
        short = f"node{node:03d}"
        fqdn = f"{short}.cluster.internal"
        return NodeNames(short, fqdn, short, fqdn, default_ip, fqdn)
    if flavour == "aws":
        host = "ip-" + default_ip.replace(".", "-")
        fqdn = f"{host}.ec2.internal"
        return NodeNames(f"gpu-st-p4d24xlarge-{node + 1}", host, host, fqdn, default_ip, fqdn)
    if flavour == "k8s":
        pod = f"trainjob-worker-{node}"
        ip = f"10.244.{node // 250}.{node % 250 + 2}"
        return NodeNames(pod, pod, pod, f"{pod}.trainjob.default.svc.cluster.local", ip,
                         ip.replace(".", "-") + ".trainjob.default.svc.cluster.local")
    raise ValueError(f"unknown host-name flavour {flavour!r}; one of {FLAVOURS}")
