"""The GPU a root cause is about, named as the driver names it (correlator/gpu_ids.py): before a GPU's first Xid
the NVIDIA driver prints its UUID and board serial number (open-gpu-kernel-modules kernel_rc.c, krcReportXid:
"NVRM: GPU at PCI:%04x:%02x:%02x: %s", then "NVRM: GPU Board Serial Number: %s"). `diagnose` carries them in the
root cause's `gpu`, and the RMA bundle a vendor asks for gets them from there."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from catalog.loader import default_catalog
from firstfault.cli import main
from schemas.incident import Incident
from simulate import generate
from store.fleet import rma_bundle
from store.incidents import Store

_UUID = "GPU-f1906b9b-557a-e961-045c-9fe4be3ce012"
_OTHER_UUID = "GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
_XID = re.compile(r"^(?P<stamp>\S.*?) NVRM: Xid \(PCI:(?P<pci>[0-9a-f:]+)\): 79")


def _job(tmp_path: Path, serial: str | None) -> tuple[Path, str, str]:
    """An Xid 79 job whose victim's dmesg names the GPU (and its serial, when given) before the Xid, and another
    node's dmesg names a GPU at the same bus id: one per host, so only the victim's is the root cause's."""
    truth = generate("xid79", tmp_path / "job", seed=4)
    dmesgs = sorted((tmp_path / "job").rglob("dmesg*"))
    victim = next(p for p in dmesgs if any(_XID.match(line) for line in p.read_text().splitlines()))
    lines = victim.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if _XID.match(line))
    m = _XID.match(lines[at])
    assert m is not None
    named = [f"{m['stamp']} NVRM: GPU at PCI:{m['pci']}: {_UUID}"]
    if serial is not None:
        named.append(f"{m['stamp']} NVRM: GPU Board Serial Number: {serial}")
    victim.write_text("\n".join(lines[:at] + named + lines[at:]) + "\n")
    for other in dmesgs:
        if other != victim:
            with other.open("a") as f:
                f.write(f"{m['stamp']} NVRM: GPU at PCI:{m['pci']}: {_OTHER_UUID}\n"
                        f"{m['stamp']} NVRM: GPU Board Serial Number: 1320000000001\n")
    assert truth.host is not None
    return tmp_path / "job", m["pci"], truth.host


def _diagnose(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_the_root_cause_names_its_gpu_by_bus_id_uuid_and_serial(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path, pci, host = _job(tmp_path, serial="1653923026510")
    rc = _diagnose(path, capsys)["root_cause"]
    assert isinstance(rc, dict) and rc["host"] == host and rc["signature"] == "xid.79"
    assert rc["gpu"] == {"pci_bus_id": pci, "uuid": _UUID, "serial": "1653923026510"}
    assert main(["diagnose", str(path), "--format", "markdown"]) == 0
    assert f"- **GPU:** {pci} ({_UUID}, serial 1653923026510)" in capsys.readouterr().out


def test_a_board_without_a_serial_has_none_and_the_next_lines_serial_is_not_taken(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, pci, _ = _job(tmp_path, serial=None)  # the driver prints no serial line for a board without one
    rc = _diagnose(path, capsys)["root_cause"]
    assert isinstance(rc, dict) and rc["gpu"] == {"pci_bus_id": pci, "uuid": _UUID, "serial": None}


def test_the_rma_bundle_takes_the_serial_from_the_diagnosis(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path, pci, host = _job(tmp_path, serial="1653923026510")
    diagnosis = _diagnose(path, capsys)
    at = datetime(2026, 12, 1, tzinfo=UTC)
    store = Store.open(f"sqlite:///{tmp_path / 'ff.db'}")
    try:
        incident = Incident.model_validate({"id": "inc-1", "job_id": "j1", "created_at": at, "updated_at": at,
                                            "diagnosis": diagnosis})
        store.save_incident("j1", lambda _cur: incident)
        bundle = rma_bundle(store, default_catalog(), host, datetime(2026, 12, 2, tzinfo=UTC), "https://ff.example")
    finally:
        store.close()
    assert bundle is not None
    [gpu] = bundle.gpus
    assert (gpu.pci, gpu.serial, gpu.uuid) == (pci, "1653923026510", _UUID)
