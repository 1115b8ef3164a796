"""What a failure cost, in GPU-hours, from the logs (correlator/impact.py), through `firstfault diagnose`: 4 ranks
of torchtitan logs save a checkpoint at 09:10:14, rank 2 faults at 09:40:00, the other three wait in a collective
until their watchdogs fire at 09:50."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from correlator.context import CONTEXT_EXAMPLES
from correlator.impact import _STEP, _step_of, estimate
from firstfault.cli import main
from schemas.diagnosis import Diagnosis, RootCause, TimelineEntry

_TITAN = "[rank{r}]:[titan] 2026-03-02 09:{m}:{s},102 - root - INFO - "
_FAULT = "[rank{r}]:[titan] 2026-03-02 09:40:00,102 - root - ERROR - RuntimeError: CUDA error: an illegal memory " \
         "access was encountered"
_WATCHDOG = ("[rank{r}]:[E0302 09:50:0{r}.123456 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
             "operation timeout: WorkNCCL(SeqNum=4120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
             "ran for 600012 milliseconds before timing out.")


def _rank(r: int, saved: bool) -> str:
    lines = [_TITAN.format(r=r, m=10, s="00") + "step: 1000  loss:  3.41  memory: 61.20GiB(77.30%)  tps: 7,538"]
    if saved:
        lines += [_TITAN.format(r=r, m=10, s="01") + "Saving the checkpoint (or staging if async is enabled).",
                  _TITAN.format(r=r, m=10, s="14") + "Finished saving the checkpoint (or staging if async is "
                  "enabled) in 13.02 seconds."]
    lines.append(_TITAN.format(r=r, m=39, s="59") + "step: 1900  loss:  3.20  memory: 61.20GiB(77.30%)  tps: 7,541")
    lines.append(_FAULT.format(r=r) if r == 2 else _WATCHDOG.format(r=r))
    return "\n".join(lines) + "\n"


def _impact(tmp_path: Path, capsys: pytest.CaptureFixture[str], saved: bool) -> dict[str, object]:
    for r in range(4):
        (tmp_path / f"rank{r}.log").write_text(_rank(r, saved))
    assert main(["diagnose", str(tmp_path), "--format", "json", "--year", "2026"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["root_cause"]["rank"] == 2
    return dict(d["impact"])


def test_lost_work_since_the_checkpoint_and_the_wait_for_the_watchdog(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    impact = _impact(tmp_path, capsys, saved=True)
    assert impact["world_size"] == 4
    assert impact["last_checkpoint_at"] == "2026-03-02T09:10:14.102Z"
    assert impact["failed_at"] == "2026-03-02T09:40:00.102Z"
    assert impact["lost_work_gpu_hours"] == round(4 * 1786 / 3600, 2)  # 29 min 46 s since the save, 4 GPUs
    assert impact["first_consequence_at"] == "2026-03-02T09:50:00.123Z"
    assert impact["ended_at"] == "2026-03-02T09:50:03.123Z"  # the last watchdog line: no job event here
    assert impact["idle_gpu_hours"] == round(4 * (603.021) / 3600, 2)  # the 10 min the others waited
    assert impact["gpu_hours_lost"] == round(impact["lost_work_gpu_hours"] + impact["idle_gpu_hours"], 2)  # type: ignore[operator]
    assert impact["level"] == "minor" and not any("checkpoint" in n for n in impact["notes"])  # type: ignore[union-attr]
    # the step lines: 1,000 at 09:10:00, 1,900 at 09:39:59 (1.999 s a step); torchtitan's finish line names no
    # step, so the checkpoint's is the rate's estimate at 09:10:14, and about 893 steps are to be run again
    assert impact["lost_work_from"] == "checkpoint"
    assert impact["last_step"] == 1900 and impact["last_step_at"] == "2026-03-02T09:39:59.102Z"
    assert impact["seconds_per_step"] == round(1799 / 900, 3)
    assert impact["checkpoint_step"] == 1007 and impact["steps_lost"] == 893


def test_without_a_checkpoint_the_work_since_the_first_step_logged_is_lost(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    impact = _impact(tmp_path, capsys, saved=False)
    # nothing this run did was saved: at least the 30 minutes since step 1,000 (09:10:00) are lost, on 4 GPUs
    assert impact["last_checkpoint_at"] is None and impact["lost_work_from"] == "first_step"
    assert impact["lost_work_gpu_hours"] == round(4 * 1800.102 / 3600, 2)
    assert impact["steps_lost"] == 900 and impact["checkpoint_step"] is None
    assert impact["idle_gpu_hours"] == round(4 * 603.021 / 3600, 2)
    assert any("first step the logs show (step 1,000), a lower bound" in n for n in impact["notes"])  # type: ignore[union-attr]


def test_without_a_checkpoint_or_a_step_line_the_lost_work_is_not_guessed(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    for r in range(4):
        (tmp_path / f"rank{r}.log").write_text(_FAULT.format(r=r) + "\n" if r == 2 else _WATCHDOG.format(r=r) + "\n")
    assert main(["diagnose", str(tmp_path), "--format", "json", "--year", "2026"]) == 0
    impact = json.loads(capsys.readouterr().out)["impact"]
    assert impact["lost_work_gpu_hours"] == 0.0 and impact["lost_work_from"] is None and impact["last_step"] is None
    assert any("not known and not counted" in n for n in impact["notes"])


# Megatron-LM's training_log line (' iteration {:8d}/{:8d} |', megatron/training/training.py) and its save's finish
# line, which names the iteration saved (checkpointing.py save_checkpoint)
_MEGATRON = (" [2026-03-02 09:{m:02d}:00] iteration {it:8d}/  500000 | consumed samples: {s:12d} | elapsed time per "
             "iteration (ms): 3000.1 |")


def test_a_checkpoint_line_that_names_its_iteration_gives_the_steps_lost(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    lines = [_MEGATRON.format(m=m, it=it, s=it * 1024) for m, it in ((0, 100), (10, 300))]
    lines += ["[2026-03-02 09:10:30] successfully saved checkpoint from iteration     300 to /ckpt/run1",
              _MEGATRON.format(m=29, it=680, s=680 * 1024),
              "[2026-03-02 09:30:02] RuntimeError: CUDA error: an illegal memory access was encountered"]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "job.json").write_text(json.dumps({"job_id": "gpt-1", "state": "failed", "world_size": 256}))
    assert main(["diagnose", str(tmp_path), "--format", "json", "--year", "2026"]) == 0
    impact = json.loads(capsys.readouterr().out)["impact"]
    assert impact["checkpoint_step"] == 300 and impact["last_step"] == 680 and impact["steps_lost"] == 380
    assert impact["seconds_per_step"] == round(1740 / 580, 3)


def _at(minute: int) -> datetime:
    return datetime(2026, 3, 2, 9, minute, tzinfo=UTC)


def test_the_job_events_end_and_a_large_world_make_it_severe() -> None:
    diagnosis = Diagnosis(verdict="diagnosed", root_cause=RootCause(
        signature="cuda.illegal_memory_access", title="x" * 5, category="cuda", confidence=0.9, time=_at(40)),
        timeline=[TimelineEntry(time=_at(50), rank=0, host=None, signature="w", role="collateral")])
    impact = estimate(diagnosis, 1024, [_at(10), _at(45)], [_at(40), _at(50)], ended_at=_at(55))
    assert impact is not None and impact.last_checkpoint_at == _at(10)  # a save after the failure does not count
    assert impact.ended_at == _at(55) and impact.idle_gpu_hours == 256.0 and impact.lost_work_gpu_hours == 512.0
    assert impact.level == "severe" and impact.notes == []
    assert estimate(diagnosis, None, [], []) is None  # no world size: the logs cannot tell


def test_every_step_line_format_the_scan_keeps_gives_its_step_number() -> None:
    """impact.py reads the number from the kept line's text: each train_step example (context.py, one per upstream
    format) must give one, or its lines would be kept and never counted."""
    steps = [_step_of(_STEP, line) for line in CONTEXT_EXAMPLES["train_step"]]
    assert steps == [1200, 12, 1200, 1200]
