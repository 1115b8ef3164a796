"""A pod the scheduler placed on a node whose GPUs the device plugin had withdrawn: the kubelet refuses it, and
the node is the fault (issue 22, pattern 6).

Formats, each from its upstream source:
- kube-scheduler's Scheduled event (kubernetes pkg/scheduler/schedule_one.go): `Successfully assigned %v/%v to %v`
  (namespace, pod, node), as `kubectl describe pod` lists it under Events and `kubectl get events` prints it.
- The kubelet's admission failure (pkg/kubelet/cm/devicemanager/manager.go, devicesToAllocate: `no healthy
  devices present; cannot allocate unhealthy devices %s`; pkg/kubelet/lifecycle/predicate.go wraps it as
  `Allocate failed due to %v, which is unexpected`, reason UnexpectedAdmissionError).
- The scheduler's FailedScheduling (`0/N nodes are available: K Insufficient nvidia.com/gpu`), printed while the
  pod waited for a node: a symptom of the GPUs being withdrawn, not a second cause.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

EVENTS = "\n".join([
    "Events:",
    "  Type     Reason                    Age    From               Message",
    "  ----     ------                    ----   ----               -------",
    "  Warning  FailedScheduling          12m    default-scheduler  0/6 nodes are available: 2 Insufficient "
    "nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector. preemption: 0/6 nodes are available: 6 "
    "Preemption is not helpful for scheduling.",
    "  Normal   Scheduled                 11m    default-scheduler  Successfully assigned "
    "research/pretrain-7b-worker-2-x8k2p to {node}",
    "  Normal   Pulled                    11m    kubelet            Container image "
    '"registry.example/train:24.10" already present on machine',
    "  Normal   Started                   11m    kubelet            Started container trainer",
    "  Normal   Killing                   11m    kubelet            Stopping container trainer",
    "  Warning  UnexpectedAdmissionError  9m     kubelet            Allocate failed due to no healthy devices "
    "present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected",
]) + "\n"


@pytest.mark.parametrize("node", ["gpu-a100-07.cluster.internal", "ip-10-0-5-89.ec2.internal"])
def test_the_node_the_pod_was_assigned_to_is_named_with_its_gpus_unhealthy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], node: str) -> None:
    (tmp_path / "describe-pod.txt").write_text(EVENTS.format(node=node))
    assert main(["diagnose", str(tmp_path), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    rc = d["root_cause"]
    assert (rc["signature"], rc["host"], rc["rank"]) == ("k8s.gpu_unhealthy", node, None)
    assert "device plugin" in d["fix"]


def test_without_the_assignment_event_the_refusal_names_no_node(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Only the scheduler's event says which node: without it the answer does not invent one."""
    text = "\n".join(line for line in EVENTS.format(node="x").splitlines() if "Successfully assigned" not in line)
    (tmp_path / "describe-pod.txt").write_text(text + "\n")
    assert main(["diagnose", str(tmp_path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert rc["signature"] == "k8s.gpu_unhealthy" and rc["host"] is None
