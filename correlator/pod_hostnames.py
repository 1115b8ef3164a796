"""A pod's hostname is that pod, though it is not always the pod's name. Pure.

NCCL, torchrun and the pod's own processes print the pod's hostname; the operator, the kubelet's events and
`kubectl get pods` print the pod's name. The two differ in two ways, and each pair is one host, reported by the
pod's name (Kubernetes' own):
- an Indexed Job's pod (a JobSet's, a Kubeflow TrainJob's under its JobSet) is named `<job>-<index>-` plus the
  five random characters the API server appends to a generateName, while its hostname is `<job>-<index>`
  (kubernetes pkg/controller/job/job_controller.go: `template.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name,
  completionIndex)`, `podGenerateNameWithIndex`; the suffix from k8s.io/apimachinery pkg/util/rand's alphabet
  "bcdfghjklmnpqrstvwxz2456789"). A JobSet's job is `<jobset>-<replicated job>-<job index>` (kubernetes-sigs/
  jobset pkg/util/placement/placement.go, GenJobName), so the hostname is GenPodName's `<jobset>-<replicated
  job>-<job index>-<pod index>`;
- a hostname holds at most 63 characters: the kubelet cuts a longer one to its first 63 and trims the hyphens
  and dots it then ends with (kubernetes pkg/kubelet/kubelet_pods.go, truncatePodHostnameIfNeeded).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_HOSTNAME_MAX = 63
_GENERATED = re.compile(r"^(?P<host>[a-z0-9][a-z0-9-]*-\d{1,6})-[bcdfghjklmnpqrstvwxz2456789]{5}$")


def pod_hostnames(names: Iterable[str]) -> list[tuple[str, str]]:
    """(a pod's hostname, the pod's name) for each pod name seen whose hostname was seen too."""
    seen = {name.split(".")[0] for name in names if name}
    pairs = []
    for full in seen:
        if len(full) > _HOSTNAME_MAX and (cut := full[:_HOSTNAME_MAX].rstrip("-.")) in seen:
            pairs.append((cut, full))
        elif (m := _GENERATED.match(full)) and m["host"] in seen:
            pairs.append((m["host"], full))
    return pairs
