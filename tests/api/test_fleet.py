"""One host across the fleet (issue 26): its incidents in time order and its RMA bundle, over the seeded history
(node001 lost GPU 0000:3b:00 off the bus in two jobs, node003 had two Xids on 0000:86:00, node004 an OOM kill),
from the API, the web page and the CLI, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from httpx import Client

from catalog.loader import default_catalog
from firstfault.cli import main
from schemas.incident import Incident
from store.fleet import rma_bundle, rma_markdown
from store.incidents import Store
from tests.api.conftest import NOW


def test_a_hosts_timeline_lists_its_incidents_oldest_first_with_the_gpu(client: Client,
                                                                        history: dict[str, Incident]) -> None:
    found = client.get("/v1/fleet/hosts/node001").json()
    assert [i["job_id"] for i in found] == ["train-xid-1", "train-xid-2"]
    assert all(i["hardware"] and i["gpu"] == "0000:3b:00" and i["signature"] == "xid.79" for i in found)
    assert found[0]["url"].endswith(f"/incidents/{history['train-xid-1'].id}")
    oom = client.get("/v1/fleet/hosts/node004").json()
    assert [(i["signature"], i["hardware"], i["rank"]) for i in oom] == [("host.oom_killer", False, 37)]
    assert client.get("/v1/fleet/hosts/node001", params={"cluster": "c2"}).json() == []
    assert client.get("/v1/fleet/hosts/node001", params={"since": "last week"}).status_code == 400


def test_the_rma_bundle_holds_the_evidence_gpus_and_links(client: Client, history: dict[str, Incident]) -> None:
    bundle = client.get("/v1/fleet/hosts/node003/rma").json()
    assert (bundle["incidents"], bundle["jobs"], bundle["signatures"]) == (2, 2, ["xid.79", "xid.48"])
    [gpu] = bundle["gpus"]
    assert (gpu["pci"], gpu["incidents"], gpu["serial"]) == ("0000:86:00", 2, None)  # the Xid lines name no serial
    texts = [e["text"] for e in bundle["evidence"]]
    assert any("NVRM: Xid (PCI:0000:86:00): 48" in t for t in texts)
    assert any("NVRM: Xid (PCI:0000:86:00): 79" in t for t in texts)
    assert {i["incident_id"] for i in bundle["incident_links"]} == {history["k8s-xid-1"].id, history["k8s-xid-2"].id}
    assert bundle["drain"] == "kubectl cordon node003"

    md = client.get("/v1/fleet/hosts/node003/rma", params={"format": "markdown"})
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert 'filename="rma-node003.md"' in md.headers["content-disposition"]
    assert "# RMA evidence: node003" in md.text and "| `0000:86:00` | not in the logs |" in md.text
    assert f"[{history['k8s-xid-2'].id}](" in md.text and "kubectl cordon node003" in md.text
    # an OOM kill is no hardware return
    assert client.get("/v1/fleet/hosts/node004/rma").status_code == 404


def test_the_host_page_shows_the_timeline_and_links_the_bundle(client: Client, history: dict[str, Incident]) -> None:
    page = client.get("/fleet/node001").text
    assert page.index(history["train-xid-1"].id) < page.index(history["train-xid-2"].id)
    assert "/v1/fleet/hosts/node001/rma?format=markdown" in page and "state=drain" in page
    assert client.get("/fleet/nobody").status_code == 404
    assert 'href="/fleet/node001?cluster=c1"' in client.get("/offenders").text
    # a process name the kernel printed is log text: escaped on the page
    ecc = client.get("/fleet/node002").text
    assert "<script>alert(1)</script>" not in ecc


def test_the_cli_writes_the_bundle_and_prints_the_timeline(capsys: pytest.CaptureFixture[str], engine_url: str,
                                                           history: dict[str, Incident], tmp_path: Path) -> None:
    assert main(["incidents", "host", "node001", "--db", engine_url]) == 0
    out = capsys.readouterr().out
    assert out.index("train-xid-1") < out.index("train-xid-2") and "xid.79 *" in out
    target = tmp_path / "rma.json"
    assert main(["incidents", "rma", "node001", "--db", engine_url, "--format", "json", "--out", str(target)]) == 0
    bundle = json.loads(target.read_text())
    assert bundle["host"] == "node001" and [g["pci"] for g in bundle["gpus"]] == ["0000:3b:00"]
    assert "wrote the RMA bundle of node001 (2 incident(s)" in capsys.readouterr().out
    assert main(["incidents", "rma", "node004", "--db", engine_url]) == 2
    assert "no hardware incident on 'node004'" in capsys.readouterr().err


def test_a_serial_and_uuid_printed_in_the_evidence_reach_the_bundle(tmp_path: Path) -> None:
    """nvidia-smi -q prints `Serial Number : …` and `GPU UUID : GPU-…`; a collector that puts them beside the Xid
    line gets them into the bundle. Secrets in evidence are masked again on the way out."""
    store = Store.open(f"sqlite:///{tmp_path / 'ff.db'}")
    at = datetime(2026, 12, 1, tzinfo=UTC)
    lines = ["NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.",
             "    Serial Number                         : 1323216057383",
             "    GPU UUID                              : GPU-5e4d9b4e-8f62-5bd3-3d1d-0b2c9f4e1a7b",
             "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123"]
    diagnosis = {"verdict": "diagnosed", "root_cause": {
        "signature": "xid.79", "title": "Xid 79", "category": "gpu", "tags": ["xid"], "rank": 3, "host": "node7",
        "confidence": 0.9, "evidence": [{"source": "node7/dmesg.log", "line": i + 1, "text": t}
                                        for i, t in enumerate(lines)]}}
    incident = Incident.model_validate({"id": "inc-1", "job_id": "j1", "created_at": at, "updated_at": at,
                                        "diagnosis": diagnosis})
    try:
        store.save_incident("j1", lambda _cur: incident)
        bundle = rma_bundle(store, default_catalog(), "node7", NOW, "https://ff.example")
    finally:
        store.close()
    assert bundle is not None
    [gpu] = bundle.gpus
    assert (gpu.pci, gpu.serial) == ("0000:3b:00", "1323216057383")
    assert gpu.uuid == "GPU-5e4d9b4e-8f62-5bd3-3d1d-0b2c9f4e1a7b"
    md = rma_markdown(bundle)
    assert "| `0000:3b:00` | 1323216057383 |" in md and "hf_abcdefghij" not in md
    assert "https://ff.example/incidents/inc-1" in md
