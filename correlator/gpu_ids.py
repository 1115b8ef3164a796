"""Which GPU a root cause is about, and what the driver said of it: its PCI bus id, UUID and board serial number.

The bus id comes from the root cause's own evidence (Xid and ECC lines name it: "NVRM: Xid (PCI:0000:3b:00): 79",
"GPU 0000:3b:00.0: ..."). The NVIDIA driver names a GPU once, just before its first Xid (kernel_rc.c:
"NVRM: GPU at PCI:…: GPU-<uuid>", then "NVRM: GPU Board Serial Number: …" on the next line when the board has
one); those lines are the `nvrm_gpu` and `nvrm_serial` context kinds, and a serial is the GPU's when its line
follows the GPU's own within a few lines of the same source. Pure: no I/O here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from correlator.kept import ContextRecord
from schemas.diagnosis import Diagnosis, GpuIdentity

# NVRM: Xid (PCI:0000:3b:00): 79 ... / GPU 0000:3b:00.0: ...
_PCI_RE = re.compile(r"\b(?:PCI:|GPU )([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})")
SERIAL_WITHIN_LINES = 3  # the serial line follows the UUID line; a journal may interleave another kernel line


def pci_in(texts: Iterable[str]) -> str | None:
    """The first PCI bus id the lines name, lower-cased."""
    for text in texts:
        if m := _PCI_RE.search(text):
            return m.group(1).lower()
    return None


def identify(pci: str, named: Sequence[ContextRecord], serials: Sequence[ContextRecord],
             sources: Iterable[str] = (), host: str | None = None) -> GpuIdentity:
    """The GPU at ``pci``: its naming line in one of ``sources`` (the evidence's), else on ``host``, else anywhere
    the bus id is named once (one GPU per bus id on a host; across hosts it would be ambiguous)."""
    own = [rec for rec in named if str(rec.fields["pci"]).lower() == pci]
    in_sources = set(sources)
    chosen = next((rec for rec in own if rec.source in in_sources), None)
    if chosen is None and host is not None:
        chosen = next((rec for rec in own if rec.who.host == host), None)
    if chosen is None and len({(rec.who.host, rec.source) for rec in own}) == 1:
        chosen = own[0]
    if chosen is None:
        return GpuIdentity(pci_bus_id=pci)
    serial = next((str(rec.fields["serial"]) for rec in serials if rec.source == chosen.source
                   and 0 < rec.line_no - chosen.line_no <= SERIAL_WITHIN_LINES), None)
    return GpuIdentity(pci_bus_id=pci, uuid=str(chosen.fields["uuid"]), serial=serial)


def with_gpu(diagnosis: Diagnosis, of_kind: Mapping[str, list[ContextRecord]]) -> Diagnosis:
    """The diagnosis with its root cause's GPU, when the root cause's evidence names a PCI bus id."""
    rc = diagnosis.root_cause
    if rc is None or (pci := pci_in(ev.text for ev in rc.evidence)) is None:
        return diagnosis
    gpu = identify(pci, of_kind.get("nvrm_gpu", []), of_kind.get("nvrm_serial", []),
                   (ev.source for ev in rc.evidence), rc.host)
    return diagnosis.model_copy(update={"root_cause": rc.model_copy(update={"gpu": gpu})})
