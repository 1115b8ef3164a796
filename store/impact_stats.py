"""GPU-hours lost, summed per failure class, cluster and ISO week, from each incident's diagnosis `impact`
(correlator/impact.py). Summed in Python over the incidents the filter selects, as the other stats are."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from store.incidents import Store
from store.queries import IncidentFilter, Stats, incident_rows, iso_week, stats, utc
from store.tables import IncidentRow


class GpuHours(BaseModel):
    signature: str | None
    cluster: str | None
    week: str  # ISO week, 2026-W48
    incidents: int  # incidents in this row
    costed: int  # of them, with an impact estimate (the others' cost is unknown and not counted)
    gpu_hours_lost: float
    idle_gpu_hours: float
    lost_work_gpu_hours: float


def gpu_hours(store: Store, f: IncidentFilter) -> list[GpuHours]:
    """The most GPU-hours first."""
    rows = incident_rows(store, f, IncidentRow.signature, IncidentRow.cluster, IncidentRow.created_at,
                         IncidentRow.diagnosis)
    sums: dict[tuple[str | None, str | None, str], list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0, 0.0])
    for signature, cluster, created_at, diagnosis in rows:
        acc = sums[signature, cluster, iso_week(utc(created_at))]
        acc[0] += 1
        impact: dict[str, Any] | None = (diagnosis or {}).get("impact")
        if impact:
            acc[1] += 1
            acc[2] += float(impact.get("gpu_hours_lost") or 0)
            acc[3] += float(impact.get("idle_gpu_hours") or 0)
            acc[4] += float(impact.get("lost_work_gpu_hours") or 0)
    out = [GpuHours(signature=s, cluster=c, week=w, incidents=int(a[0]), costed=int(a[1]),
                    gpu_hours_lost=round(a[2], 2), idle_gpu_hours=round(a[3], 2), lost_work_gpu_hours=round(a[4], 2))
           for (s, c, w), a in sums.items()]
    return sorted(out, key=lambda g: (-g.gpu_hours_lost, g.week, g.signature or "", g.cluster or ""))


class CostStats(Stats):
    """`incidents stats` and GET /v1/stats: the counts, and what the failures cost (added after them)."""

    gpu_hours: list[GpuHours] = Field(default_factory=list, description="GPU-hours lost per class, cluster and "
                                      "week, the most first")


def stats_with_cost(store: Store, f: IncidentFilter, top: int = 10) -> CostStats:
    return CostStats(**stats(store, f, top).model_dump(), gpu_hours=gpu_hours(store, f))
