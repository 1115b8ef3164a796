"""A process's report that it received SIGTERM names no sender: printed before anything failed it is a stop from
outside, printed after the consequences of a failure had begun in the same output it is the failed job's
teardown (correlator/job_cause.py, _teardown_signal). Fixtures from upstream formats:

- Lightning's signal connector logs `rank_prefixed_message(f"Received SIGTERM: {signum}", local_rank)`
  ("[rank: L] Received SIGTERM: 15", Lightning-AI/pytorch-lightning src/lightning/pytorch/trainer/connectors/
  signal_connector.py), under srun --label's "%0*d: " (SchedMD/slurm src/common/write_labelled_message.c);
- ProcessGroupNCCL's watchdog timeout (pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, checkTimeout);
- srun's "error: <host>: task N: Terminated" (src/srun/launch.c);
- `kubectl get events`: a pod's "Killing ... Stopping container" and JobSet's FailedJobs "jobset failed due to one
  or more job failures" (kubernetes-sigs/jobset pkg/constants/constants.go), listed at one age.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

TIMEOUT = ("{r:02d}: [rank{r}]:[E1208 20:54:05.697669608 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
           "collective operation timeout: WorkNCCL(SeqNum=763, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, "
           "Timeout(ms)=600000) ran for 600087 milliseconds before timing out.")
SIGTERM = "{r:02d}: [rank: {local}] Received SIGTERM: 15"


def _srun_log(root: Path, timeouts_first: bool) -> Path:
    """Timeouts first: six ranks' watchdogs fire, srun then stops the other two. Else: every rank is told to stop
    (a scancel, a preemption), and the tasks end Terminated."""
    if timeouts_first:
        lines = [*(TIMEOUT.format(r=r) for r in (0, 1, 3, 4, 5, 7)),
                 *(SIGTERM.format(r=r, local=r % 4) for r in (2, 6)),
                 "srun: error: cn041: tasks 0-1,3: Aborted", "srun: error: cn041: task 2: Terminated",
                 "srun: error: cn042: tasks 4-5,7: Aborted", "srun: error: cn042: task 6: Terminated"]
    else:
        lines = [*(SIGTERM.format(r=r, local=r % 4) for r in range(8)),
                 "srun: error: cn041: tasks 0-3: Terminated", "srun: error: cn042: tasks 4-7: Terminated"]
    lines.insert(0, "srun --label python train.py trainer.num_nodes=2 trainer.devices=4")
    root.mkdir()
    (root / "slurm-489634_3.out").write_text("\n".join(lines) + "\n")
    return root


def test_sigterm_after_the_timeouts_is_the_teardown_not_an_outside_stop(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_root_cause(_srun_log(tmp_path / "job", timeouts_first=True), capsys)
    assert rc["signature"] != "lightning.received_sigterm"


def test_sigterm_before_anything_failed_is_a_stop_from_outside(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_root_cause(_srun_log(tmp_path / "job", timeouts_first=False), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("lightning.received_sigterm", None, None)


EVENTS = "".join(f"{age:<12}{kind:<10}{reason:<24}{obj:<38}{message}\n" for age, kind, reason, obj, message in [
    ("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"),
    ("72m", "Normal", "Started", "pod/qwen2-pt-we6u-workers-0-0-60u2p", "Started container pytorch"),
    ("12m", "Normal", "Killing", "pod/qwen2-pt-we6u-workers-0-0-60u2p", "Stopping container pytorch"),
    ("12m", "Warning", "FailedJobs", "jobset/qwen2-pt-we6u", "jobset failed due to one or more job failures")])


def test_a_pods_killing_listed_with_the_jobsets_failure_is_the_teardown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "events.txt").write_text(EVENTS)
    (tmp_path / "kubectl-logs.txt").write_text(
        "[pod/qwen2-pt-we6u-workers-0-0-60u2p/pytorch] 2026-12-12T16:25:34.092730856Z [default1]:[rank1]:[E1212 "
        "16:25:34.092730856 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=763, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600087 "
        "milliseconds before timing out.\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] != "k8s.pod_deleted"
