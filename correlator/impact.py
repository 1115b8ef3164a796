"""What a failure cost, from the logs alone. Pure: every time is an argument, nothing is read here.

Two parts, in GPU-hours (one rank holds one GPU):
- the work lost: world size x the time from the last checkpoint-saved line (the `ckpt_saved` context kind) before
  the failure to the failure; with no such line it is not known (the scan keeps no time stamp of ordinary lines,
  so the run's start is not seen) and counts 0, with a note saying so;
- the idle wait: world size x the time from the failure to the job's end (its event's `ended_at`, else the last
  failure line), when the other ranks sat waiting for a timeout to fire. It is counted from the failure, not
  from the first consequence (the first collateral line, kept as `first_consequence_at`): a watchdog prints its
  line when the timeout fires, at the end of the wait, so counting from it would leave the wait out (the
  64-rank OOM example: 0.04 GPU-hours from the watchdog's line, 10.7 from the failure).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from correlator.events import Event
from correlator.kept import ContextRecord
from correlator.prepare import when
from schemas.diagnosis import Diagnosis
from schemas.impact import Impact, level_of

HOUR_S = 3600.0


def estimate(diagnosis: Diagnosis, world_size: int | None, checkpoints: Iterable[datetime],
             failure_times: Iterable[datetime], ended_at: datetime | None = None) -> Impact | None:
    """None when the logs cannot tell: no root cause time, or no world size."""
    rc = diagnosis.root_cause
    if rc is None or rc.time is None or not world_size:
        return None
    failed_at = rc.time
    notes: list[str] = []
    last_ckpt = max((t for t in checkpoints if t <= failed_at), default=None)
    if last_ckpt is None:
        notes.append("no checkpoint-saved line before the failure: the work lost since the last save is not known "
                     "and not counted")
    first_consequence = min((e.time for e in diagnosis.timeline
                             if e.role == "collateral" and e.time is not None and e.time >= failed_at), default=None)
    end = ended_at or max(failure_times, default=None)
    if ended_at is None:
        notes.append("job end taken from the last failure line (no end time in the job's event)")
    lost = _gpu_hours(world_size, last_ckpt, failed_at)
    idle = _gpu_hours(world_size, failed_at, end)
    total = round(lost + idle, 2)
    return Impact(world_size=world_size, failed_at=failed_at, last_checkpoint_at=last_ckpt,
                  lost_work_gpu_hours=lost, first_consequence_at=first_consequence, ended_at=end,
                  idle_gpu_hours=idle, gpu_hours_lost=total, level=level_of(total), notes=notes)


def _gpu_hours(world_size: int, start: datetime | None, end: datetime | None) -> float:
    if start is None or end is None or end <= start:
        return 0.0
    return round(world_size * (end - start).total_seconds() / HOUR_S, 2)


def with_impact(diagnosis: Diagnosis, of_kind: Mapping[str, list[ContextRecord]], failures: Sequence[Event],
                offsets: Mapping[str | None, timedelta], world_size: int | None,
                ended_at: datetime | None) -> Diagnosis:
    """The diagnosis with its impact, from what the correlator read: checkpoint-saved records (their host's clock
    offset taken off, as the events' are) and the failures' times."""
    checkpoints = [rec.time - offsets.get(rec.who.host, timedelta(0)) for rec in of_kind.get("ckpt_saved", [])
                   if rec.time is not None]
    times = [t for ev in failures if (t := when(ev, offsets)) is not None]
    impact = estimate(diagnosis, world_size, checkpoints, times, ended_at)
    return diagnosis if impact is None else diagnosis.model_copy(update={"impact": impact})
