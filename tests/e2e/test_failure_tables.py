"""torchrun's failure table (torch/distributed/elastic/multiprocessing/errors/__init__.py: ChildFailedError.format_msg
and _FAILURE_FORMAT_TEMPLATE) lists every failed worker with the time its agent recorded it, and heads the earliest
"Root Cause (first observed failure)" (get_first_failure: the minimum timestamp). A worker recorded after that was
still running when the first one failed: the agent stopped it (multiprocessing/api.py SubprocessContext._close:
SIGTERM, then SIGKILL once the close timeout, 30 s by default, ran out), so its -9 is not its own death."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause


def _row(idx: int, when: str, host: str, rank: int, local: int, code: int | None, pid: int) -> list[str]:
    lines = [f"[{idx}]:", f"  time      : {when}", f"  host      : {host}",
             f"  rank      : {rank} (local_rank: {local})"]
    if code is not None:
        names = {-9: "SIGKILL", -15: "SIGTERM", -7: "SIGBUS"}
        trace = (f"Signal {-code} ({names[code]}) received by PID {pid}" if code < 0
                 else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
        lines += [f"  exitcode  : {code} (pid: {pid})", "  error_file: <N/A>", f"  traceback : {trace}"]
    return lines


def _table(others: list[list[str]], root: list[str], cut: bool = False) -> list[str]:
    lines = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 48,
             "pretrain.py FAILED", "-" * 48, "Failures:"]
    for row in others:
        lines += row
    lines += ["-" * 48, "Root Cause (first observed failure):", *root]
    return lines if cut else [*lines, "=" * 48]


def test_a_worker_sigkilled_after_the_first_failure_is_the_agents_teardown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    others = [_row(1, "2026-11-30_08:14:37", "gpu-07", 4, 0, -9, 3301),
              _row(2, "2026-11-30_08:14:37", "gpu-07", 5, 1, -15, 3302),
              _row(3, "2026-11-30_08:14:37", "gpu-07", 7, 3, -15, 3304)]
    root = _row(0, "2026-11-30_08:14:06", "gpu-07", 6, 2, 1, 3303)
    log = tmp_path / "agent.log"
    log.write_text("\n".join(_table(others, root)) + "\n")
    assert cli_root_cause(log, capsys)["rank"] == 6


def test_the_root_cause_row_names_the_rank_when_its_exit_line_is_cut_off(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    others = [_row(1, "2026-11-30_08:14:06", "gpu-07", 4, 0, 1, 3301)]
    root = _row(0, "2026-11-30_08:14:06", "gpu-07", 5, 1, None, 3302)
    log = tmp_path / "agent.log"
    log.write_text("\n".join(_table(others, root, cut=True)) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["rank"], rc["host"]) == (5, "gpu-07")


def test_a_worker_sigkilled_first_is_still_its_own_death(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    others = [_row(1, "2026-11-30_08:14:07", "gpu-07", 4, 0, -15, 3301)]
    root = _row(0, "2026-11-30_08:14:06", "gpu-07", 5, 1, -9, 3302)
    log = tmp_path / "agent.log"
    log.write_text("\n".join(_table(others, root)) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["rank"] == 5
    # its SIGKILL is its own evidence, not a teardown's floor; an exit code alone is right about 2 times in 3 on the
    # fit's data (bench.calibrate --cv, 121 of 179), so the calibrated confidence sits near the suspects line
    assert float(str(rc["confidence"])) >= 0.4


def _sigbus_pair(root_time: str) -> list[str]:
    """Two workers of one container dead of SIGBUS (a /dev/shm too small for both): the other at 06:35:35."""
    others = [_row(1, "2023-04-14_06:35:35", "32a68c302449", 1, 1, -7, 3112)]
    root = _row(0, root_time, "32a68c302449", 0, 0, -7, 3111)
    return _table(others, root)


def test_a_root_cause_row_tied_to_the_second_with_another_is_a_pick_not_a_finding(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # ProcessFailure's timestamp is int(time.time()) when no error file is written, and get_first_failure is
    # min(failures, key=timestamp): of rows of one second it keeps the first in the dict's order (the lowest local
    # rank), so "Root Cause" then says nothing about which worker died first (pytorch/pytorch
    # torch/distributed/elastic/multiprocessing/errors/__init__.py). The answer lists suspects.
    log = tmp_path / "agent.log"
    log.write_text("\n".join(_sigbus_pair("2023-04-14_06:35:35")) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] == "torchrun.worker_sigbus"
    assert float(str(rc["confidence"])) < 0.5


def test_a_root_cause_row_a_second_ahead_of_the_others_is_still_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "agent.log"
    log.write_text("\n".join(_sigbus_pair("2023-04-14_06:35:34")) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["rank"] == 0
    assert float(str(rc["confidence"])) >= 0.5
