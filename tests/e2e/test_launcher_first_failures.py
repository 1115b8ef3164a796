"""Launchers other than torchrun and srun name the first process to fail, and batch systems end jobs at their time
limit. Fixtures written here in the formats upstream prints:

- PRRTE's prterun / Open MPI 5's mpirun (openpmix/prrte src/runtime/prte_quit.c print_aborted_job; help-prun.txt
  [prun:proc-aborted-strsignal], whose text breaks after "exited on": "%s noticed that process rank %lu with PID %lu
  on node %s exited on" / "signal %d (%s)."), [prun:non-zero-exit] with PRTE_NAME_PRINT's "[<nspace>,<vpid>]", the
  nspace "prterun-<host>-<pid>@1" (src/util/name_fns.c); --tag-output's "[1,R]<stderr>:".
- Flux (flux-framework/flux-core src/shell/doom.c: "[<arg0>: ][task ]rank %d on host %s exited[ (<disposition>)]
  and exit-timeout=%s has expired", logged by the job shell, printed by `flux job attach` (src/cmd/job/attach.c) as
  "%.3fs: flux-shell[0]: FATAL: doom: ..." and as the fatal exception "%.3fs: job.exception [<id> ]type=exec
  severity=0 ..."; job-exec's time limit, src/modules/job-exec/job-exec.c timelimit_cb: "type=timeout ...
  resource allocation expired"); --label-io's "R: " task-rank prefix.
- PBS (openpbs src/resmom/mom_main.c: "walltime %lu exceeded limit %lu" sent as "=>> PBS: job killed: %s"); LSF's
  termination reason TERM_RUNLIMIT (IBM Spectrum LSF documentation, "Termination reasons").
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F
from tests.e2e.scoring import cli_root_cause

RULE = "-" * 74
JOB = F.Job(hosts=("gpu-st-p5-17", "gpu-st-p5-18"), per_host=4)


def _tag(rank: int, line: str) -> str:
    return f"[1,{rank}]<stderr>:{line}"


def _prterun_signal(rank: int, host: str, signo: int, name: str) -> list[str]:
    return [RULE, f"prterun noticed that process rank {rank} with PID {JOB.pid(rank)} on node {host} exited on",
            f"signal {signo} ({name}).", RULE]


def _survivors_lose(dead: int) -> list[str]:
    """The others' NCCL transports break when the dead rank's process goes: consequences, naming no cause."""
    t = F.T0 + timedelta(seconds=20)
    return [_tag(r, line) for r in range(JOB.world) if r != dead for line in F.remote_error(JOB, r, t)]


def test_prteruns_wrapped_report_names_the_killed_rank_and_its_signal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 6 is SIGKILLed (the OOM killer; no kernel log collected) and prints nothing: prterun's report, wrapped
    as its help text is, is all that says which rank ended first and how."""
    lines = [_tag(r, s) for r in range(JOB.world) for s in F.steps(r, F.T0)]
    lines += _survivors_lose(6) + _prterun_signal(6, "gpu-st-p5-18", 9, "Killed")
    rc = cli_root_cause(F.write(tmp_path, {"mpirun.log": lines}), capsys)
    assert (rc["rank"], rc["host"]) == (6, "gpu-st-p5-18"), rc["explanation"]
    assert rc["signature"] == "torchrun.worker_sigkilled"  # how it ended: the signal's class
    assert rc["confidence"] < 0.9  # how it ended, not why


