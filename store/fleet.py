"""One host across the fleet: its incidents in time order, and the RMA bundle a vendor asks for.

`incidents offenders` says which hosts keep failing; this says what happened on one of them, incident by
incident (every root cause on the host, the hardware ones marked), and gathers what a hardware return needs:
the Xid/ECC/InfiniBand evidence lines as the logs printed them, each GPU's PCI bus id and, when the logs print
them (the driver's naming of the GPU before its first Xid, read into the root cause's `gpu`; `nvidia-smi -q`,
DCGM), its serial number and UUID, and links to the incidents.
Evidence is redacted again on the way out (correlator.redact), though every diagnosis is redacted when made.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel
from sqlmodel import col

from catalog.loader import Catalog
from correlator.redact import redact
from store.incidents import Store
from store.offenders import K8S_SCHEDULERS, drain_command, gpu_of, hardware_signatures, schedulers_of
from store.queries import IncidentFilter, utc
from store.tables import IncidentRow

MAX_INCIDENTS = 500  # newest incidents of a host read for its timeline and bundle
MAX_EVIDENCE = 200  # evidence lines in a bundle, newest incidents first
_SERIAL = re.compile(r"\bSerial(?:\s*Number)?\s*[:=]\s*(?P<serial>[0-9A-Za-z]{6,32})\b", re.IGNORECASE)
_UUID = re.compile(r"\b(?P<uuid>GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\b")


class HostIncident(BaseModel):
    at: datetime
    incident_id: str
    job_id: str
    attempt: int
    signature: str | None
    hardware: bool  # a hardware family's entry (store.offenders.hardware_signatures)
    rank: int | None
    gpu: str | None  # the PCI bus id the evidence names
    severity: str
    state: str
    url: str


class RmaGpu(BaseModel):
    pci: str
    serial: str | None = None
    uuid: str | None = None
    incidents: int
    jobs: int
    signatures: list[str]
    first_seen: datetime
    last_seen: datetime


class RmaEvidence(BaseModel):
    incident_id: str
    job_id: str
    at: datetime
    signature: str | None
    gpu: str | None
    source: str
    line: int
    text: str


class RmaBundle(BaseModel):
    host: str
    cluster: str | None
    generated_at: datetime
    incidents: int  # hardware incidents on the host
    jobs: int
    signatures: list[str]
    gpus: list[RmaGpu]
    evidence: list[RmaEvidence]
    incident_links: list[HostIncident]
    drain: str


def host_incidents(store: Store, catalog: Catalog, host: str, base_url: str, cluster: str | None = None,
                   f: IncidentFilter | None = None) -> list[HostIncident]:
    """Every incident whose root cause is on `host`, oldest first (the newest MAX_INCIDENTS)."""
    return [entry for entry, _ in _read(store, catalog, host, base_url, cluster, f)]


def rma_bundle(store: Store, catalog: Catalog, host: str, now: datetime, base_url: str,
               cluster: str | None = None, f: IncidentFilter | None = None) -> RmaBundle | None:
    """The host's hardware incidents as a return request: None when it has none."""
    rows = [(entry, diagnosis) for entry, diagnosis in _read(store, catalog, host, base_url, cluster, f)
            if entry.hardware]
    if not rows:
        return None
    evidence = [ev for entry, diagnosis in reversed(rows) for ev in _evidence(entry, diagnosis)][:MAX_EVIDENCE]
    jobs = {e.job_id for e, _ in rows}
    signatures = list(dict.fromkeys(e.signature for e, _ in rows if e.signature))
    schedulers = set(schedulers_of(store, jobs).values())
    scheduler = "k8s" if schedulers & K8S_SCHEDULERS else "slurm"
    return RmaBundle(host=host, cluster=cluster, generated_at=now, incidents=len(rows), jobs=len(jobs),
                     signatures=signatures, gpus=_gpus(rows), evidence=evidence,
                     incident_links=[e for e, _ in rows], drain=drain_command(host, scheduler, signatures, len(jobs)))


def _read(store: Store, catalog: Catalog, host: str, base_url: str, cluster: str | None,
          f: IncidentFilter | None) -> list[tuple[HostIncident, dict[str, Any]]]:
    hardware = hardware_signatures(catalog)
    query = sa.select(col(IncidentRow.id), col(IncidentRow.job_id), col(IncidentRow.attempt),
                      col(IncidentRow.signature), col(IncidentRow.rank), col(IncidentRow.severity),
                      col(IncidentRow.state), col(IncidentRow.created_at), col(IncidentRow.diagnosis)
                      ).where(col(IncidentRow.host) == host)
    if cluster is not None:
        query = query.where(col(IncidentRow.cluster) == cluster)
    if f is not None and f.since is not None:
        query = query.where(col(IncidentRow.created_at) >= f.since)
    query = query.order_by(col(IncidentRow.created_at).desc(), col(IncidentRow.id)).limit(MAX_INCIDENTS)
    with store.session() as s:
        rows = s.execute(query).all()
    out = []
    for incident_id, job_id, attempt, signature, rank, severity, state, created_at, diagnosis in reversed(rows):
        entry = HostIncident(at=utc(created_at), incident_id=incident_id, job_id=job_id, attempt=attempt,
                             signature=signature, hardware=signature in hardware, rank=rank,
                             gpu=gpu_of(diagnosis), severity=severity, state=state,
                             url=f"{base_url.rstrip('/')}/incidents/{incident_id}")
        out.append((entry, diagnosis or {}))
    return out


