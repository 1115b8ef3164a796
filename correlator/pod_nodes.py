"""A Kubernetes node and the one pod of the job it ran: where a node's kernel line finds its rank. Pure.

`kubectl describe pod` prints the pod's name and the node it was scheduled on (kubernetes/kubectl
pkg/describe/describe.go, describePod: `Name:\t%s` with pod.Name, `Node:\t%s` with pod.Spec.NodeName + "/" +
pod.Status.HostIP). The node's kernel log names the node (an Xid, the OOM killer), the pod's log names the pod,
and the ranks the pod runs are numbered on the pod's lines (NCCL's init line with the GPU's bus id, torchrun's
failure table with the worker's pid). A node on which exactly one of the job's pods ran holds that pod's
processes, however many ranks the pod runs, so a kernel line of the node that names a GPU or a process is looked
up among that pod's ranks. The hosts stay apart otherwise: the node is still named by its own name where the line
ties to no rank (the machine to drain), and the pod by its own.
"""

from __future__ import annotations

from collections.abc import Mapping

from correlator.kept import ContextRecord


def lone_pods(of_kind: Mapping[str, list[ContextRecord]]) -> dict[str, str]:
    """pod -> node, for each node that ran exactly one of the job's described pods (and is not itself a pod)."""
    pod_of = {rec.source: str(rec.fields["host"]) for rec in of_kind.get("k8s_pod", ())}
    pods_on: dict[str, set[str]] = {}
    for rec in of_kind.get("k8s_node", ()):
        if (pod := pod_of.get(rec.source)) is not None:
            pods_on.setdefault(str(rec.fields["host"]), set()).add(pod)
    pods = set(pod_of.values())
    for rec in of_kind.get("k8s_pod_row", ()):  # kubectl get pods -o wide: a row a pod, its node last but two
        pods_on.setdefault(str(rec.fields["host"]), set()).add(str(rec.fields["pod"]))
        pods.add(str(rec.fields["pod"]))
    # the scheduler's Scheduled event, "Successfully assigned <namespace>/<pod> to <node>" (kubernetes
    # pkg/scheduler/schedule_one.go), as `kubectl get events` lists it for the whole job
    for rec in of_kind.get("k8s_assigned", ()):
        pod = str(rec.fields["pod"]).rsplit("/", 1)[-1]
        pods_on.setdefault(str(rec.fields["host"]), set()).add(pod)
        pods.add(pod)
    return {next(iter(on)): node for node, on in pods_on.items()
            if len(on) == 1 and node not in pods and node != next(iter(on))}


def listed_pod_addresses(of_kind: Mapping[str, list[ContextRecord]]) -> list[tuple[str, str]]:
    """(address, pod) for each pod `kubectl get pods -o wide` lists with its IP: the address a pod's processes
    advertise (Ray's "(... pid=P, ip=A)" prefix under KubeRay, whose Ray node is the pod) is that pod's, and
    Kubernetes' name for it is the pod's. An address listed for two pods (host networking) names neither."""
    pods: dict[str, set[str]] = {}
    for rec in of_kind.get("k8s_pod_row", ()):
        pods.setdefault(str(rec.fields["ip"]), set()).add(str(rec.fields["pod"]))
    return [(ip, next(iter(named))) for ip, named in pods.items() if len(named) == 1]
