"""`kubectl get pods -o wide` ties a pod to its address and its node: a Ray worker's prefix (the pod's address) and a
node's kernel line then meet in one pod (issue 22, KubeRay).

Formats, each from its upstream source:
- kubectl's pod table (kubernetes pkg/printers/internalversion/printers.go, podColumnDefinitions): NAME, READY,
  STATUS, RESTARTS, AGE, and under -o wide the priority-1 columns IP, NODE, NOMINATED NODE, READINESS GATES.
- Ray's worker prefix (ray python/ray/_private/worker.py, print_worker_logs): "({name} pid=N, ip=A) "; under
  KubeRay a Ray node is a pod, so A is the pod's IP. Ray Train's worker table (python/ray/train/_internal/
  backend_executor.py): "- (node_id=..., ip=A, pid=P) world_rank=R, local_rank=L, node_rank=N".
- PyTorch's watchdog (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp) "[PG ID 0 PG GUID 0(default_pg) Rank R]
  Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure", c10's
  "[rankR]:" prefix; the node's Xid 79 (NVIDIA/open-gpu-kernel-modules kernel_rc.c: "NVRM: Xid (PCI:%04x:%02x:%02x):
  %d, pid=%s, name=%s, %s"), as journalctl -k prints it.
- Ray's ActorDiedError (python/ray/exceptions.py: "\tpid: {cause.pid}" ... "\tip: {cause.node_ip_address}") and a
  cgroup's OOM kill on the node (linux mm/oom_kill.c: "Memory cgroup out of memory: Killed process %d (%s)"), whose
  pid is the node's pid namespace's, printed by no line of the pod.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

HEAD, POD_A, POD_B = "trainer-raycluster-x2jxw-head-txtnb", "trainer-raycluster-x2jxw-worker-vpqmv", \
    "trainer-raycluster-x2jxw-worker-k5z8b"
NODE_A, NODE_B = "gke-train-a3-pool-7b7522b8-b5x0", "gke-train-a3-pool-9dc4cb60-f1x1"
IP_A, IP_B, IP_HEAD = "10.12.87.139", "10.107.116.202", "10.119.225.13"


def _pods_wide() -> list[str]:
    row = "{:<40} 1/1     Running   0          3h11m   {:<15}  {:<34} <none>           <none>"
    return ["NAME                                     READY   STATUS    RESTARTS   AGE     IP               NODE"
            "                               NOMINATED NODE   READINESS GATES",
            row.format(HEAD, IP_HEAD, "gke-train-cpu-pool-1c2d3e4f-x0q1"), row.format(POD_A, IP_A, NODE_A),
            row.format(POD_B, IP_B, NODE_B)]


def _driver(victim: int) -> list[str]:
    lines = [f"(TorchTrainer pid=476, ip={IP_HEAD}) Started distributed worker processes: "]
    for rank in range(8):
        ip = IP_A if rank < 4 else IP_B
        lines.append(f"(TorchTrainer pid=476, ip={IP_HEAD}) - (node_id=8fb27f8acd{rank // 4}, ip={ip}, "
                     f"pid={30920 + rank}) world_rank={rank}, local_rank={rank % 4}, node_rank={rank // 4}")
    ip = IP_A if victim < 4 else IP_B
    lines.append(f"(RayTrainWorker pid={30920 + victim}, ip={ip}) [rank{victim}]:[E1208 11:14:11.055907726 "
                 f"ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank {victim}] Process group watchdog "
                 "thread terminated with exception: CUDA error: unspecified launch failure")
    return lines


def _job(root: Path, victim: int, listing: bool) -> Path:
    (root / "nodes").mkdir(parents=True)
    (root / "submitter.log").write_text("\n".join(_driver(victim)) + "\n")
    node = NODE_A if victim < 4 else NODE_B
    (root / "nodes" / f"{node}.log").write_text(
        f"Dec 08 11:14:07 {node} kernel: NVRM: Xid (PCI:0000:92:00): 79, pid='<unknown>', name=<unknown>, GPU has "
        "fallen off the bus.\n")
    if listing:
        (root / "pods.txt").write_text("\n".join(_pods_wide()) + "\n")
    return root


def _diagnose(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(root), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert isinstance(rc, dict)
    return rc


@pytest.mark.parametrize("victim", [2, 5])
def test_a_nodes_xid_is_the_rank_whose_pod_the_listing_puts_on_that_node(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], victim: int) -> None:
    rc = _diagnose(_job(tmp_path, victim, listing=True), capsys)
    assert rc["signature"] == "xid.79"
    assert rc["rank"] == victim
    assert rc["host"] == (POD_A if victim < 4 else POD_B)  # Kubernetes' name for the Ray node at that address


def test_without_the_listing_the_node_and_the_worker_stay_apart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = _diagnose(_job(tmp_path, 5, listing=False), capsys)
    assert not (rc["signature"] == "xid.79" and rc["rank"] == 5)


def _oom_job(root: Path, dead: int, listing: bool) -> Path:
    ip = IP_A if dead < 4 else IP_B
    # the worker table, and each worker's own first line (ray python/ray/train/torch/config.py,
    # _setup_torch_process_group: "Setting up process group for: {init_method} [rank={rank}, world_size={ws}]")
    lines = _driver(dead)[:9] + [f"(RayTrainWorker pid={30920 + r}, ip={IP_A if r < 4 else IP_B}) Setting up process "
                                 f"group for: env:// [rank={r}, world_size=8]" for r in range(8)]
    lines += ["ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
              "\tclass_name: RayTrainWorker", "\tactor_id: 6c6b69d76fc234bae9e90df56cac10b0", f"\tpid: {30920 + dead}",
              "\tnamespace: 5e884a8-0000-4000-8000-9c9a42d247", f"\tip: {ip}",
              "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
              "detail: Worker unexpectedly exits with a connection error code 2. End of file."]
    (root / "nodes").mkdir(parents=True)
    (root / "submitter.log").write_text("\n".join(lines) + "\n")
    node = NODE_A if dead < 4 else NODE_B
    (root / "nodes" / f"{node}.log").write_text(
        f"Dec 09 04:22:25 {node} kernel: Memory cgroup out of memory: Killed process 1873672 (python3) "
        "total-vm:418659392kB, anon-rss:378535936kB, file-rss:81232kB, shmem-rss:1048576kB, UID:1000 pgtables:1kB "
        "oom_score_adj:-997\n")
    if listing:
        (root / "pods.txt").write_text("\n".join(_pods_wide()) + "\n")
    return root


@pytest.mark.parametrize("dead", [1, 6])
def test_a_cgroup_kill_on_the_node_of_the_dead_actors_pod_is_that_ranks_death(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], dead: int) -> None:
    rc = _diagnose(_oom_job(tmp_path, dead, listing=True), capsys)
    assert (rc["signature"], rc["rank"]) == ("host.cgroup_oom", dead)


def test_without_the_listing_the_kill_is_no_ranks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = _diagnose(_oom_job(tmp_path, 6, listing=False), capsys)
    assert (rc["signature"], rc["rank"]) != ("host.cgroup_oom", 6)