def test_the_first_rank_to_end_after_waiting_for_a_stalled_one_is_not_the_initiator(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 5 stops issuing collectives; the others' watchdogs time out on SeqNum 311 and abort (SIGABRT). prterun
    reports the first of them to end, rank 0: a rank that waited, never the initiator."""
    t = F.T0 + timedelta(minutes=10)
    lines = [_tag(r, s) for r in range(JOB.world) for s in F.steps(r, F.T0)]
    lines += [_tag(r, F.watchdog_timeout(r, t, 311)) for r in range(JOB.world) if r != 5]
    lines += _prterun_signal(0, "gpu-st-p5-17", 6, "Aborted")
    rc = cli_root_cause(F.write(tmp_path, {"mpirun.log": lines}), capsys)
    assert rc["rank"] != 0, rc["explanation"]


def test_prteruns_process_name_reports_the_first_non_zero_exit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [_tag(r, s) for r in range(JOB.world) for s in F.steps(r, F.T0)] + _survivors_lose(3)
    lines += [RULE, "prterun detected that one or more processes exited with non-zero status,",
              "thus causing the job to be terminated. The first process to do so was:", "",
              "   Process name: [prterun-gpu-st-p5-17-22655@1,3]", "   Exit code:    1", RULE]
    rc = cli_root_cause(F.write(tmp_path, {"mpirun.log": lines}), capsys)
    assert rc["rank"] == 3, rc["explanation"]


def _flux_tasks(world: int) -> list[str]:
    return [f"{r}: {s}" for r in range(world) for s in F.steps(r, F.T0)]


@pytest.mark.parametrize("report", [
    # 2024-06 .. 2024-11 (doom.c: "%srank %d on host %s exited and exit-timeout=%s has expired")
    "1810.442s: flux-shell[0]: FATAL: doom: rank 6 on host tioga12 exited and exit-timeout=30s has expired",
    # 2025-04 on, with the disposition since 2026-03 (task-exit: arg0, "task rank", " (Killed)")
    "1810.442s: flux-shell[0]: FATAL: task-exit: python3: task rank 6 on host tioga12 exited (Killed) and "
    "exit-timeout=30s has expired",
])
def test_fluxs_first_task_exit_report_names_its_rank_and_host(
        report: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    note = report.split("FATAL: ")[1].split(": ", 1)[1]
    lines = _flux_tasks(8) + [f"{r}: {s}" for r in range(8) if r != 6
                              for s in F.remote_error(JOB, r, F.T0 + timedelta(seconds=5))]
    lines += [report, f"1810.791s: job.exception f2Bnb6Pa7 type=exec severity=0 {note}",
              "flux-job: task(s) exited with exit code 1"]
    rc = cli_root_cause(F.write(tmp_path, {"flux-f2Bnb6Pa7.out": lines}), capsys)
    assert (rc["rank"], rc["host"]) == (6, "tioga12"), rc["explanation"]
    assert rc["confidence"] < 0.9


def test_a_lost_job_shells_rank_is_a_node_index_not_a_task_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """"shell rank 1" is the job shell's (one a node): not task 1."""
    lines = [*_flux_tasks(8),
             "911.020s: flux-shell[0]: FATAL: doom: shell rank 1 on host tioga13 exited and exit-timeout=30s has "
             "expired"]
    rc = cli_root_cause(F.write(tmp_path, {"flux-f2Bnb6Pa7.out": lines}), capsys)
    assert rc.get("rank") != 1, rc


def test_a_cause_on_the_rank_flux_names_stays_the_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [*_flux_tasks(8),
             "2: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of "
             "79.15 GiB of which 1.02 GiB is free.",
             "1810.442s: flux-shell[0]: FATAL: doom: rank 2 on host tioga12 exited and exit-timeout=30s has expired"]
    rc = cli_root_cause(F.write(tmp_path, {"flux-f2Bnb6Pa7.out": lines}), capsys)
    assert (rc["signature"], rc["rank"]) == ("cuda.oom", 2), rc["explanation"]


def _store_retry(rank: int) -> str:
    """c10d's client at start-up, before the store's host listened (socket.cpp, SocketConnectOp::tryConnect)."""
    return (F.glog(rank, "W", F.T0 - timedelta(hours=3), "socket.cpp:752") + "[c10d] The client socket has failed "
            "to connect to [gpu-b01]:29500 (errno: 111 - Connection refused).")


@pytest.mark.parametrize(("line", "signature"), [
    ("7230.275s: job.exception type=timeout severity=0 resource allocation expired", "flux.job_timeout"),
    ("=>> PBS: job killed: walltime 10819 exceeded limit 10800", "pbs.walltime_exceeded"),
    ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.", "lsf.run_limit"),
])
def test_a_job_ended_at_its_time_limit_names_no_rank(
        line: str, signature: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The job ran (every rank's steps) until the batch system ended it; one rank's start-up store retry, three
    hours before, points at the store's host and says nothing of the end."""
    lines = [_store_retry(3), *_flux_tasks(8), line]
    rc = cli_root_cause(F.write(tmp_path, {"job.out": lines}), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == (signature, None, None), rc["explanation"]
    assert "time_limit" in rc["tags"] and "walltime" in rc["tags"]


def test_a_rank_that_stalled_before_the_limit_stays_the_answer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 5 stopped issuing collectives an hour before the walltime: the others' watchdogs report it (status lines
    with their enqueued/completed counts), and the limit only ended the hang."""
    t = F.T0 + timedelta(minutes=10)
    lines = _flux_tasks(8)
    lines += [f"{r}: " + F.watchdog_status(r, t, 4811, 4811 if r != 5 else 4810, 4810) for r in range(8)]
    lines += ["=>> PBS: job killed: walltime 10819 exceeded limit 10800"]
    rc = cli_root_cause(F.write(tmp_path, {"job.out": lines}), capsys)
    assert rc["rank"] == 5, rc["explanation"]


@pytest.mark.parametrize(("report", "signature"), [
    # flux-core src/modules/job-exec/bgexec.c: jobinfo_lost_shell's note, raised as a node-failure exception
    (["812.004s: job.exception f9Hv3Qk2Lm type=node-failure severity=0 node failure on gpu-st-p5-18 (shell rank 1)"],
     "flux.node_failure"),
    # openpmix/prrte src/mca/errmgr/base/help-errmgr-base.txt
    ([RULE, "PRTE has lost communication with a remote daemon.", "",
      "  HNP daemon   : [prterun-gpu-st-p5-17-41822@0,0] on node gpu-st-p5-17",
      "  Remote daemon: [prterun-gpu-st-p5-17-41822@0,1] on node gpu-st-p5-18", "",
      "This is usually due to either a failure of the TCP network", RULE], "prrte.lost_daemon"),
])
def test_a_launchers_lost_node_is_named(
        report: list[str], signature: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The node's processes vanish with it; the other node's ranks lose their transports toward it."""
    lines = [_tag(r, s) for r in range(JOB.world) for s in F.steps(r, F.T0)]
    lines += [_tag(r, F.ib_retry_exceeded(JOB, r, "gpu-st-p5-18")) for r in range(4)] + report
    rc = cli_root_cause(F.write(tmp_path, {"job.out": lines}), capsys)
    assert (rc["signature"], rc["host"]) == (signature, "gpu-st-p5-18"), rc["explanation"]
    assert rc["rank"] is None


# pdsh's ssh module (chaos/pdsh src/modules/sshcmd.c sshcmd_destroy): "%p: %s: ssh exited with exit code %d", %p the
# "pdsh@<launching host>" prefix and %s the target; nothing for a session that ends 0. DeepSpeed's pdsh runner and
# its autotuner print each node's lines behind pdsh's "<host>: " prefix.
def _pdsh(node_codes: dict[str, int]) -> list[str]:
    lines = [f"{node}: Warning: Permanently added '{node},10.0.0.{i}' (ECDSA) to the list of known hosts."
             for i, node in enumerate(node_codes)]
    return lines + [f"pdsh@launch-0: {node}: ssh exited with exit code {code}" for node, code in node_codes.items()]


def test_pdsh_naming_one_node_whose_command_failed_names_that_node_and_says_the_cause_is_unknown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_root_cause(F.write(tmp_path, {"autotune.log": _pdsh({"trainer-worker-1": 1})}), capsys)
    assert rc["host"] == "trainer-worker-1" and rc["rank"] is None
    assert rc["signature"] is None and "only an exit code" in rc["title"]
    assert rc["confidence"] < 0.5  # who ended, not why: a suspect


def test_pdsh_naming_two_nodes_names_neither(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pdsh reports sessions as they end, but two nodes with an error each say nothing about which failed first."""
    path = F.write(tmp_path, {"autotune.log": _pdsh({"trainer-worker-1": 1, "trainer-worker-2": 1})})
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert rc is None or rc["host"] is None


def test_pdsh_s_own_ssh_failure_stays_a_lost_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_root_cause(F.write(tmp_path, {"autotune.log": _pdsh({"trainer-worker-1": 255})}), capsys)
    assert (rc["signature"], rc["host"]) == ("pdsh.node_unreachable", "trainer-worker-1")
