"""Stragglers without a desync report (issue 22, pattern 5): collective sequence numbers name the rank.

ProcessGroupNCCL's watchdog prints the collective it timed out in (pytorch/pytorch torch/csrc/distributed/c10d/
ProcessGroupNCCL.cpp, WorkNCCL::checkTimeout: `Watchdog caught collective operation timeout: WorkNCCL(SeqNum=N,
OpType=..., NumelIn=..., NumelOut=..., Timeout(ms)=...) ran for N milliseconds before timing out.`) and its
progress (watchdogHandler, torch 2.4-2.6: `Exception (either an error or timeout) detected by watchdog at work:
N, last enqueued NCCL work: N, last completed NCCL work: M.`). A rank stuck in an older collective, or absent
from the collective every other rank of the job waits in, is the initiator even when no rank names it.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

JOB = F.Job()
LAGGARD, SEQ = 9, 1843


def _diagnose(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(root), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _job(laggard: list[str] | None, info: bool = True, status: bool = True) -> dict[str, list[str]]:
    """Fifteen ranks time out in SeqNum=1843; the laggard prints `laggard` (None: its log is not there)."""
    files: dict[str, list[str]] = {}
    for r in range(JOB.world):
        head = (F.nccl_init(JOB, r) if info else []) + F.steps(r, F.T0 - timedelta(minutes=10))
        t = F.T0 + timedelta(milliseconds=30 * r)
        if r != LAGGARD:
            tail = [F.watchdog_timeout(r, t, SEQ)]
            tail += [F.watchdog_status(r, t, SEQ, SEQ, SEQ - 1)] if status else []
            files[f"{JOB.host(r)}/rank{r}.log"] = head + tail + F.teardown(r, t)
        elif laggard is not None:
            files[f"{JOB.host(r)}/rank{r}.log"] = head + laggard
    return files


def _named(d: dict[str, object]) -> None:
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert rc["rank"] == LAGGARD, rc["explanation"]
    assert LAGGARD not in {r for g in d["collateral"] for r in g["ranks"]}  # type: ignore[attr-defined]


def test_a_rank_that_timed_out_in_an_older_collective_is_the_straggler(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 9's watchdog fires in SeqNum=1842, which the other fifteen completed (they wait in 1843). No progress
    lines (torch before 2.4): the SeqNum alone says it; every rank timing out is not a job-wide verdict."""
    t = F.T0 + timedelta(milliseconds=270)
    d = _diagnose(F.write(tmp_path, _job([F.watchdog_timeout(LAGGARD, t, SEQ - 1), *F.teardown(LAGGARD, t)],
                                         info=False, status=False)), capsys)
    _named(d)


def test_a_rank_that_completed_fewer_collectives_than_everyone_is_stuck_in_the_older_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 9 enqueued as many collectives as everyone (1843) but completed only 1841: it is stuck in 1842."""
    t = F.T0 + timedelta(milliseconds=270)
    lines = [F.watchdog_status(LAGGARD, t, SEQ - 1, SEQ, SEQ - 2), *F.teardown(LAGGARD, t)]
    d = _diagnose(F.write(tmp_path, _job(lines, info=False, status=True)), capsys)
    _named(d)
    rc = d["root_cause"]
    assert isinstance(rc, dict) and any("completed" in step for step in rc["explanation"])


def test_the_rank_whose_log_is_missing_from_a_job_of_known_size_is_the_straggler(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fifteen of the sixteen ranks NCCL's `nranks 16` counts time out in 1843; rank 9's log did not arrive."""
    d = _diagnose(F.write(tmp_path, _job(None)), capsys)
    _named(d)


def test_the_rank_that_printed_nothing_without_nccl_info_lines_is_the_straggler(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NCCL_DEBUG=WARN: no `comm ... nranks` line. Rank 9's log is there (rank9.log, training steps only); the
    ranks 0-15 but 9 time out: the one hole among the ranks that timed out is the straggler."""
    d = _diagnose(F.write(tmp_path, _job([], info=False)), capsys)
    _named(d)


def test_the_absent_rank_is_cited_at_a_line_that_exists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An absence prints no line of its own: the evidence cites the first other rank's watchdog timeout in the
    collective (rank 0's `WorkNCCL(SeqNum=1843, ...)` line, at its real line number), not a line 0 of a file."""
    files = _job(None)
    d = _diagnose(F.write(tmp_path, files), capsys)
    _named(d)
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    name = f"{JOB.host(0)}/rank0.log"
    timeout = next(i for i, text in enumerate(files[name], 1) if f"SeqNum={SEQ}," in text)
    cited = [(e["source"], e["line"], e["text"]) for e in rc["evidence"]]
    assert (name, timeout, files[name][timeout - 1]) in cited, cited
    assert all(line >= 1 for _, line, _ in cited if line is not None), cited



def test_the_last_rank_silent_in_torchruns_log_dir_is_the_straggler(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchrun --log-dir files each worker under <run>/attempt_0/<local rank>/ (DefaultLogsSpecs.reify), with
    c10's [rankN]: prefix on its watchdog lines. Rank 15, local rank 7 of the second node, printed its steps and
    then nothing; no NCCL INFO line says the job's size. Its folder says which rank it is (the node's other
    workers give the node's block, _assign_worker_ranks), so its silence is read as the straggler's."""
    laggard = JOB.world - 1
    for r in range(JOB.world):
        folder = tmp_path / JOB.host(r) / "none_k2j4x9" / "attempt_0" / str(JOB.local(r))
        folder.mkdir(parents=True)
        t = F.T0 + timedelta(milliseconds=30 * r)
        steps = F.steps(r, F.T0 - timedelta(minutes=10))
        tail = [] if r == laggard else [F.watchdog_timeout(r, t, SEQ), *F.teardown(r, t)]
        (folder / "stderr.log").write_text("\n".join(steps + tail) + "\n")
    rc = _diagnose(tmp_path, capsys)["root_cause"]
    assert isinstance(rc, dict)
    assert rc["rank"] == laggard, rc["explanation"]
