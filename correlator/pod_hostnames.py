"""A pod's hostname cut to 63 characters is that pod. Pure.

A pod's hostname is its name (or spec.hostname), and a host name holds at most 63 characters: the kubelet cuts a
longer one to its first 63 and trims the hyphens and dots it then ends with (kubernetes pkg/kubelet/kubelet_pods.go,
truncatePodHostnameIfNeeded). NCCL, torchrun and the pod's own processes print the cut name; the operator, the
kubelet's events and `kubectl get pods` print the pod's full name. Generated names run long (a JobSet pod is
<jobset>-<replicated job>-<job index>-<pod index>-<5 random characters>, a Kubeflow TrainJob's the same under its
JobSet), so the two names of one pod are one host, reported by the pod's full name: Kubernetes' own.
"""

from __future__ import annotations

from collections.abc import Iterable

_HOSTNAME_MAX = 63


def cut_pod_hostnames(names: Iterable[str]) -> list[tuple[str, str]]:
    """(the cut hostname, the pod's full name) for each name seen longer than a host name may be whose cut form
    was seen too."""
    seen = {name.split(".")[0] for name in names if name}
    return [(cut, full) for full in seen if len(full) > _HOSTNAME_MAX
            and (cut := full[:_HOSTNAME_MAX].rstrip("-.")) in seen]
