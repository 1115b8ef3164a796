"""What a failure cost, from the logs alone. Pure: every time is an argument, nothing is read here.

Two parts, in GPU-hours (one rank holds one GPU):
- the work lost: world size x the time from the last checkpoint-saved line (the `ckpt_saved` context kind) before
  the failure to the failure. With no such line, from the first training step the logs show (the `train_step`
  kind: torchtitan, Megatron-LM and DeepSpeed progress lines, whose frameworks' checkpoint lines ckpt_saved
  knows): nothing this run did was saved, so at least that much is lost. With neither it is not known and
  counts 0, with a note saying so. Step lines also say how many steps were lost: the last one logged before the
  failure, less the step the checkpoint holds (its line's own, else the step rate's estimate; a speaker's step
  lines fold into its first and latest, correlator/kept.py);
- the idle wait: world size x the time from the failure to the job's end (its event's `ended_at`, else the last
  failure line), when the other ranks sat waiting for a timeout to fire. It is counted from the failure, not
  from the first consequence (the first collateral line, kept as `first_consequence_at`): a watchdog prints its
  line when the timeout fires, at the end of the wait, so counting from it would leave the wait out (the
  64-rank OOM example: 0.04 GPU-hours from the watchdog's line, 10.7 from the failure).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from correlator.event_times import wall_times
from correlator.events import Event
from correlator.kept import ContextRecord
from schemas.diagnosis import Diagnosis
from schemas.impact import Impact, level_of

HOUR_S = 3600.0
# The step number of a train_step line (correlator/context.py says where each format comes from) and the step a
# checkpoint line names (torchtitan's last-step save "at last step, step N.", Megatron-LM's "saved checkpoint from
# iteration N")
_STEP = re.compile(r"(?:\bstep|\x1b\[[\d;]*mstep): *(\d+) +(?:\x1b\[[\d;]*m)?loss: |\biteration +(\d+)/ *\d+ \||"
                   r"\bstep=(\d+), skipped=\d+, lr=")
_CKPT_STEP = re.compile(r"at last step, step (\d+)\.|saved checkpoint from iteration +(\d+)")


class Step(NamedTuple):
    at: datetime
    step: int


class Saved(NamedTuple):
    at: datetime
    step: int | None  # when the line names it


class Progress(NamedTuple):
    """What the step lines say of the run, up to the failure."""
    first: Step
    last: Step

    @property
    def seconds_per_step(self) -> float | None:
        steps = self.last.step - self.first.step
        seconds = (self.last.at - self.first.at).total_seconds()
        return seconds / steps if steps > 0 and seconds > 0 else None

    def step_at(self, t: datetime) -> int | None:
        """The step the run had reached at ``t``, from the rate between the first and the last step lines."""
        rate = self.seconds_per_step
        if rate is None or not self.first.at <= t <= self.last.at:
            return None
        return self.first.step + int((t - self.first.at).total_seconds() / rate)


def progress_until(steps: Iterable[Step], failed_at: datetime) -> Progress | None:
    """The first and the last step lines at or before the failure; None without one."""
    before = sorted(s for s in steps if s.at <= failed_at)
    return Progress(before[0], max(before, key=lambda s: (s.step, s.at))) if before else None


def estimate(diagnosis: Diagnosis, world_size: int | None, checkpoints: Iterable[datetime | Saved],
             failure_times: Iterable[datetime], ended_at: datetime | None = None,
             steps: Iterable[Step] = ()) -> Impact | None:
    """None when the logs cannot tell: no root cause time, or no world size."""
    rc = diagnosis.root_cause
    if rc is None or rc.time is None or not world_size:
        return None
    failed_at = rc.time
    notes: list[str] = []
    saves = [c if isinstance(c, Saved) else Saved(c, None) for c in checkpoints]
    last_save = max((c for c in saves if c.at <= failed_at), default=None, key=lambda c: c.at)
    last_ckpt = last_save.at if last_save is not None else None
    progress = progress_until(steps, failed_at)
    lost_from: datetime | None = last_ckpt
    checkpoint_step = steps_lost = None
    if last_save is not None:
        if progress is not None:
            checkpoint_step = last_save.step if last_save.step is not None else progress.step_at(last_save.at)
            if checkpoint_step is not None and checkpoint_step <= progress.last.step:
                steps_lost = progress.last.step - checkpoint_step
    elif progress is not None:
        lost_from = progress.first.at
        steps_lost = progress.last.step - progress.first.step
        notes.append(f"no checkpoint-saved line before the failure: the work lost is counted from the first step the "
                     f"logs show (step {progress.first.step:,}), a lower bound")
    else:
        notes.append("no checkpoint-saved line before the failure: the work lost since the last save is not known "
                     "and not counted")
    first_consequence = min((e.time for e in diagnosis.timeline
                             if e.role == "collateral" and e.time is not None and e.time >= failed_at), default=None)
    end = ended_at or max(failure_times, default=None)
    if ended_at is None:
        notes.append("job end taken from the last failure line (no end time in the job's event)")
    lost = _gpu_hours(world_size, lost_from, failed_at)
    idle = _gpu_hours(world_size, failed_at, end)
    total = round(lost + idle, 2)
    rate = progress.seconds_per_step if progress is not None else None
    return Impact(world_size=world_size, failed_at=failed_at, last_checkpoint_at=last_ckpt,
                  lost_work_gpu_hours=lost, first_consequence_at=first_consequence, ended_at=end,
                  idle_gpu_hours=idle, gpu_hours_lost=total, level=level_of(total), notes=notes,
                  lost_work_from=None if lost_from is None else "checkpoint" if last_ckpt else "first_step",
                  last_step=progress.last.step if progress else None,
                  last_step_at=progress.last.at if progress else None, checkpoint_step=checkpoint_step,
                  steps_lost=steps_lost, seconds_per_step=None if rate is None else round(rate, 3))


def _gpu_hours(world_size: int, start: datetime | None, end: datetime | None) -> float:
    if start is None or end is None or end <= start:
        return 0.0
    return round(world_size * (end - start).total_seconds() / HOUR_S, 2)


def with_impact(diagnosis: Diagnosis, of_kind: Mapping[str, list[ContextRecord]], failures: Sequence[Event],
                offsets: Mapping[str | None, timedelta], world_size: int | None,
                ended_at: datetime | None) -> Diagnosis:
    """The diagnosis with its impact, from what the correlator read: checkpoint-saved records (their host's clock
    offset taken off, as the events' are) and the failures' times."""
    checkpoints = [Saved(rec.time - offsets.get(rec.who.host, timedelta(0)), _step_of(_CKPT_STEP, rec.text))
                   for rec in of_kind.get("ckpt_saved", []) if rec.time is not None]
    steps = [Step(rec.time - offsets.get(rec.who.host, timedelta(0)), n) for rec in of_kind.get("train_step", [])
             if rec.time is not None and (n := _step_of(_STEP, rec.text)) is not None]
    times = wall_times(failures, offsets)
    impact = estimate(diagnosis, world_size, checkpoints, times, ended_at, steps)
    return diagnosis if impact is None else diagnosis.model_copy(update={"impact": impact})


def _step_of(pattern: re.Pattern[str], text: str) -> int | None:
    m = pattern.search(text)
    return None if m is None else int(next(g for g in m.groups() if g is not None))
