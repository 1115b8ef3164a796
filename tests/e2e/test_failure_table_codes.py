"""A torchrun failure table whose row is all that speaks: its exit code names the class.

ChildFailedError's message (torch/distributed/elastic/multiprocessing/errors/__init__.py, format_msg and
_format_failure) prints a row a failed worker: "time", "host", "rank : R (local_rank: L)", "exitcode : C (pid: P)",
"error_file", and "traceback : Signal N (SIGNAME) received by PID P" for a worker a signal ended. A negative code
is the signal: -11 a native crash, -9 a kill from outside the process (the OOM killer, the scheduler)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause


def _row(rank: int, code: int, pid: int, time: str, signal: str | None) -> list[str]:
    return [f"  time      : 2026-02-12_{time}", "  host      : gpu-b38.cluster.internal",
            f"  rank      : {rank} (local_rank: {rank % 8})", f"  exitcode  : {code} (pid: {pid})",
            "  error_file: <N/A>",
            f"  traceback : {signal} received by PID {pid}" if signal else
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"]


def _table(tmp_path: Path, first: list[str], others: list[list[str]]) -> None:
    lines = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60, "train.py FAILED",
             "-" * 60, "Failures:"]
    for i, row in enumerate(others, 1):
        lines += [f"[{i}]:", *row]
    lines += ["-" * 60, "Root Cause (first observed failure):", "[0]:", *first, "=" * 60]
    (tmp_path / "gpt-527833-10.out").write_text("\n".join(lines) + "\n")


def test_a_segfault_row_is_a_segfault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _table(tmp_path, _row(84, -11, 1338354, "20:28:46", "Signal 11 (SIGSEGV)"),
           [_row(85, -15, 3999582, "20:28:47", "Signal 15 (SIGTERM)")])
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["rank"]) == ("torchrun.worker_segfault", 84)


def test_the_agents_later_kill_of_a_sibling_is_not_the_cause(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # rank 1 exits 1 first; 31 s later the agent's teardown SIGKILLs rank 0, which ignored its SIGTERM
    _table(tmp_path, _row(1, 1, 14690, "13:02:58", None),
           [_row(0, -9, 14689, "13:03:29", "Signal 9 (SIGKILL)"), _row(2, -15, 14691, "13:03:29",
                                                                        "Signal 15 (SIGTERM)")])
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["rank"] == 1 and rc["signature"] != "torchrun.worker_sigkilled"


def test_srun_reporting_the_agent_defers_to_the_tables_signal(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # every worker died of SIGBUS (-7: torchrun's table prints the negated signal, torch/distributed/elastic/
    # multiprocessing/api.py); srun then reports the agent's own exit, "task 0: Exited with exit code 1"
    _table(tmp_path, _row(0, -7, 16609, "18:04:01", "Signal 7 (SIGBUS)"),
           [_row(1, -7, 16610, "18:04:01", "Signal 7 (SIGBUS)")])
    out = tmp_path / "gpt-527833-10.out"
    out.write_text(out.read_text() + "srun: error: gpu-b38: task 0: Exited with exit code 1\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["rank"]) == ("torchrun.worker_sigbus", 0)
