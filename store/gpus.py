"""Which GPU an incident is about: the PCI bus id its root cause's evidence names (Xid and ECC lines carry it)."""

from __future__ import annotations

from typing import Any

from correlator.gpu_ids import pci_in

__all__ = ["gpu_of", "pci_in"]


def gpu_of(diagnosis: dict[str, Any] | None) -> str | None:
    """The PCI bus id of a stored diagnosis's root cause: its `gpu`, else what its evidence names (a diagnosis
    stored before the root cause carried one)."""
    root = (diagnosis or {}).get("root_cause") or {}
    if isinstance(gpu := root.get("gpu"), dict) and gpu.get("pci_bus_id"):
        return str(gpu["pci_bus_id"]).lower()
    return pci_in(str(ev.get("text", "")) for ev in root.get("evidence") or [])
