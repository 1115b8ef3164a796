"""What a failure cost, in GPU-hours, from the logs (correlator/impact.py), through `firstfault diagnose`: 4 ranks
of torchtitan logs save a checkpoint at 09:10:14, rank 2 faults at 09:40:00, the other three wait in a collective
until their watchdogs fire at 09:50."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from correlator.impact import estimate
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


def test_without_a_checkpoint_the_lost_work_is_not_guessed_and_a_note_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    impact = _impact(tmp_path, capsys, saved=False)
    assert impact["last_checkpoint_at"] is None and impact["lost_work_gpu_hours"] == 0.0
    assert impact["idle_gpu_hours"] == round(4 * 603.021 / 3600, 2)
    assert any("no checkpoint-saved line" in n for n in impact["notes"])  # type: ignore[union-attr]


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
