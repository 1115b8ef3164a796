"""A host that runs one rank, and a rank whose host only its node's block gives (issue 22, patterns 1 and 2).

A pod's log and its `kubectl describe` name the pod, a node's kernel log names the node; neither prints a rank.
Where NCCL's init line says its node runs one rank (NCCL >= 2.19 src/init.cc: `comm %p rank %d nRanks %d nNodes
%d localRanks %d localRank %d MNNVL %d`), everything the pod or node says is that rank's. And torchrun's --log-dir
files a worker that printed nothing under its node's folder: its node's other workers give the block (global =
base + local, torch/distributed/elastic/agent/server/api.py _assign_worker_ranks), so a fault of that node is
that worker's when its silence singles it out.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

PODS = F.Job(hosts=tuple(f"trainer-{c}" for c in "abcdefgh"), per_host=1)


def _diagnose(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(root), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _pod_init(rank: int) -> list[str]:
    """One process per pod: nNodes = nRanks, localRanks 1 (NCCL 2.19+ prints it before Init COMPLETE)."""
    n = PODS.world
    return [F.nccl(PODS, rank, "INFO", f"comm 0x55d0c00{rank:02d}000 rank {rank} nRanks {n} nNodes {n} "
                                       "localRanks 1 localRank 0 MNNVL 0", tid=0), *F.nccl_init(PODS, rank)]


def _survivor(rank: int, victim: int) -> list[str]:
    t = F.T0 + timedelta(seconds=2, milliseconds=10 * rank)
    return [F.conn_reset(PODS, rank, PODS.host(victim)), *F.teardown(rank, t)]


def _pods(victim: int, victim_lines: list[str]) -> dict[str, list[str]]:
    files = {}
    for r in range(PODS.world):
        tail = victim_lines if r == victim else _survivor(r, victim)
        files[f"pods/{PODS.host(r)}.log"] = _pod_init(r) + tail
    return files


def _describe(pod: str, reason: str, code: int) -> list[str]:
    """`kubectl describe pod` (kubectl pkg/describe/describe.go describeContainerState: `Reason:\\t%s`,
    `Exit Code:\\t%d` under `State:  Terminated`)."""
    return [f"Name:             {pod}", "Namespace:        default", f"Node:             gke-pool-{pod}/10.128.0.9",
            "Status:           Failed", "Containers:", "  pytorch:", "    State:          Terminated",
            f"      Reason:       {reason}", f"      Exit Code:    {code}", "    Ready:          False"]


def _root(d: dict[str, object]) -> dict[str, object]:
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    return rc


def test_an_unprefixed_traceback_in_a_one_rank_pods_log_is_that_ranks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The pod trainer-f runs rank 5 (its NCCL lines say so; its name holds no index). Its CUDA OOM traceback has
    no prefix, the others lose their connection to it: the OOM is rank 5's, named with confidence."""
    oom = ["Traceback (most recent call last):", '  File "/workspace/train.py", line 412, in <module>',
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "79.19 GiB of which 637.47 MiB is free."]
    d = _diagnose(F.write(tmp_path, _pods(5, oom)), capsys)
    rc = _root(d)
    assert (rc["rank"], rc["host"], rc["signature"]) == (5, "trainer-f", "cuda.oom"), rc["explanation"]
    assert isinstance(rc["confidence"], float) and rc["confidence"] >= 0.7, rc["explanation"]


def test_a_pods_container_exit_code_speaks_for_its_one_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 3's pod printed nothing after init; `kubectl describe` shows its container ended with 139 (SIGSEGV),
    the others' with 1 after losing it: the crash is rank 3's, a segmentation fault."""
    files = _pods(3, [])
    for r in range(PODS.world):
        pod = PODS.host(r)
        files[f"describe/{pod}.txt"] = _describe(pod, "Error", 139 if r == 3 else 1)
    rc = _root(_diagnose(F.write(tmp_path, files), capsys))
    assert rc["rank"] == 3 and rc["host"] == "trainer-d", rc["explanation"]
    assert "segfault" in str(rc["signature"]), rc["signature"]


def test_a_pod_index_free_job_without_nccl_counts_is_not_guessed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without NCCL's localRanks count and with fewer hosts known than ranks, a node's kernel OOM line is not put
    on the one rank that happens to be seen on that node: eight ranks per node, only rank 9 printed an init line."""
    job = F.Job()
    files = {f"{job.host(9)}/rank9.log": F.nccl_init(job, 9) + F.steps(9, F.T0),
             f"dmesg/{job.host(9)}.log": F.dmesg_oom(55555, F.T0)}
    rc = _root(_diagnose(F.write(tmp_path, files), capsys))
    assert rc["signature"] == "host.oom_killer"
    assert rc["rank"] is None and rc["host"] == job.host(9), rc["explanation"]


