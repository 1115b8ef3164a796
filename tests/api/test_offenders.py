"""Which failure classes count as hardware, and drain commands that are safe to paste."""

from __future__ import annotations

import shlex

from catalog.loader import default_catalog
from store.offenders import drain_command, gpu_of, hardware_signatures


def test_hardware_classes_come_from_the_catalog_tags() -> None:
    hardware = hardware_signatures(default_catalog())
    for sig in ("xid.79", "xid.48", "sxid.fatal", "cuda.ecc_uncorrectable", "nccl.ib.async_port_error",
                "host.nic_link_down", "cuda.nvlink_error", "host.pcie_aer"):
        assert sig in hardware, sig
    # a configuration every rank shares, or a software fault, is not the host's hardware
    for sig in ("nccl.ib.config_invalid", "nccl.ib.not_used_fallback_socket", "host.oom_killer", "cuda.oom",
                "nccl.bootstrap.connection_reset"):
        assert sig not in hardware, sig


def test_a_hostile_host_name_cannot_run_a_command() -> None:
    host = "node1; rm -rf ~ #"
    # the shell sees one argument holding the whole name, not a second command
    assert shlex.split(drain_command(host, "k8s", ["xid.79"], 3)) == ["kubectl", "cordon", host]
    assert shlex.split(drain_command(host, "slurm", ["xid.79"], 3))[2] == f"nodename={host}"
    assert shlex.split(drain_command("node1", "slurm", ["xid.79", "xid.48"], 3)) == [
        "scontrol", "update", "nodename=node1", "state=drain", "reason=firstfault: xid.79, xid.48 in 3 jobs"]


def test_the_gpu_is_the_pci_bus_the_evidence_names() -> None:
    text = "[Sun Nov 29 10:14:14 2026] NVRM: Xid (PCI:0000:3B:00): 79, pid='<unknown>', GPU has fallen off the bus."
    assert gpu_of({"root_cause": {"evidence": [{"text": text}]}}) == "0000:3b:00"
    assert gpu_of({"root_cause": {"evidence": [{"text": "Out of memory: Killed process 1"}]}}) is None
    assert gpu_of({"root_cause": None}) is None
