"""deploy/k8s/logging (Vector as a DaemonSet) renders and validates like the rest of deploy/k8s, and its pipeline
makes LogShards that firstfault takes: the two VRL programs of its ConfigMap run in VRL itself (pyVRL, Vector's
own compiler and runtime) on example-event.json, the reduce step between them is applied as its configuration
says (group_by, concat_newline), and what comes out is valid against schemas/json/log_shard.schema.json, passes
the ingest validation of a Kafka message (ingest/validate.py) and is the example-shard.json the docs show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import kubernetes_validate
import pytest
import yaml

from ingest.topics import DEFAULT_TOPICS
from ingest.validate import validate_message
from schemas.wire import LogShard
from sources.shard_data import decode_shard_data
from tests.deploy.kustomize import Doc, render

ROOT = Path(__file__).resolve().parents[2]
LOGGING = ROOT / "deploy" / "k8s" / "logging"
SCHEMA = json.loads((ROOT / "schemas" / "json" / "log_shard.schema.json").read_text())
KUBERNETES = "1.31.0"  # as test_k8s_manifests.py


def _vector(docs: list[Doc]) -> dict[str, Any]:
    [config] = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "firstfault-vector"]
    vector: dict[str, Any] = yaml.safe_load(config["data"]["vector.yaml"])
    return vector


def test_the_daemonset_and_its_rbac_are_valid_for_the_pinned_kubernetes() -> None:
    docs = render(LOGGING)
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']}: {exc.message} at {list(exc.path)}")
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet"}
    spec = kinds["DaemonSet"]["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == kinds["ServiceAccount"]["metadata"]["name"]
    binding = kinds["ClusterRoleBinding"]
    assert binding["subjects"][0]["namespace"] == kinds["DaemonSet"]["metadata"]["namespace"]
    assert {"pods", "namespaces", "nodes"} <= set(kinds["ClusterRole"]["rules"][0]["resources"])
    [vector] = spec["containers"]
    env = {e["name"]: e["valueFrom"] for e in vector["env"]}
    assert env["VECTOR_SELF_NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}  # only its node's pods
    # the Kafka address is the one serve's ConfigMap (deploy/k8s/base) holds, in the same namespace
    ref = env["FIRSTFAULT_KAFKA_BOOTSTRAP"]["configMapKeyRef"]
    [base_config] = [d for d in render(ROOT / "deploy" / "k8s" / "base") if d["kind"] == "ConfigMap"]
    assert ref["name"] == base_config["metadata"]["name"] and ref["key"] in base_config["data"]
    mounts = {m["mountPath"] for m in vector["volumeMounts"]}
    assert {"/var/log/", "/etc/vector/"} <= mounts
    assert _vector(docs)["data_dir"] in mounts  # checkpoints on the node, not in the container


def test_vector_produces_to_the_shards_topic_keyed_by_job() -> None:
    vector = _vector(render(LOGGING))
    sink = vector["sinks"]["firstfault"]
    assert sink["type"] == "kafka" and sink["topic"] == DEFAULT_TOPICS.shards
    assert sink["key_field"] == "job_id" and sink["encoding"]["codec"] == "json"
    assert sink["bootstrap_servers"] == "${FIRSTFAULT_KAFKA_BOOTSTRAP}"
    assert sink["inputs"] == ["shards"] and vector["transforms"]["shards"]["inputs"] == ["windows"]
    assert vector["transforms"]["windows"]["inputs"] == ["lines"]
    assert vector["transforms"]["lines"]["inputs"] == list(vector["sources"])


def _reduce(events: list[dict[str, Any]], config: dict[str, Any]) -> list[dict[str, Any]]:
    """Vector's reduce as configured: one event per group_by values, in arrival order; each merge strategy here
    is concat_newline (joined by newlines) or discard (the first value kept)."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for event in events:
        key = tuple(json.dumps(event.get(f)) for f in config["group_by"])
        if key not in groups:
            groups[key] = dict(event)
            continue
        for field, strategy in config["merge_strategies"].items():
            assert strategy in ("concat_newline", "discard"), strategy
            if strategy == "concat_newline":
                groups[key][field] += "\n" + event[field]
    return list(groups.values())