def test_a_silent_log_dir_worker_under_its_nodes_xid_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchrun --log-dir: local rank 1 of the second node (rank 9) printed nothing and is absent from the
    collective the other fifteen time out in; that node's kernel log has an Xid 79. The Xid is rank 9's."""
    job, seq, silent = F.Job(), 1843, 9
    for r in range(job.world):
        folder = tmp_path / job.host(r) / "none_k2j4x9" / "attempt_0" / str(job.local(r))
        folder.mkdir(parents=True)
        t = F.T0 + timedelta(milliseconds=30 * r)
        body = [] if r == silent else [*F.steps(r, F.T0 - timedelta(minutes=10)),
                                       F.watchdog_timeout(r, t, seq), *F.teardown(r, t)]
        (folder / "stderr.log").write_text("\n".join(body) + "\n")
    stamp = f"[{F.T0 - timedelta(minutes=30):%a %b %d %H:%M:%S %Y}]"
    F.write(tmp_path, {f"dmesg/{job.host(silent)}.log": [
        f"{stamp} NVRM: Xid (PCI:0000:2b:00): 79, pid=41333, name=python3, GPU has fallen off the bus."]})
    rc = _root(_diagnose(tmp_path, capsys))
    assert rc["signature"] == "xid.79"
    assert (rc["rank"], rc["host"]) == (silent, job.host(silent)), rc["explanation"]


def test_a_kernel_oom_kill_no_line_ties_to_a_rank_names_its_node_not_a_rank_every_task_shares(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """srun reports every task Killed (SchedMD/slurm src/srun/launch.c: `%s: %s %s: Killed`), slurmstepd counts
    the step's OOM kill without a place (src/plugins/task/cgroup: `Detected %u oom_kill event%s in %ps`), and one
    node's kernel killed a pid no log names. The exit code all sixteen share singles out no rank: the node is the
    answer, and the step's line is the same event, not a rival cause of the whole job."""
    job = F.Job()
    files = {"slurm-4242.out": ["srun: error: gpu-a01: tasks 0-7: Killed", "srun: error: gpu-a02: tasks 8-15: Killed",
                                "slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of the step "
                                "tasks have been OOM Killed."],
             f"dmesg/{job.host(3)}.log": F.dmesg_oom(55555, F.T0)}
    d = _diagnose(F.write(tmp_path, files), capsys)
    rc = _root(d)
    assert rc["signature"] == "host.oom_killer"
    assert (rc["rank"], rc["host"]) == (None, job.host(3)), rc["explanation"]
    assert "slurm.oom_kill_event" not in {a["signature"] for a in d["alternatives"]}  # type: ignore[attr-defined]


def _scheduled_pods(nodes: list[str], segfault_on: str) -> dict[str, list[str]]:
    """Eight one-rank pods sft-worker-0..7 (NCCL 2.18: no localRanks line; as many hosts as ranks), each pod's
    `kubectl describe` naming the node it ran on (`Node:  <node>/<ip>`); one node's kernel prints a segfault of a
    pid no log names (arch/x86/mm/fault.c show_signal_msg: `%s[%d]: segfault at %lx ip %px sp %px error %lx`)."""
    job = F.Job(hosts=tuple(f"sft-worker-{i}" for i in range(8)), per_host=1)
    files = {}
    for r in range(job.world):
        pod = job.host(r)
        files[f"pods/{pod}.log"] = F.nccl_init(job, r) + ([] if nodes[r] == segfault_on else F.steps(r, F.T0))
        files[f"describe/{pod}.txt"] = [line.replace(f"gke-pool-{pod}", nodes[r])
                                        for line in _describe(pod, "Error", 139 if nodes[r] == segfault_on else 1)]
    stamp = f"[{F.T0 + timedelta(seconds=5):%a %b %d %H:%M:%S %Y}]"
    files[f"nodes/{segfault_on}.dmesg"] = [
        f"{stamp} python3[5425]: segfault at 0 ip 00007f154c03d6 sp 00007ffd23b541cb error 4 in "
        "libfused_ops.so[7f3a2b400000+1c5000] likely on CPU 23 (core 9, socket 0)"]
    return files


def test_a_node_that_ran_one_pod_speaks_for_that_pods_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The kernel names the node, the pod's describe ties the pod to it: the segfault and the pod's exit 139 are
    one suspect, rank 5, named with confidence."""
    nodes = [f"gke-a3-pool-{i:03d}" for i in range(8)]
    rc = _root(_diagnose(F.write(tmp_path, _scheduled_pods(nodes, nodes[5])), capsys))
    assert (rc["rank"], rc["host"], rc["signature"]) == (5, "sft-worker-5", "host.segfault"), rc["explanation"]
    assert isinstance(rc["confidence"], float) and rc["confidence"] >= 0.7, rc["explanation"]


def test_a_node_that_ran_two_pods_names_no_rank_of_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Pods 4 and 5 shared a node: its kernel's segfault is one of theirs, the logs do not say which."""
    nodes = [f"gke-a3-pool-{i:03d}" for i in (0, 1, 2, 3, 4, 4, 6, 7)]
    rc = _root(_diagnose(F.write(tmp_path, _scheduled_pods(nodes, nodes[4])), capsys))
    assert rc["rank"] not in (4, 5) or rc["confidence"] < 0.7, rc["explanation"]
