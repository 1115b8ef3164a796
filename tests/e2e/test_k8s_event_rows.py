"""`kubectl get events` for a whole job: each row is about the object its OBJECT column names, not about the node
the file's first Scheduled row assigned a pod to (issue 22).

Formats, each from its upstream source:
- kubectl get events' table (kubernetes pkg/printers/internalversion/printers.go, printEvent): LAST SEEN, TYPE,
  REASON, OBJECT (`fmt.Sprintf("%s/%s", strings.ToLower(obj.InvolvedObject.Kind), obj.InvolvedObject.Name)`),
  MESSAGE; `-A` puts NAMESPACE first.
- kube-scheduler's Scheduled event (pkg/scheduler/schedule_one.go: `Successfully assigned %v/%v to %v`), one row a
  pod: a file holding several names no one node.
- The kubelet's eviction message (pkg/kubelet/eviction/helpers.go, evictionMessage: `The node was low on resource:
  %v. `), and the kubelet's Killing event (`Stopping container %s`).
- A PyTorchJob's pods (kubeflow/training-operator): master-0 is rank 0, worker-i rank i+1, one process a pod; NCCL's
  init line (src/init.cc: `comm %p rank %d nranks %d cudaDev %d ...`) and the watchdog's timeout
  (ProcessGroupNCCL.cpp) on the survivors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

PODS = ["train-master-0", "train-worker-0", "train-worker-1", "train-worker-2"]
NODES = ["gke-pool-a000", "gke-pool-b001", "gke-pool-c002", "gke-pool-d003"]
EVICTED = 2  # train-worker-1


def _pod_log(rank: int) -> str:
    pod = PODS[rank]
    lines = [f"{pod}:4101:4133 [0] NCCL INFO comm 0x55d2e0ff0 rank {rank} nranks 4 cudaDev 0 nvmlDev 0 busId 1b000 "
             "commId 0x2309cda11 - Init COMPLETE"]
    if rank != EVICTED:
        lines.append(f"[E807 02:16:45.092764633 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective "
                     "operation timeout: WorkNCCL(SeqNum=2068, OpType=ALLREDUCE, NumelIn=1048576, "
                     "NumelOut=1048576, Timeout(ms)=600000) ran for 601458 milliseconds before timing out.")
    return "\n".join(lines) + "\n"


def _events(namespace_column: bool) -> str:
    ns = "default   " if namespace_column else ""
    head = "LAST SEEN   TYPE      REASON      OBJECT                 MESSAGE"
    head = ("NAMESPACE   " if namespace_column else "") + head
    rows = [head]
    rows += [f"{ns}18m         Normal    Scheduled   pod/{pod:<18} Successfully assigned default/{pod} to {node}"
             for pod, node in zip(PODS, NODES, strict=True)]
    victim = PODS[EVICTED]
    rows += [f"{ns}11m         Warning   Evicted     pod/{victim:<18} The node was low on resource: "
             "ephemeral-storage. Threshold quantity: 10Gi, available: 9012Mi. ",
             f"{ns}11m         Normal    Killing     pod/{victim:<18} Stopping container pytorch"]
    return "\n".join(rows) + "\n"


def _job(root: Path, namespace_column: bool) -> Path:
    (root / "pods").mkdir(parents=True)
    for rank, pod in enumerate(PODS):
        (root / "pods" / f"{pod}.log").write_text(_pod_log(rank))
    (root / "events.txt").write_text(_events(namespace_column))
    return root


@pytest.mark.parametrize("namespace_column", [False, True])
def test_an_events_row_is_the_pod_it_names(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           namespace_column: bool) -> None:
    """The eviction row names train-worker-1 (rank 2): before, every row of the file was the first pod's node's."""
    assert main(["diagnose", str(_job(tmp_path / "job", namespace_column)), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["signature"], rc["rank"], rc["host"]) == ("k8s.evicted", EVICTED, PODS[EVICTED])
    assert NODES[0] not in " ".join(rc["explanation"])


def test_one_pods_events_still_name_its_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kubectl describe pod`'s Events name one node: that file stays the node's (its eviction is the node's)."""
    (tmp_path / "describe.txt").write_text("\n".join([
        "Events:",
        "  Type     Reason     Age   From               Message",
        "  Normal   Scheduled  18m   default-scheduler  Successfully assigned default/train-worker-1 to gke-pool-c002",
        "  Warning  Evicted    11m   kubelet            The node was low on resource: ephemeral-storage. ",
    ]) + "\n")
    assert main(["diagnose", str(tmp_path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["signature"], rc["host"]) == ("k8s.evicted", "gke-pool-c002")
