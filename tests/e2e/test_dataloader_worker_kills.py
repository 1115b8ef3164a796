"""The kernel's OOM kill of a DataLoader worker, written from the upstream formats.

torch/utils/data/_utils/worker.py names every worker process "pt_data_worker" (_worker_loop:
torch.multiprocessing._set_thread_name), so the kernel's kill line names it: "Out of memory: Killed process <pid>
(pt_data_worker) total-vm:..." (mm/oom_kill.c prints the victim's comm). The rank that owned the worker raises
"RuntimeError: DataLoader worker (pid <pid>) is killed by signal: Killed." (torch/utils/data/_utils/
signal_handling.py, torch/csrc/DataLoader.cpp). horovodrun's gloo launcher prefixes a rank's stream
"[<rank>]<stderr>:" (horovod/runner/common/util/safe_shell_exec.py) and names no host."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

_RANK_LINES = ["Traceback (most recent call last):",
               "    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e",
               "RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Killed. "]
_KILL = ("[1491634.542438] Out of memory: Killed process {pid} ({comm}) total-vm:219000000kB, anon-rss:179000000kB, "
         "file-rss:81920kB, shmem-rss:0kB, UID:1000 pgtables:358000kB oom_score_adj:0")


def _job(tmp_path: Path, comm: str = "pt_data_worker", killed: int = 983054) -> None:
    lines = [f"[5]<stderr>:{text.replace('{pid}', '983054')}" for text in _RANK_LINES]
    lines += ["[6]<stderr>:horovod.common.exceptions.HorovodInternalError: ncclAllReduce failed: remote process "
              "exited or there was a network error", "Process 5 exit with status code 1."]
    (tmp_path / "horovodrun.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "dmesg").mkdir()
    (tmp_path / "dmesg" / "gpu-b21.log").write_text(_KILL.format(pid=killed, comm=comm) + "\n")


def test_the_killed_worker_is_the_ranks_that_named_it_on_the_node_that_killed_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _job(tmp_path)
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("pytorch.dataloader.worker_oom_killed", 5, "gpu-b21")


def test_a_kill_of_another_pid_is_not_the_ranks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _job(tmp_path, killed=4242)
    rc = cli_root_cause(tmp_path, capsys)
    assert not (rc["rank"] == 5 and rc["host"] == "gpu-b21")


def test_a_killed_training_process_stays_the_host_oom_class(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _job(tmp_path, comm="python", killed=4242)
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] != "pytorch.dataloader.worker_oom_killed"
