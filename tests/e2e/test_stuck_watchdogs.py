"""A stuck watchdog's report on a rank whose own watchdog first caught a collective timing out (PyTorch's
ProcessGroupNCCL.cpp: the watchdog reports `Watchdog caught collective operation timeout`, then dumps and aborts;
HeartbeatMonitor reports `ProcessGroupNCCL's watchdog got stuck for N seconds` when the watchdog stops ticking,
TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, 480 by default). That rank's watchdog was ticking when the collective ran out,
so the stuck watchdog is how its wait ended: it is not the rank that stalled the job."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

STUCK = ("[rank{r}]:[E626 05:14:36.393067540 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
         "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
         "collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog")
TIMEOUT = ("[rank{r}]:[E626 05:06:3{r}.929096625 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=120049, OpType=_ALLGATHER_BASE, NumelIn=16384000, "
           "NumelOut=131072000, Timeout(ms)=1800000) ran for 1800065 milliseconds before timing out.")


def _write(tmp_path: Path, lines: list[str]) -> Path:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_a_watchdog_stuck_after_its_own_timeout_does_not_name_its_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write(tmp_path, [STUCK.format(r=7), TIMEOUT.format(r=2), TIMEOUT.format(r=7)])
    rc = cli_root_cause(log, capsys)
    assert not (rc["rank"] == 7 and float(str(rc["confidence"])) >= 0.5)


def test_a_watchdog_stuck_with_no_timeout_of_its_own_is_still_the_lead(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a GPU or driver hang stops the watchdog before it can catch anything: the others time out waiting for it
    log = _write(tmp_path, [STUCK.format(r=7), TIMEOUT.format(r=2), TIMEOUT.format(r=3)])
    rc = cli_root_cause(log, capsys)
    assert rc["rank"] == 7
