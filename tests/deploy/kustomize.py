"""A renderer for the subset of kustomize deploy/k8s uses (no kustomize binary here): resources (files and
directories), namespace, labels, images, replicas, and strategic-merge patches with a kind/name target. A
kustomization using anything else fails to render, so the test cannot pass over a feature it does not apply."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

Doc = dict[str, Any]
KNOWN = {"apiVersion", "kind", "resources", "namespace", "labels", "images", "replicas", "patches"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}


def load_all(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def render(folder: Path) -> list[Doc]:
    k = yaml.safe_load((folder / "kustomization.yaml").read_text())
    unknown = set(k) - KNOWN
    if unknown:
        raise ValueError(f"{folder}: kustomization fields this renderer does not apply: {sorted(unknown)}")
    docs: list[Doc] = []
    for entry in k.get("resources", []):
        path = folder / entry
        docs += render(path) if path.is_dir() else copy.deepcopy(load_all(path))
    for label in k.get("labels", []):
        if label.get("includeSelectors") or label.get("includeTemplates"):
            raise ValueError("labels with includeSelectors/includeTemplates are not rendered")
        for d in docs:
            d["metadata"].setdefault("labels", {}).update(label["pairs"])
    if "namespace" in k:
        for d in docs:
            if d["kind"] not in CLUSTER_SCOPED:
                d["metadata"]["namespace"] = k["namespace"]
    for image in k.get("images", []):
        for container in containers(docs):
            name, _, tag = container["image"].partition(":")
            if name == image["name"]:
                container["image"] = f"{image.get('newName', name)}:{image.get('newTag', tag)}"
    for rep in k.get("replicas", []):
        [target] = [d for d in docs if d["metadata"]["name"] == rep["name"] and "replicas" in d.get("spec", {})]
        target["spec"]["replicas"] = rep["count"]
    for patch in k.get("patches", []):
        body = yaml.safe_load((folder / patch["path"]).read_text())
        want = patch["target"]
        hits = [d for d in docs if d["kind"] == want["kind"] and d["metadata"]["name"] == want["name"]]
        if len(hits) != 1:
            raise ValueError(f"{folder}: patch {patch['path']} targets {want}, which matches {len(hits)} objects")
        merged = merge(hits[0], body)
        hits[0].clear()
        hits[0].update(merged)
    return docs


def merge(base: Any, patch: Any) -> Any:
    """Strategic merge as Kubernetes applies it to these objects: maps merge key by key, lists of named items
    (containers, env, volumes, ports) merge by name, other lists are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if (isinstance(base, list) and isinstance(patch, list) and patch
            and all(isinstance(i, dict) and "name" in i for i in [*base, *patch])):
        out_list = [copy.deepcopy(i) for i in base]
        for item in patch:
            same = [i for i, b in enumerate(out_list) if b["name"] == item["name"]]
            if same:
                out_list[same[0]] = merge(out_list[same[0]], item)
            else:
                out_list.append(copy.deepcopy(item))
        return out_list
    return copy.deepcopy(patch)


def pod_spec(doc: Doc) -> Doc | None:
    if doc["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        return doc["spec"]["template"]["spec"]  # type: ignore[no-any-return]
    return None


def containers(docs: list[Doc]) -> list[Doc]:
    out: list[Doc] = []
    for d in docs:
        spec = pod_spec(d)
        if spec is not None:
            out += spec.get("initContainers", []) + spec["containers"]
    return out