def _run(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pyvrl = pytest.importorskip("pyvrl", reason="pyVRL (Vector's VRL) is not installed: pip install -e '.[dev]'")
    transforms = _vector(render(LOGGING))["transforms"]
    lines = pyvrl.Transform(transforms["lines"]["source"])
    kept = []
    for event in events:
        try:
            kept.append(lines.remap(event))
        except Exception as exc:  # pyVRL raises on `abort`, where Vector drops the event (drop_on_abort)
            assert "abort" in str(exc).lower(), exc
    shards = pyvrl.Transform(transforms["shards"]["source"])
    return [shards.remap(window) for window in _reduce(kept, transforms["windows"])]


def _example(name: str) -> Any:
    return json.loads((LOGGING / name).read_text())


def test_the_pipeline_makes_one_shard_of_a_training_pods_lines_that_firstfault_accepts() -> None:
    events = _example("example-event.json")["events"]
    [shard] = _run(events)  # the coredns pod has no job label: dropped
    jsonschema.validate(shard, SCHEMA)
    model = validate_message("shard", json.dumps(shard).encode(), shard["job_id"].encode())
    assert isinstance(model, LogShard)
    assert (model.job_id, model.rank, model.host, model.stream) == ("llama", 1, "llama-workers-0-1-x7k2p", "stderr")
    assert model.source == "gpu-node-17/llama-workers-0-1-x7k2p/trainer"
    lines = [e["message"] for e in events if e["kubernetes"]["pod_name"] == model.host]
    assert decode_shard_data(model) == ("\n".join(lines) + "\n").encode()
    kept = _example("example-shard.json")
    assert {k: v for k, v in shard.items() if k != "data"} == {k: v for k, v in kept.items() if k != "data"}
    assert decode_shard_data(LogShard.model_validate(kept)) == decode_shard_data(model)


def test_the_kept_example_shard_is_a_valid_message_even_without_vrl() -> None:
    kept = _example("example-shard.json")
    jsonschema.validate(kept, SCHEMA)
    assert isinstance(validate_message("shard", json.dumps(kept).encode(), kept["job_id"].encode()), LogShard)


def _pod_event(labels: dict[str, str], at: str, message: str = "x") -> dict[str, Any]:
    return {"message": message, "stream": "stdout", "timestamp": at,
            "kubernetes": {"pod_name": "p-0", "pod_node_name": "n1", "container_name": "c", "pod_labels": labels}}


def test_windows_number_the_shards_in_order_and_the_labels_decide_job_and_rank() -> None:
    early, late = "2026-12-03T10:14:50.100Z", "2026-12-03T10:14:53.100Z"
    first, second = _run([_pod_event({"job-name": "j"}, early), _pod_event({"job-name": "j"}, late)])
    assert second["seq"] > first["seq"] and first["rank"] is None  # a plain Job's pod: no index, no rank
    [explicit] = _run([_pod_event({"firstfault.io/job-id": "run-7", "job-name": "j", "firstfault.io/rank": "12",
                                   "batch.kubernetes.io/job-completion-index": "3"}, early)])
    assert (explicit["job_id"], explicit["rank"]) == ("run-7", 12)
    [several] = _run([_pod_event({"job-name": "j", "firstfault.io/rank": "",
                                  "batch.kubernetes.io/job-completion-index": "3"}, early)])
    assert several["rank"] is None  # torchrun's ranks in one pod: their lines name them
    [later_child] = _run([_pod_event({"jobset.sigs.k8s.io/jobset-name": "js", "jobset.sigs.k8s.io/job-index": "2",
                                      "batch.kubernetes.io/job-completion-index": "3"}, early)])
    assert (later_child["job_id"], later_child["rank"]) == ("js", None)
    [long_line] = _run([_pod_event({"job-name": "j"}, early, "y" * 100_000)])
    assert len(decode_shard_data(LogShard.model_validate(long_line))) < 17_000
