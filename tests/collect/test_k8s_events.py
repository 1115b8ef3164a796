"""`firstfault collect k8s-events` over what kubectl prints (-o json of core/v1 Events and Pods), against a local
ingest server and the embedded service."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from firstfault.cli import main
from tests.fakes.ingest_api import FakeIngest

PODS = [f"llama-worker-{i}" for i in range(4)]


def _terminated(code: int, reason: str, at: str) -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": reason, "startedAt": "2026-12-03T09:00:00Z",
                           "finishedAt": at, "containerID": "containerd://ab12"}}


def pod(name: str, node: str, state: dict[str, Any], last: dict[str, Any] | None = None,
        **status: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml",
            "labels": {"training.kubeflow.org/replica-type": "worker"}}, "spec": {"nodeName": node},
            "status": {"phase": "Failed", **status, "containerStatuses": [
                {"name": "pytorch", "restartCount": 1 if last else 0, "state": state, "lastState": last or {}}]}}


def event(kind: str, name: str, reason: str, message: str, at: str, host: str = "") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{name}.17c1", "namespace": "ml"},
            "involvedObject": {"kind": kind, "name": name, "namespace": "ml"}, "reason": reason, "message": message,
            "type": "Warning", "source": {"component": "kubelet" if kind == "Pod" else "job-controller",
                                          "host": host}, "lastTimestamp": at, "count": 1}


def kubectl_output() -> str:
    """`kubectl get events -o json; kubectl get pods -o json` for a job whose worker-2 hit its memory limit."""
    events = {"apiVersion": "v1", "kind": "List", "items": [
        event("Pod", PODS[2], "BackOff", "Back-off restarting failed container pytorch in pod llama-worker-2",
              "2026-12-03T10:14:09Z", "gpu-e03"),
        event("Pod", "other-job-0", "Evicted", "The node was low on resource: memory.", "2026-12-03T10:13:00Z"),
        event("Job", "llama", "BackoffLimitExceeded", "Job has reached the specified backoff limit",
              "2026-12-03T10:14:30Z")]}
    pods = {"apiVersion": "v1", "kind": "List", "items": [
        pod(PODS[0], "gpu-e01", _terminated(143, "Error", "2026-12-03T10:14:20Z")),
        pod(PODS[1], "gpu-e02", _terminated(143, "Error", "2026-12-03T10:14:20Z")),
        # restarted once after the OOM kill, then stopped with the rest: the first death is the one that counts
        pod(PODS[2], "gpu-e03", _terminated(143, "Error", "2026-12-03T10:14:21Z"),
            last=_terminated(137, "OOMKilled", "2026-12-03T10:14:02Z")),
        pod(PODS[3], "gpu-e04", _terminated(143, "Error", "2026-12-03T10:14:20Z"))]}
    return json.dumps(events, indent=2) + "\n" + json.dumps(pods, indent=2) + "\n"


def test_pod_deaths_and_the_job_s_end_become_the_job_event_and_scheduler_lines(
        tmp_path: Path, ingest: FakeIngest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRSTFAULT_API_TOKEN", raising=False)
    source = tmp_path / "k8s.json"
    source.write_text(kubectl_output())
    assert main(["collect", "k8s-events", "--job", "llama-1", "--url", ingest.base, "--from", str(source)]) == 0
    [job] = ingest.jobs
    assert (job.state, job.scheduler, job.hosts) == ("failed", "k8s", [PODS[2], PODS[0], PODS[1], PODS[3]])
    assert job.node_logs is False  # pods have no kernel log to wait for
    assert job.exit_codes == {PODS[0]: 143, PODS[1]: 143, PODS[2]: 137, PODS[3]: 143}
    got = ingest.sources()
    rank, host, stream, data = got[f"{PODS[2]}/k8s-events.log"]
    assert (rank, host, stream) == (None, PODS[2], "scheduler")
    assert data.decode().splitlines()[0] == ("2026-12-03T10:14:02Z pod/llama-worker-2 container pytorch "
                                             "terminated: Reason: OOMKilled Exit Code: 137")
    job_lines = got["k8s-events.log"][3].decode()
    assert "BackoffLimitExceeded job/llama Job has reached the specified backoff limit" in job_lines


def test_an_evicted_pod_and_a_deadline_from_stdin(ingest: FakeIngest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRSTFAULT_API_TOKEN", raising=False)
    evicted = pod("w-0", "gpu-f01", _terminated(137, "Error", "2026-12-03T11:00:05Z"), reason="Evicted",
                  message="The node was low on resource: memory. Threshold quantity: 100Mi, available: 8Mi.")
    deadline = event("Job", "w", "DeadlineExceeded", "Job was active longer than specified deadline",
                     "2026-12-03T11:00:09Z")
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(evicted) + json.dumps(deadline)))
    assert main(["collect", "k8s-events", "--job", "w-1", "--url", ingest.base, "--from", "-"]) == 0
    [job] = ingest.jobs
    assert (job.state, job.exit_codes) == ("timeout", {"w-0": 137})
    lines = ingest.sources()["w-0/k8s-events.log"][3].decode()
    assert "Reason: Evicted Message: The node was low on resource: memory." in lines


def test_the_embedded_service_names_the_pod_that_was_oomkilled(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from config.settings import load_settings
    from firstfault.serve import build_embedded
    from tests.api.server import serving
    from tests.integration.celery_worker import wait_for

    monkeypatch.delenv("FIRSTFAULT_API_TOKEN", raising=False)
    source = tmp_path / "k8s.json"
    source.write_text(kubectl_output())
    settings = load_settings(environ={"FIRSTFAULT_DATABASE_URL": f"sqlite:///{tmp_path / 'ff.db'}",
                                      "FIRSTFAULT_GROUP_WAIT_S": "1"}, path="/dev/null")
    service = build_embedded(settings)
    service.runner.start()
    try:
        with serving(service.app) as url:
            assert main(["collect", "k8s-events", "--job", "llama-1", "--url", url, "--from", str(source)]) == 0
            incident = wait_for(lambda: service.store.incident_for_job("llama-1"), 30, "the incident")
    finally:
        service.runner.stop()
        service.store.close()
    assert (incident.signature, incident.host) == ("k8s.oomkilled", PODS[2])
