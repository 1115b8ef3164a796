"""Repeat offenders: hosts and GPUs at the root of hardware faults in several jobs, with a drain command.

Which failure classes are hardware comes from the catalog, not a list kept here: an entry whose tags name a
hardware family (Xid/SXid, ECC, InfiniBand/RoCE NIC, NVLink/NVSwitch, PCIe, `hardware`) and whose fault belongs to
a node or a rank, not a configuration every rank shares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa
from pydantic import BaseModel
from sqlmodel import col, select

from catalog.loader import Catalog
from catalog.model import Category, Scope
from store.gpus import gpu_of as gpu_of  # re-exported: offenders name a host's GPUs by it
from store.incidents import Store
from store.queries import IncidentFilter, incident_rows, utc
from store.tables import IncidentRow, JobRow

HARDWARE_TAGS = frozenset({"xid", "sxid", "ecc", "ib", "roce", "nic", "nvlink", "nvswitch", "pcie", "hardware"})
K8S_SCHEDULERS = frozenset({"k8s", "kubernetes"})
_SAFE_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
GPU_SAMPLE = 100  # newest incidents per host whose evidence is read for the GPU
SHOWN_IDS = 20  # newest incident ids listed per host


def hardware_signatures(catalog: Catalog) -> frozenset[str]:
    return frozenset(s.id for s in catalog.signatures
                     if HARDWARE_TAGS & set(s.tags) and s.scope is not Scope.JOB
                     and s.category is not Category.CONFIGURATION)


class GpuOffender(BaseModel):
    pci: str
    incidents: int
    jobs: int
    signatures: list[str]


class Offender(BaseModel):
    cluster: str | None
    host: str
    incidents: int
    jobs: int
    signatures: list[str]
    first_seen: datetime
    last_seen: datetime
    incident_ids: list[str]  # the newest SHOWN_IDS
    gpus: list[GpuOffender]  # among the host's newest GPU_SAMPLE incidents
    scheduler: str  # slurm | k8s: which drain command fits
    drain: str


@dataclass
class _Tally:
    incidents: list[str] = field(default_factory=list)
    jobs: set[str] = field(default_factory=set)
    signatures: dict[str, None] = field(default_factory=dict)
    seen: list[datetime] = field(default_factory=list)
    gpus: dict[str, _Tally] = field(default_factory=dict)

    def add(self, incident_id: str, job_id: str, signature: str, when: datetime) -> None:
        self.incidents.append(incident_id)
        self.jobs.add(job_id)
        self.signatures[signature] = None
        self.seen.append(when)


def drain_command(host: str, scheduler: str, signatures: list[str], jobs: int) -> str:
    name = host if _SAFE_HOST.match(host) else "'" + host.replace("'", "'\\''") + "'"
    if scheduler == "k8s":
        return f"kubectl cordon {name}"
    # catalog ids are dotted lower-case words: safe inside double quotes
    reason = f"firstfault: {', '.join(signatures[:3])} in {jobs} jobs"
    return f'scontrol update nodename={name} state=drain reason="{reason}"'


def schedulers_of(store: Store, job_ids: set[str]) -> dict[str, str]:
    if not job_ids:
        return {}
    with store.session() as s:
        rows = s.exec(select(JobRow.job_id, JobRow.event).where(col(JobRow.job_id).in_(sorted(job_ids)))).all()
    return {job_id: str((event or {}).get("scheduler") or "slurm").lower() for job_id, event in rows}


def _tally_gpus(store: Store, chosen: dict[tuple[str | None, str], _Tally]) -> None:
    """Read the evidence of each chosen host's newest incidents for the GPU it names. Only these diagnoses are
    loaded: they are the large column, and a host's newest incidents say which GPU keeps failing."""
    wanted = [i for t in chosen.values() for i in t.incidents[:GPU_SAMPLE]]  # incidents are newest first
    for start in range(0, len(wanted), 500):  # SQLite caps the number of bound parameters
        with store.session() as s:
            rows = s.execute(sa.select(col(IncidentRow.id), col(IncidentRow.cluster), col(IncidentRow.host),
                                       col(IncidentRow.job_id), col(IncidentRow.signature),
                                       col(IncidentRow.created_at), col(IncidentRow.diagnosis))
                             .where(col(IncidentRow.id).in_(wanted[start:start + 500]))).all()
        for incident_id, cluster, host, job_id, signature, created_at, diagnosis in rows:
            if pci := gpu_of(diagnosis):
                gpus = chosen[cluster, host].gpus
                gpus.setdefault(pci, _Tally()).add(incident_id, job_id, signature, utc(created_at))


def offenders(store: Store, catalog: Catalog, f: IncidentFilter, min_jobs: int = 2) -> list[Offender]:
    """Hosts at the root of hardware incidents in at least `min_jobs` distinct jobs, worst first."""
    hardware = hardware_signatures(catalog)
    tallies: dict[tuple[str | None, str], _Tally] = {}
    rows = incident_rows(store, f, IncidentRow.id, IncidentRow.job_id, IncidentRow.cluster, IncidentRow.host,
                         IncidentRow.signature, IncidentRow.created_at,
                         where=(col(IncidentRow.signature).in_(sorted(hardware)), col(IncidentRow.host).is_not(None)))
    for incident_id, job_id, cluster, host, signature, created_at in rows:
        tallies.setdefault((cluster, host), _Tally()).add(incident_id, job_id, signature, utc(created_at))
    chosen = {key: t for key, t in tallies.items() if len(t.jobs) >= min_jobs}
    _tally_gpus(store, chosen)
    schedulers = schedulers_of(store, {j for t in chosen.values() for j in t.jobs})
    out = []
    for (cluster, host), t in chosen.items():
        kinds = {schedulers.get(j, "slurm") for j in t.jobs}
        scheduler = "k8s" if kinds & K8S_SCHEDULERS else "slurm"
        signatures = list(t.signatures)
        gpus = sorted((GpuOffender(pci=pci, incidents=len(g.incidents), jobs=len(g.jobs), signatures=list(g.signatures))
                       for pci, g in t.gpus.items()), key=lambda g: (-g.jobs, -g.incidents, g.pci))
        out.append(Offender(cluster=cluster, host=host, incidents=len(t.incidents), jobs=len(t.jobs),
                            signatures=signatures, first_seen=min(t.seen), last_seen=max(t.seen),
                            incident_ids=t.incidents[:SHOWN_IDS], gpus=gpus, scheduler=scheduler,
                            drain=drain_command(host, scheduler, signatures, len(t.jobs))))
    return sorted(out, key=lambda o: (-o.jobs, -o.incidents, -o.last_seen.timestamp(), o.host))
