"""A Kubernetes node and the one pod of the job it ran, and the process an Xid names (issue 22).

Formats, each from its upstream source:
- `kubectl describe pod` (kubernetes/kubectl pkg/describe/describe.go, describePod): `Name:\\t%s` (pod.Name) and
  `Node:\\t%s` (pod.Spec.NodeName + "/" + pod.Status.HostIP); the pod's log names the pod, the node's kernel log
  the node. A node that ran one pod of the job is that pod's machine, however many ranks the pod runs.
- The driver's Xid (NVIDIA/open-gpu-kernel-modules src/nvidia/src/kernel/gpu/rc/kernel_rc.c):
  `NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s`, the pid being the process that owns the GPU
  channel (the RM client's ProcessID), a pid of the host's.
- NCCL's init line (NVIDIA/nccl src/init.cc): `... rank %d nranks %d cudaDev %d nvmlDev %d busId %lx ...`, the
  GPU's PCI bus the Xid names; torchrun's failure table (torch/distributed/elastic/multiprocessing/errors/
  __init__.py): `rank : N (local_rank: L)`, `exitcode : C (pid: P)`.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

PODS = F.Job(hosts=tuple(f"sft-worker-{i}" for i in range(4)), per_host=2)  # torchrun in each pod: 2 GPUs


def _diagnose(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(root), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert isinstance(rc, dict)
    return rc


def _node(pod: str) -> str:
    return f"gke-a3-pool-{pod.rsplit('-', 1)[1]:0>3}"


def _describe(pod: str, code: int) -> list[str]:
    return [f"Name:             {pod}", "Namespace:        default", f"Node:             {_node(pod)}/10.128.0.9",
            "Status:           Failed", "Containers:", "  pytorch:", "    State:          Terminated",
            "      Reason:       Error", f"      Exit Code:    {code}", "    Ready:          False"]


def _xid(pci_bus: int, pid: int) -> str:
    return (f"[{F.T0 + timedelta(seconds=1):%a %b %d %H:%M:%S %Y}] NVRM: Xid (PCI:0000:{pci_bus:02x}:00): 79, "
            f"pid={pid}, name=python3, GPU has fallen off the bus.")


def _pod_job(victim: int, xid_bus: int) -> dict[str, list[str]]:
    """Four pods of two ranks each, every rank's NCCL init line, every rank timing out in one collective (the
    lost GPU's rank too: nobody is absent from it); the victim's node's kernel prints an Xid 79 on the GPU of bus
    ``xid_bus`` (F.nccl_init: local rank d is on bus 0x1b + 16d)."""
    files: dict[str, list[str]] = {}
    t = F.T0 + timedelta(minutes=10)
    for host in PODS.hosts:
        ranks = [r for r in range(PODS.world) if PODS.host(r) == host]
        lines = [line for r in ranks for line in F.nccl_init(PODS, r)]
        lines += [F.watchdog_timeout(r, t, seq=4812) for r in ranks]
        files[f"pods/{host}.log"] = lines
        files[f"describe/{host}.txt"] = _describe(host, 1)
    files[f"nodes/{_node(PODS.host(victim))}.dmesg"] = [_xid(xid_bus, pid=77000)]
    return files


def test_a_nodes_xid_is_the_rank_of_its_one_pod_whose_gpu_it_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The node ran sft-worker-2 only; its Xid names bus 0x2b, the GPU of local rank 1 there: rank 5 on that pod."""
    rc = _diagnose(F.write(tmp_path, _pod_job(victim=5, xid_bus=0x2b)), capsys)
    assert (rc["rank"], rc["host"], rc["signature"]) == (5, "sft-worker-2", "xid.79"), rc["explanation"]


def test_a_nodes_xid_tied_to_no_rank_is_named_by_the_node(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The Xid's GPU is none NCCL numbered: the fault is the node's, reported by the node an operator drains,
    not by its pod's name."""
    rc = _diagnose(F.write(tmp_path, _pod_job(victim=5, xid_bus=0x9a)), capsys)
    assert (rc["rank"], rc["host"], rc["signature"]) == (None, "gke-a3-pool-002", "xid.79"), rc["explanation"]


def test_a_node_that_ran_two_pods_ties_its_xid_to_neither(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _pod_job(victim=5, xid_bus=0x2b)
    files["describe/sft-worker-3.txt"] = [line.replace("gke-a3-pool-003", "gke-a3-pool-002")
                                          for line in files["describe/sft-worker-3.txt"]]
    rc = _diagnose(F.write(tmp_path, files), capsys)
    assert rc["rank"] != 5 or float(str(rc["confidence"])) < 0.5, rc["explanation"]


BARE = F.Job(hosts=("gpu-a01", "gpu-a02"), per_host=8)


def _bare_job(xid_pid: int) -> dict[str, list[str]]:
    """Two Slurm nodes, no NCCL INFO lines (NCCL_DEBUG=WARN): rank 11's watchdog and the agent's failure table
    with its pid; every other rank times out. gpu-a02's kernel prints an Xid 79 naming process ``xid_pid``."""
    t = F.T0 + timedelta(minutes=10)
    files = {}
    for host in BARE.hosts:
        ranks = [r for r in range(BARE.world) if BARE.host(r) == host]
        lines = [F.watchdog_timeout(r, t, seq=4812) for r in ranks]
        lines += F.agent_failure(BARE, host, ranks[3], -6, t + timedelta(seconds=3))
        files[f"{host}/console.log"] = lines
    files["gpu-a02/dmesg.log"] = [_xid(0x4b, pid=xid_pid)]
    return files


def test_an_xids_pid_names_the_process_of_its_host_that_printed_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The Xid names pid 41407, the pid torchrun's table gives rank 11 on the same host (local rank 3)."""
    rc = _diagnose(F.write(tmp_path, _bare_job(BARE.pid(11))), capsys)
    assert (rc["rank"], rc["host"], rc["signature"]) == (11, "gpu-a02", "xid.79"), rc["explanation"]


def test_an_xids_pid_of_another_host_names_no_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Pids are per host: gpu-a01's rank 3 has the pid gpu-a02's kernel names, and is not that process."""
    rc = _diagnose(F.write(tmp_path, _bare_job(BARE.pid(3))), capsys)
    assert rc["rank"] != 3, rc["explanation"]
    assert rc["host"] == "gpu-a02", rc["explanation"]
