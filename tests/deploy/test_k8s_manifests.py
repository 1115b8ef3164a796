"""deploy/k8s renders (base and each overlay, tests/deploy/kustomize.py), every object is valid against the
Kubernetes OpenAPI schemas of a pinned release (kubernetes-validate, offline), and the objects agree with each
other and with the code: the ConfigMap and Secret keys the pods read exist, selectors select, probes hit real
ports and paths, and every container runs a real firstfault or Celery command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.deploy.commands import check_command, check_env
from tests.deploy.kustomize import Doc, containers, load_all, pod_spec, render

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
KUBERNETES = "1.31.0"  # the oldest release still in upstream support when this was written
TREES = ["base", "overlays/dev", "overlays/prod"]
SECRET = load_all(K8S / "base" / "secret.example.yaml")[0]


@pytest.fixture(params=TREES)
def docs(request: pytest.FixtureRequest) -> list[Doc]:
    return render(K8S / request.param)


def named(docs: list[Doc], kind: str) -> dict[str, Doc]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def test_every_object_is_valid_for_the_pinned_kubernetes(docs: list[Doc]) -> None:
    for doc in [*docs, SECRET]:
        try:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)  # strict: an unknown field is an error
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']}: {exc.message} at {list(exc.path)}")
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "Service", "ConfigMap", "Job", "PodDisruptionBudget"} <= kinds
    assert set(named(docs, "Deployment")) == {"firstfault-serve", "firstfault-worker", "firstfault-beat"}


def test_a_broken_manifest_is_caught() -> None:
    bad = render(K8S / "base")
    deployment = named(bad, "Deployment")["firstfault-serve"]
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = "lots"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)


def _refs(spec: Doc) -> tuple[set[str], list[tuple[str, str, bool]]]:
    maps, keys = set(), []
    for c in spec.get("initContainers", []) + spec["containers"]:
        for source in c.get("envFrom", []):
            if "configMapRef" in source:
                maps.add(source["configMapRef"]["name"])
            assert "secretRef" not in source, "name each secret key: secretKeyRef"
        for var in c.get("env", []):
            ref = var.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                keys.append((ref["name"], ref["key"], bool(ref.get("optional"))))
    return maps, keys


def test_the_pods_read_configmaps_and_secret_keys_that_exist(docs: list[Doc]) -> None:
    configmaps = named(docs, "ConfigMap")
    for doc in docs:
        spec = pod_spec(doc)
        if spec is None:
            continue
        maps, keys = _refs(spec)
        assert maps <= set(configmaps), f"{doc['metadata']['name']} reads a ConfigMap that is not rendered"
        for secret, key, _ in keys:
            assert secret == SECRET["metadata"]["name"], f"{doc['metadata']['name']} reads Secret {secret}"
            assert key in SECRET["stringData"], f"secret.example.yaml does not name the key {key}"
        names = [v["name"] for c in spec["containers"] for v in c.get("env", [])]
        names += [k for m in maps for k in configmaps[m]["data"]]
        check_env(names, doc["metadata"]["name"])
    # tokens come from the Secret, never the ConfigMap; and the Secret shipped here holds nothing
    for cm in configmaps.values():
        assert not {k for k in cm["data"] if "TOKEN" in k or "SECRET" in k or k.endswith("DATABASE_URL")}
    assert all(v == "" for v in SECRET["stringData"].values())
    assert "secret.example.yaml" not in (K8S / "base" / "kustomization.yaml").read_text().split("resources:")[1]


def test_every_container_runs_a_real_command(docs: list[Doc]) -> None:
    configmap = named(docs, "ConfigMap")["firstfault-config"]["data"]
    commands = {c["name"]: c["command"] for c in containers(docs)}
    for command in commands.values():
        check_command(command, configmap)
    assert commands["serve"][:2] == ["firstfault", "serve"] and commands["migrate"] == ["firstfault", "migrate"]


def _port(container: Doc, port: Any) -> int:
    ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    return ports[port] if isinstance(port, str) else int(port)


def test_selectors_probes_and_budgets_line_up(docs: list[Doc]) -> None:
    deployments = named(docs, "Deployment")
    for d in deployments.values():
        labels = d["spec"]["template"]["metadata"]["labels"]
        assert d["spec"]["selector"]["matchLabels"].items() <= labels.items()
        for c in d["spec"]["template"]["spec"]["containers"]:
            assert {"requests", "limits"} <= set(c["resources"]), f"{c['name']}: requests and limits"
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                if probe in c:
                    assert _port(c, c[probe]["httpGet"]["port"]) in {p["containerPort"] for p in c["ports"]}
    serve = deployments["firstfault-serve"]["spec"]["template"]["spec"]["containers"][0]
    assert serve["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert serve["readinessProbe"]["httpGet"]["path"] == "/readyz"
    beat = deployments["firstfault-beat"]["spec"]
    assert beat["replicas"] == 1 and beat["strategy"]["type"] == "Recreate"  # never two beats
    for pdb in named(docs, "PodDisruptionBudget").values():
        want = pdb["spec"]["selector"]["matchLabels"].items()
        assert [n for n, d in deployments.items() if want <= d["spec"]["template"]["metadata"]["labels"].items()]
    [service] = named(docs, "Service").values()
    selected = [d for d in deployments.values()
                if service["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()]
    assert [d["metadata"]["name"] for d in selected] == ["firstfault-serve"]
    assert _port(serve, service["spec"]["ports"][0]["targetPort"]) == 8321


def test_the_overlays_change_what_they_say() -> None:
    prod, dev = render(K8S / "overlays" / "prod"), render(K8S / "overlays" / "dev")
    replicas = {n: d["spec"]["replicas"] for n, d in named(prod, "Deployment").items()}
    assert replicas == {"firstfault-serve": 3, "firstfault-worker": 6, "firstfault-beat": 1}
    assert {c["image"] for c in containers(prod)} == {"registry.example.org/ml-platform/firstfault:0.1.0"}
    assert {c["image"] for c in containers(dev)} == {"firstfault:dev"}
    assert {d["metadata"]["namespace"] for d in prod} == {"firstfault"}
    worker = named(prod, "Deployment")["firstfault-worker"]["spec"]["template"]["spec"]["containers"][0]
    assert worker["resources"]["limits"]["memory"] == "8Gi" and "--concurrency=4" in worker["command"]
    assert worker["env"][0]["name"] == "PROMETHEUS_MULTIPROC_DIR"  # the patch kept the base's env
    config = named(prod, "ConfigMap")["firstfault-config"]["data"]
    assert config["FIRSTFAULT_KAFKA_BOOTSTRAP"].count(",") == 2 and "FIRSTFAULT_BROKER_URL" in config


def test_serve_reads_its_tokens_and_slack_signing_secret_from_the_secret(docs: list[Doc]) -> None:
    """Without the signing secret the Slack posts' buttons are refused; without the tokens nothing posts."""
    serve = next(d for d in docs if d["kind"] == "Deployment" and "serve" in d["metadata"]["name"])
    spec = pod_spec(serve)
    assert spec is not None
    _, keys = _refs(spec)
    read = {key for _, key, _ in keys}
    assert {"FIRSTFAULT_API_TOKEN", "FIRSTFAULT_SLACK_TOKEN", "FIRSTFAULT_SLACK_SIGNING_SECRET"} <= read
