"""What a failure cost, in GPU-hours, as the logs tell it (correlator/impact.py estimates it)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_serializer

ImpactLevel = Literal["minor", "major", "severe"]
LostWorkFrom = Literal["checkpoint", "first_step"]
MAJOR_GPU_HOURS = 10.0  # at or over: major
SEVERE_GPU_HOURS = 100.0  # at or over: severe (the incident's severity becomes critical)


def level_of(gpu_hours: float) -> ImpactLevel:
    return "severe" if gpu_hours >= SEVERE_GPU_HOURS else "major" if gpu_hours >= MAJOR_GPU_HOURS else "minor"


class Impact(BaseModel):
    world_size: int = Field(ge=1, description="GPUs (ranks) the job held")
    failed_at: datetime = Field(description="the root cause's time")
    last_checkpoint_at: datetime | None = Field(None, description="the last checkpoint-saved line before it")
    lost_work_gpu_hours: float = Field(ge=0, description="world_size x (failed_at - the start of the lost work): "
                                       "to compute again; 0 when neither a checkpoint nor a step line was seen")
    lost_work_from: LostWorkFrom | None = Field(None, description="where the lost work starts: the last checkpoint "
                                                "before the failure, else the first training step the logs show (a "
                                                "lower bound: the run may have started earlier)")
    last_step: int | None = Field(None, ge=0, description="the last training step logged before the failure")
    last_step_at: datetime | None = None
    checkpoint_step: int | None = Field(None, ge=0, description="the step the last checkpoint holds: its line's, "
                                        "else estimated from the step rate")
    steps_lost: int | None = Field(None, ge=0, description="last_step - checkpoint_step (or - the first step seen)")
    seconds_per_step: float | None = Field(None, gt=0, description="from the first and the last step lines")
    first_consequence_at: datetime | None = Field(None, description="the first collateral line")
    ended_at: datetime | None = Field(None, description="the job's end: its event's, else the last failure line")
    idle_gpu_hours: float = Field(0.0, ge=0, description="world_size x (ended_at - failed_at): the others "
                                  "waiting for a timeout")
    gpu_hours_lost: float = Field(ge=0, description="lost_work_gpu_hours + idle_gpu_hours")
    level: ImpactLevel
    notes: list[str] = Field(default_factory=list, description="what the estimate could not see")

    @field_serializer("failed_at", "last_checkpoint_at", "first_consequence_at", "ended_at", "last_step_at")
    def _times(self, value: datetime | None) -> str | None:
        return None if value is None else value.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def summary(self) -> str:
        """One line: "≈10.7 GPU-hours lost (64 GPUs): 0.0 of work since the last checkpoint, 10.7 idle"."""
        since = {"checkpoint": "since the last checkpoint", "first_step": "at least, since the first step logged (no "
                 "checkpoint seen)"}.get(self.lost_work_from or "", "(no checkpoint seen)")
        if self.steps_lost is not None and self.last_step is not None:
            start = self.last_step - self.steps_lost
            since += f", step {start:,} → {self.last_step:,}: {self.steps_lost:,} steps"
        return (f"≈{self.gpu_hours_lost:,.1f} GPU-hours lost ({self.world_size:,} GPUs, {self.level}): "
                f"{self.lost_work_gpu_hours:,.1f} of work {since}, {self.idle_gpu_hours:,.1f} idle until the job ended")
