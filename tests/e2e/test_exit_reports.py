"""A launcher's exit report is how a cause ends, never the cause (issue 22, pattern 3), and a failure every rank
shares names no rank.

srun's `srun: error: <host>: task N: Exited with exit code 1` (SchedMD/slurm src/srun/launch.c _task_finish) and
torchrun's failure table (pytorch/pytorch torch/distributed/elastic/multiprocessing/errors/__init__.py) say how
processes ended. Formats in tests/e2e/formats.py, each with its upstream source.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

NODE = F.Job(hosts=("gpu-b07",), per_host=8)
TRACE = ["Traceback (most recent call last):", '  File "/opt/train/train.py", line 412, in <module>',
         "    batch = next(loader)"]


def _diagnose(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["diagnose", str(root), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["root_cause"]  # type: ignore[no-any-return]


def _srun_l(rank: int, lines: list[str]) -> list[str]:
    """`srun -l` prefixes every line of a task's output with its task id (SchedMD/slurm src/srun/srun_job.c)."""
    return [f"{rank}: {line}" for line in lines]


def test_srun_s_first_exit_line_names_task_0_but_the_traceback_is_rank_3_s(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 3 raises; the seven others lose it (ncclRemoteError) and exit 1 too. srun reports task 0 first. The
    answer is rank 3 and its exception, not `slurm.task_exit` on rank 0."""
    out: list[str] = []
    for r in range(NODE.world):
        t = F.T0 + timedelta(seconds=2, milliseconds=30 * r)
        if r == 3:
            out += _srun_l(r, [*TRACE, "ValueError: sample 88123 has 4095 tokens, expected 4096"])
        else:
            out += _srun_l(r, F.remote_error(NODE, r, t))
    out += [F.srun_exit("gpu-b07", "0", 1), F.srun_exit("gpu-b07", "1-2,4-7", 1), F.srun_exit("gpu-b07", "3", 1)]
    rc = _diagnose(F.write(tmp_path, {"slurm-88123.out": out}), capsys)
    assert rc["rank"] == 3, rc["explanation"]
    assert rc["signature"] == "python.exception"
    assert any("ValueError" in e["text"] for e in rc["evidence"])


def test_a_failure_table_and_an_srun_exit_with_no_cause_line_say_what_the_exit_codes_show_unsure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchrun under srun: the only lines are torchrun's summary (rank 10 died of SIGABRT) and srun's `task 0:
    Exited with exit code 1` (task 0 is the node's torchrun, not rank 0). Nothing says why: the diagnosis names
    rank 10 from the exit codes, says no line gives the cause, and is not confident (under 0.7)."""
    job = F.Job(hosts=("gpu-c01", "gpu-c02"), per_host=8)
    lines = [*F.agent_failure(job, "gpu-c02", 10, -6, F.T0)[1:], F.srun_exit("gpu-c02", "0", 1)]
    rc = _diagnose(F.write(tmp_path, {"slurm-4711.out": lines}), capsys)
    assert (rc["rank"], rc["host"]) == (10, "gpu-c02"), rc["explanation"]
    assert rc["signature"] != "slurm.task_exit"
    assert float(rc["confidence"]) < 0.7
    assert any("no line in these logs says why" in step for step in rc["explanation"])


def test_every_rank_raising_the_same_error_under_srun_l_is_job_wide(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every rank of the step raises the same FileNotFoundError within half a second (a missing dataset), and
    srun reports each task's exit: no rank is the initiator."""
    out: list[str] = []
    for r in range(4):
        out += _srun_l(r, [*TRACE, "FileNotFoundError: [Errno 2] No such file or directory: "
                                   "'/scratch/data/val/part-0000.h5'"])
    out += [F.srun_exit("gpu-b07", "0", 1), F.srun_exit("gpu-b07", "1-3", 1)]
    rc = _diagnose(F.write(tmp_path, {"slurm-901.out": out}), capsys)
    assert (rc["rank"], rc["host"]) == (None, None), rc["explanation"]
    assert any("FileNotFoundError" in e["text"] for e in rc["evidence"])  # the cause line, not srun's


def test_the_same_traceback_from_every_task_of_an_unprefixed_log_is_job_wide(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No rank prefixes at all: four identical tracebacks, srun's exit lines right after the last one naming
    tasks 0, 1,3 and 2. Four processes failed the same way: job-wide, not "rank 0" (the unprefixed default)."""
    out: list[str] = []
    for _ in range(4):
        out += [*TRACE, "IndexError: list index out of range"]
    out += [F.srun_exit("gpu-b07", "0", 1), F.srun_exit("gpu-b07", "1,3", 1), F.srun_exit("gpu-b07", "2", 1)]
    rc = _diagnose(F.write(tmp_path, {"slurm-902.out": out}), capsys)
    assert (rc["rank"], rc["host"]) == (None, None), rc["explanation"]
    assert rc["signature"] == "python.exception"


def test_three_ranks_of_sixteen_failing_alike_are_not_the_whole_job(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three of sixteen ranks (one pipeline stage) raise the same error, the other thirteen only lose them: a
    subset is not the job, so a rank of that stage is named, not "job-wide"."""
    job = F.Job(hosts=("gpu-a01", "gpu-a02"), per_host=8)
    files: dict[str, list[str]] = {}
    for r in range(job.world):
        t = F.T0 + timedelta(seconds=1, milliseconds=30 * r)
        own = [f"[rank{r}]: {line}" for line in [*TRACE, "RuntimeError: stage 2 got activations of shape "
                                                 "[4, 4095, 8192], expected [4, 4096, 8192]"]]
        files[f"{job.host(r)}/rank{r}.log"] = [*F.nccl_init(job, r), *(own if r in (4, 5, 6) else
                                                                       F.remote_error(job, r, t))]
    rc = _diagnose(F.write(tmp_path, files), capsys)
    assert rc["rank"] in (4, 5, 6), rc["explanation"]


def test_a_setting_every_host_shares_is_job_wide_beside_srun_s_step_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every rank on both nodes fails to reach the rendezvous address (NVIDIA/nccl src/misc/socket.cc
    socketStartConnect: `Connect to %s failed : %s`, strerror's `Network is unreachable`). srun's output file
    reports each node's task and the step's end (SchedMD/slurm src/srun/launch.c _task_finish;
    src/slurmd/slurmstepd/req.c _handle_signal_container `*** STEP %s ON %s CANCELLED AT %s ***`;
    src/api/step_launch.c `Job step aborted: Waiting up to %d seconds for job step to finish.`), lines that name
    no host of their own: no rank is named."""
    job = F.Job(hosts=("gpu-c01", "gpu-c02"), per_host=4)
    files = {f"{job.host(r)}/rank{r}.log": [F.nccl(job, r, "WARN", "socketStartConnect: Connect to "
                                                   "10.255.0.1<29400> failed : Network is unreachable")]
             for r in range(job.world)}
    files["slurm-903.out"] = [F.srun_exit("gpu-c01", "0", 1),
                              "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                              "slurmstepd: error: *** STEP 903.0 ON gpu-c01 CANCELLED AT 2026-11-29T10:00:51 ***",
                              F.srun_exit("gpu-c02", "1", 1)]
    rc = _diagnose(F.write(tmp_path, files), capsys)
    assert (rc["rank"], rc["host"]) == (None, None), rc["explanation"]
    assert rc["signature"] == "nccl.socket.network_unreachable"


def test_the_oom_killers_line_is_the_cause_of_the_sigkill_the_agent_reports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchrun's agent says how rank 5 ended (`failed (exitcode: -9) ... (pid: P)`); the node's kernel log says
    who ended it (`Out of memory: Killed process P`). The answer is the OOM kill on rank 5, its SIGKILL a
    consequence, whichever file is read first."""
    t = F.T0 + timedelta(seconds=5)
    console = [line for r in range(NODE.world) for line in F.steps(r, F.T0)]
    console += F.agent_failure(NODE, "gpu-b07", 5, -9, t + timedelta(seconds=1))
    root = F.write(tmp_path, {"gpu-b07/console.log": console, "gpu-b07/dmesg.log": F.dmesg_oom(NODE.pid(5), t)})
    rc = _diagnose(root, capsys)
    assert rc["signature"] == "host.oom_killer"
    assert rc["rank"] == 5


def test_srun_s_segmentation_fault_report_is_a_segfault_of_that_task(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """srun -l, one task per GPU; task 5 dies of SIGSEGV (no traceback: native code), srun kills the rest
    (src/srun/launch.c _task_finish prints strsignal's text). The class is the crash, not srun's report."""
    lines = [line for r in range(NODE.world) for line in _srun_l(r, F.steps(r, F.T0))]
    lines += [F.srun_exit("gpu-b07", "5", 0).replace("Exited with exit code 0", "Segmentation fault (core dumped)"),
              "srun: error: gpu-b07: tasks 0-4,6-7: Killed"]
    root = F.write(tmp_path, {"slurm-41235.out": lines})
    rc = _diagnose(root, capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("slurm.task_segfault", 5, "gpu-b07")


def test_a_time_limit_with_every_tasks_exit_report_names_no_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """slurmstepd cancels the step at the time limit (src/slurmd/slurmstepd/req.c: "*** STEP %s ON %s CANCELLED AT
    %s DUE TO TIME LIMIT ***"); torchrun's agent on each node gets SIGTERM, and srun reports every task's exit
    code. The exit codes follow from the time limit: no rank is named."""
    lines = [line for r in range(NODE.world) for line in _srun_l(r, F.steps(r, F.T0))]
    lines += ["slurmstepd: error: *** STEP 88231.0 ON gpu-b07 CANCELLED AT 2026-11-29T12:00:04 DUE TO TIME LIMIT ***",
              F.srun_exit("gpu-b07", "0", 1), F.srun_exit("gpu-b07", "1-7", 1)]
    root = F.write(tmp_path, {"slurm-88231.out": lines})
    rc = _diagnose(root, capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("slurm.time_limit", None, None)