def _evidence(entry: HostIncident, diagnosis: dict[str, Any]) -> list[RmaEvidence]:
    lines = (diagnosis.get("root_cause") or {}).get("evidence") or []
    return [RmaEvidence(incident_id=entry.incident_id, job_id=entry.job_id, at=entry.at, signature=entry.signature,
                        gpu=entry.gpu, source=redact(str(ev.get("source", ""))), line=int(ev.get("line") or 0),
                        text=redact(str(ev.get("text", "")))) for ev in lines]


def _gpus(rows: list[tuple[HostIncident, dict[str, Any]]]) -> list[RmaGpu]:
    by_pci: dict[str, list[tuple[HostIncident, dict[str, Any]]]] = {}
    for entry, diagnosis in rows:
        if entry.gpu:
            by_pci.setdefault(entry.gpu, []).append((entry, diagnosis))
    gpus = []
    for pci, found in by_pci.items():
        texts = [str(ev.get("text", "")) for _, d in found for ev in (d.get("root_cause") or {}).get("evidence") or []]
        named = [g for _, d in found if isinstance(g := (d.get("root_cause") or {}).get("gpu"), dict)]
        serial = next((str(g["serial"]) for g in named if g.get("serial")), None) or _first(_SERIAL, "serial", texts)
        uuid = next((str(g["uuid"]) for g in named if g.get("uuid")), None) or _first(_UUID, "uuid", texts)
        gpus.append(RmaGpu(pci=pci, serial=serial, uuid=uuid,
                           incidents=len(found), jobs=len({e.job_id for e, _ in found}),
                           signatures=list(dict.fromkeys(e.signature for e, _ in found if e.signature)),
                           first_seen=min(e.at for e, _ in found), last_seen=max(e.at for e, _ in found)))
    return sorted(gpus, key=lambda g: (-g.jobs, -g.incidents, g.pci))


def _first(pattern: re.Pattern[str], group: str, texts: list[str]) -> str | None:
    for text in texts:
        if m := pattern.search(text):
            return m.group(group)
    return None


def rma_markdown(bundle: RmaBundle) -> str:
    """The bundle as a document to attach to a vendor ticket."""
    where = f" ({bundle.cluster})" if bundle.cluster else ""
    out = [f"# RMA evidence: {bundle.host}{where}", "",
           f"Generated {bundle.generated_at:%Y-%m-%d %H:%M}Z by firstfault: {bundle.incidents} hardware incident(s) "
           f"in {bundle.jobs} job(s): {', '.join(f'`{s}`' for s in bundle.signatures)}.", ""]
    if bundle.gpus:
        out += ["## GPUs", "",
                "| PCI bus id | serial | UUID | incidents | jobs | signatures | first seen | last seen |",
                "|---|---|---|---:|---:|---|---|---|"]
        out += [f"| `{g.pci}` | {g.serial or 'not in the logs'} | {g.uuid or 'not in the logs'} | {g.incidents} | "
                f"{g.jobs} | {', '.join(g.signatures)} | {g.first_seen:%Y-%m-%d %H:%M} | {g.last_seen:%Y-%m-%d %H:%M} |"
                for g in bundle.gpus]
        out.append("")
    out += ["## Evidence (as the logs printed it)", ""]
    for ev in bundle.evidence:
        out += [f"- {ev.at:%Y-%m-%d %H:%M}Z, job `{ev.job_id}`, `{ev.signature}`, {ev.source}:{ev.line}",
                "", "  ```", f"  {ev.text.replace('```', '` ` `')}", "  ```"]
    out += ["", "## Incidents", ""]
    out += [f"- [{i.incident_id}]({i.url}) {i.at:%Y-%m-%d %H:%M}Z job `{i.job_id}` attempt {i.attempt}: "
            f"`{i.signature}`" + (f" on GPU `{i.gpu}`" if i.gpu else "") + f" ({i.state})"
            for i in bundle.incident_links]
    out += ["", "## Drain", "", "```sh", bundle.drain, "```", ""]
    return "\n".join(out)
