"""Which GPU an incident is about: the PCI bus id its root cause's evidence names (Xid and ECC lines carry it)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# NVRM: Xid (PCI:0000:3b:00): 79 ... / GPU 0000:3b:00.0: ... / NCCL's busId 3b000
_PCI_RE = re.compile(r"\b(?:PCI:|GPU )([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})")


def pci_in(texts: Iterable[str]) -> str | None:
    """The first PCI bus id the lines name, lower-cased."""
    for text in texts:
        if m := _PCI_RE.search(text):
            return m.group(1).lower()
    return None


def gpu_of(diagnosis: dict[str, Any] | None) -> str | None:
    """The PCI bus id a stored diagnosis's root-cause evidence names."""
    evidence = ((diagnosis or {}).get("root_cause") or {}).get("evidence") or []
    return pci_in(str(ev.get("text", "")) for ev in evidence)
