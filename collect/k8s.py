"""Kubernetes pod events and pod status into a job's event and a scheduler log, from `kubectl ... -o json`.

Upstream types (kubernetes/api, k8s.io/api):
- core/v1 Event: involvedObject {kind, name}, reason, message, type, source {component, host}, lastTimestamp
  (or eventTime, firstTimestamp), count. The kubelet's eviction manager reports reason "Evicted" (pkg/kubelet/
  eviction: "The node was low on resource: memory."); the Job controller "BackoffLimitExceeded" and
  "DeadlineExceeded" (batch/v1 JobReasonBackoffLimitExceeded, JobReasonDeadlineExceeded).
- core/v1 Pod: spec.nodeName; status {phase, reason ("Evicted"), message, containerStatuses[] {name, state,
  lastState: {terminated: {exitCode, signal, reason ("OOMKilled", "Error"), finishedAt}}}}; a container that
  restarted keeps the death in lastState, one still down in state.
Input: a List (`kubectl get events -o json`, `kubectl get pods -o json`), one object, or several documents one
after another (`kubectl get events -o json; kubectl get pods -o json`). A pod is a host: its hostname is its name,
which is what torchrun and NCCL print inside it. The lines rendered for the scheduler stream are the fields as
`kubectl describe` shows them (Reason: OOMKilled, Exit Code: 137), which the k8s catalog entries read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from collect.send import Item
from ingest.chunking import StreamKey

FAILED_BY = {"BackoffLimitExceeded": "failed", "DeadlineExceeded": "timeout", "MaxFailedIndexesExceeded": "failed",
             "PodFailurePolicy": "failed"}
MAX_OBJECTS = 200_000  # a namespace's events; more is not one job's


@dataclass
class K8sJob:
    hosts: list[str] = field(default_factory=list)  # pods, in the order first seen
    exit_codes: dict[str, int] = field(default_factory=dict)  # pod -> its containers' worst death
    state: str | None = None
    nodes: dict[str, str] = field(default_factory=dict)  # pod -> node
    lines: dict[str | None, list[str]] = field(default_factory=dict)  # pod (None: the job's) -> rendered lines

    def add_host(self, pod: str) -> None:
        if pod not in self.hosts:
            self.hosts.append(pod)

    def say(self, pod: str | None, line: str) -> None:
        self.lines.setdefault(pod, []).append(line)


def documents(text: str) -> list[dict[str, Any]]:
    """Every object of every JSON document in `text` (Lists unpacked), at most MAX_OBJECTS."""
    out: list[dict[str, Any]] = []
    decoder, pos = json.JSONDecoder(), 0
    while pos < len(text) and len(out) < MAX_OBJECTS:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        doc, pos = decoder.raw_decode(text, pos)
        listed = doc.get("items") if isinstance(doc, dict) else None
        objects: list[Any] = listed if isinstance(listed, list) else [doc]
        out += [i for i in objects if isinstance(i, dict)][:MAX_OBJECTS - len(out)]
    return out


def _terminated(status: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for cs in status.get("containerStatuses") or []:
        for which in ("state", "lastState"):
            t = ((cs or {}).get(which) or {}).get("terminated")
            if isinstance(t, dict):
                found.append((str(cs.get("name", "?")), t))
    return found


def _pod(obj: dict[str, Any], job: K8sJob, pods: set[str] | None) -> None:
    name = str((obj.get("metadata") or {}).get("name", ""))
    if not name or (pods is not None and name not in pods):
        return
    job.add_host(name)
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if node := spec.get("nodeName"):
        job.nodes[name] = str(node)
    if status.get("reason"):  # Evicted, Preempting, DeadlineExceeded: the pod as a whole
        job.say(name, f"pod/{name} Status: {status.get('phase', '')} Reason: {status['reason']} "
                      f"Message: {status.get('message', '')}".rstrip())
    deaths = sorted(_terminated(status), key=lambda d: str(d[1].get("finishedAt", "")))
    for container, t in deaths:
        code = t.get("exitCode")
        if not isinstance(code, int) or isinstance(code, bool):
            continue
        job.say(name, f"{t.get('finishedAt', '')} pod/{name} container {container} terminated: "
                      f"Reason: {t.get('reason', '')} Exit Code: {code}"
                      + (f" Signal: {t['signal']}" if t.get("signal") else "")
                      + (f" Message: {t['message']}" if t.get("message") else "").strip())
        if code != 0 and job.exit_codes.get(name, 0) == 0:
            job.exit_codes[name] = code  # the first death by time: a restart's later 143 is its consequence
        job.exit_codes.setdefault(name, code)


def _event(obj: dict[str, Any], job: K8sJob, pods: set[str] | None) -> None:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}  # core/v1 Event, events.k8s.io/v1
    kind, name = str(involved.get("kind", "")), str(involved.get("name", ""))
    reason, message = str(obj.get("reason", "")), str(obj.get("message") or obj.get("note") or "")
    when = obj.get("lastTimestamp") or obj.get("eventTime") or obj.get("firstTimestamp") or ""
    line = f"{when} {obj.get('type', '')} {reason} {kind.lower()}/{name} {message}".strip()
    if kind == "Pod":
        if pods is not None and name not in pods:
            return
        job.add_host(name)
        job.say(name, line)
    else:
        job.say(None, line)
        if kind == "Job" and reason in FAILED_BY:
            job.state = FAILED_BY[reason]


def read(text: str, pods: set[str] | None = None) -> K8sJob:
    """Pods (only those named in `pods`, when given) and events; events in time order within each source."""
    job = K8sJob()
    objects = documents(text)
    if pods is None and any(o.get("kind") == "Pod" for o in objects):  # the pods listed are the job's
        pods = {str((o.get("metadata") or {}).get("name", "")) for o in objects if o.get("kind") == "Pod"}
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Pod":
            _pod(obj, job, pods)
        elif kind == "Event" or "involvedObject" in obj or "regarding" in obj:
            _event(obj, job, pods)
    for lines in job.lines.values():
        lines.sort()  # each line starts with its RFC 3339 time, which sorts as text
    if job.state is None and any(code != 0 for code in job.exit_codes.values()):
        job.state = "failed"
    return job


def items(job: K8sJob) -> list[Item]:
    out = []
    for pod, lines in job.lines.items():
        data = ("\n".join(lines) + "\n").encode()
        # the pod as the folder: a path's first folder names its host to the correlator (a "k8s/" folder would
        # make every pod one host called k8s)
        name = f"{pod}/k8s-events.log" if pod else "k8s-events.log"
        out.append(Item(StreamKey("scheduler", None, pod), name, data=data))
    return out
