"""Slurm's report of a task killed by its memory cgroup, printed right under the step's placeless OOM line:
one message of two lines, and the line that says whose it is names the event (correlator/events.py,
build_events). Fixtures written from the formats upstream prints:

- slurmstepd's task/cgroup plugin (SchedMD/slurm src/plugins/task/cgroup: "Detected %u oom_kill event%s in %ps.
  Some of the step tasks have been OOM Killed."), relayed by srun;
- srun's _task_finish (src/srun/launch.c): "%s: %s %s: Out Of Memory" (node, "task"/"tasks", the ids), then the
  other tasks' "Terminated";
- ProcessGroupNCCL.cpp's watchdog on the survivors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause


@pytest.mark.parametrize("order", ["step-first", "srun-first"])
def test_the_task_srun_names_is_the_oom_killed_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    order: str) -> None:
    step = ("slurmstepd: error: Detected 1 oom_kill event in StepId=2240365.0. Some of the step tasks have been OOM "
            "Killed.")
    task = "srun: error: gpu-g03: task 9: Out Of Memory"
    lines = [f"[2026-04-07 03:0{m}:51,327] step {50 * (m + 1)} | loss 7.65 | lr 3.00e-04" for m in range(5)]
    lines += [step, task] if order == "step-first" else [task, step]
    lines += [f"[E407 03:41:18.081891222 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
              "timeout: WorkNCCL(SeqNum=17944, OpType=ALLREDUCE, NumelIn=5, NumelOut=5, Timeout(ms)=600000) ran for "
              "600447 milliseconds before timing out." for r in range(16) if r != 9]
    lines += ["srun: error: gpu-g02: tasks 0-7: Terminated", "srun: error: gpu-g03: tasks 8,10-15: Terminated"]
    (tmp_path / "slurm-2240365.out").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["rank"]) == ("slurm.task_oom", 9)
