"""What a failure cost, in GPU-hours, as the logs tell it (correlator/impact.py estimates it)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_serializer

ImpactLevel = Literal["minor", "major", "severe"]
MAJOR_GPU_HOURS = 10.0  # at or over: major
SEVERE_GPU_HOURS = 100.0  # at or over: severe (the incident's severity becomes critical)


def level_of(gpu_hours: float) -> ImpactLevel:
    return "severe" if gpu_hours >= SEVERE_GPU_HOURS else "major" if gpu_hours >= MAJOR_GPU_HOURS else "minor"


class Impact(BaseModel):
    world_size: int = Field(ge=1, description="GPUs (ranks) the job held")
    failed_at: datetime = Field(description="the root cause's time")
    last_checkpoint_at: datetime | None = Field(None, description="the last checkpoint-saved line before it")
    lost_work_gpu_hours: float = Field(ge=0, description="world_size x (failed_at - last_checkpoint_at): to compute "
                                       "again; 0 when no checkpoint line was seen")
    first_consequence_at: datetime | None = Field(None, description="the first collateral line")
    ended_at: datetime | None = Field(None, description="the job's end: its event's, else the last failure line")
    idle_gpu_hours: float = Field(0.0, ge=0, description="world_size x (ended_at - failed_at): the others "
                                  "waiting for a timeout")
    gpu_hours_lost: float = Field(ge=0, description="lost_work_gpu_hours + idle_gpu_hours")
    level: ImpactLevel
    notes: list[str] = Field(default_factory=list, description="what the estimate could not see")

    @field_serializer("failed_at", "last_checkpoint_at", "first_consequence_at", "ended_at")
    def _times(self, value: datetime | None) -> str | None:
        return None if value is None else value.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def summary(self) -> str:
        """One line: "≈10.7 GPU-hours lost (64 GPUs): 0.0 of work since the last checkpoint, 10.7 idle"."""
        since = "since the last checkpoint" if self.last_checkpoint_at else "(no checkpoint seen)"
        return (f"≈{self.gpu_hours_lost:,.1f} GPU-hours lost ({self.world_size:,} GPUs, {self.level}): "
                f"{self.lost_work_gpu_hours:,.1f} of work {since}, {self.idle_gpu_hours:,.1f} idle until the job ended")
