"""Open MPI's report of the first process to exit non-zero, in the format of open-mpi/ompi v4.1.x
orte/tools/orterun/help-orterun.txt, topic [orterun:non-zero-exit], printed by orte/runtime/orte_quit.c
(orte_print_aborted_job, with ORTE_NAME_PRINT's "[[job family,local job],vpid]") and by PRRTE's prterun in the
same words (help-prun, [prun:non-zero-exit]):

    %s detected that one or more processes exited with non-zero status, thus causing
    the job to be terminated. The first process to do so was:

      Process name: %s
      Exit code:    %d

The vpid of local job 1 (the application mpirun launched) is its MPI_COMM_WORLD rank. The report says how that
rank ended, not why: it names the rank only as an exit report, and a cause line in the logs stays the cause.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

RULE = "-" * 74


def _report(job: str, vpid: int, code: int, launcher: str = "mpirun") -> list[str]:
    return [RULE, "Primary job  terminated normally, but 1 process returned",
            "a non-zero exit code. Per user-direction, the job has been aborted.", RULE, RULE,
            f"{launcher} detected that one or more processes exited with non-zero status, thus causing",
            "the job to be terminated. The first process to do so was:", "",
            f"  Process name: [[{job}],{vpid}]", f"  Exit code:    {code}", RULE]


def _tagged(rank: int, line: str) -> str:
    return f"[1,{rank}]<stderr>:{line}"  # mpirun --tag-output: [jobid, MCW_rank]<stdxxx>


def _collective_losses(ranks: range, dead: int) -> list[str]:
    """Every other rank loses its peer: collateral lines (NCCL's remote-error report) naming no cause."""
    return [_tagged(r, f"gpu0{r}:41{r}0:41{r}7 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.{dead} with "
                       "status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1") for r in ranks
            if r != dead]


def test_the_first_process_to_exit_names_its_rank_when_nothing_else_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "mpirun.out"
    log.write_text("\n".join([*_collective_losses(range(4), 3), *_report("43917,1", 3, 139)]) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["rank"] == 3, rc["explanation"]
    # how it ended, nothing of its own said why: never a confident diagnosis
    assert rc["confidence"] < 0.9, rc


def test_the_cause_line_stays_the_cause_and_the_report_only_says_how_it_ended(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [_tagged(r, f"step 40 loss {2.0 + r / 10:.2f}") for r in range(4)]
    lines += [_tagged(2, "Traceback (most recent call last):"), _tagged(2, '  File "train.py", line 88, in <module>'),
              _tagged(2, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                         "capacity of 79.15 GiB of which 1.02 GiB is free.")]
    lines += _report("2886,1", 2, 1)
    log = tmp_path / "mpirun.out"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["rank"], rc["signature"]) == (2, "cuda.oom"), rc["explanation"]


def test_a_spawned_jobs_process_is_not_a_rank_of_the_job_launched(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Local job 2 is a job MPI_Comm_spawn started: its vpid 0 is not MPI_COMM_WORLD rank 0 of the application."""
    log = tmp_path / "mpiexec.out"
    log.write_text("\n".join([*_collective_losses(range(1, 4), 3), *_report("56340,2", 0, 139, "mpiexec")]) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc.get("rank") != 0, rc["explanation"]


def test_the_report_alone_names_its_rank_and_says_the_cause_is_unknown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No line of any catalogued failure, only training output and the report (nccl-tests' table, then mpirun)."""
    lines = [_tagged(r, f"node0{r}:4474{r}:4474{r} [0] NCCL INFO Launch mode Parallel") for r in range(4)]
    lines += _report("11192,1", 2, 3)
    log = tmp_path / "mpirun.out"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["rank"] == 2, rc["explanation"]
    assert rc["signature"] is None and rc["confidence"] < 0.5  # how it ended, not why: listed as a suspect

