"""Formats bench/field5's tuning half showed, each written here from its upstream source, not from a log.

- Open MPI's orterun (orte/tools/orterun/help-orterun.txt, [orterun:proc-aborted-strsignal], shown by
  orte/mca/errmgr with (unsigned long)proc->pid): "%s noticed that process rank %lu with PID %lu on node %s exited
  on signal %d (%s)." The rank is the MPI_COMM_WORLD rank; a pasted report often has the pid masked.
- PyTorch's ProcessGroupWrapper (torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp, verify_tensors): each rank
  allgathers every rank's CollectiveFingerPrint and reports the FIRST rank, in rank order, whose fingerprint differs
  from its own: "Detected mismatch between collectives on ranks. Rank <me> is running collective: <fp>, but Rank
  <other> is running collective: <fp>." One rank out of step is named by all the others; it names the lowest rank.
- Paddle's older launcher (python/paddle/distributed/utils/launch_utils.py, watch_local_trainers): on one poll it
  lists the global ranks of the trainers found exited non-zero, "ABORT!!! Out of all {} trainers, the trainer
  process with rank={} was aborted. Please check its log.", then terminates the rest.
- TensorFlow's collective ops (tensorflow/core/common_runtime/ring_reducer.cc StartAbort, "Aborting RingReduce with
  " << status; base_collective_executor.cc, "BaseCollectiveExecutor::StartAbort " << status): a worker whose ring
  peer went away.
- torchrun's agent (torch/distributed/elastic/multiprocessing/api.py): "failed (exitcode: %d) local_rank: %d (pid:
  %d) of binary: %s", a negative code the signal; -6 is SIGABRT (abort(), a failed C++ check, NCCL's watchdog).
- Ascend CANN: error codes lead their lines ("EI9999: ", the CANN troubleshooting guide's six-character code: level,
  module, four digits); the runtime's HCCL task timeout (device_error_proc.cc,
  ProcessStarsHcclFftsPlusTimeoutErrorInfo); torch_npu's "ACL stream synchronize failed" raised after printing the
  runtime's message (torch_npu/csrc/aten/common/CopyKernel.cpp, C10_NPU_SHOW_ERR_MSG then AT_ERROR); HCCL's
  "[Init][CommRootInfoConfig]errNo[0x%016llx]HcclCommInitRootInfo failed." (HCCL framework/op_base/src/op_base.cc).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

_RULE = "-" * 74


def _fingerprint(seq: int, op: str) -> str:
    # the form operator<< prints for a collective with tensors (SequenceNumber, OpType, shape, dtypes, devices)
    return (f"CollectiveFingerPrint(SequenceNumber={seq}, OpType={op}, TensorShape=[4096], TensorDtypes=Float, "
            "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda))")


def _mismatch(me: int, other: int, mine: str, theirs: str) -> str:
    return (f"[rank{me}]: RuntimeError: Detected mismatch between collectives on ranks. Rank {me} is running "
            f"collective: {mine}, but Rank {other} is running collective: {theirs}.")


def test_a_masked_pid_in_mpiruns_signal_report_still_names_the_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "mpirun.out"
    log.write_text("\n".join([
        _RULE, "Primary job  terminated normally, but 1 process returned",
        "a non-zero exit code. Per user-direction, the job has been aborted.", _RULE,
        "mpirun noticed that process rank 5 with PID xxxxx on node node-b exited on signal 9 (Killed).", _RULE]) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["signature"], rc["rank"]) == ("torchrun.worker_sigkilled", 5), rc["explanation"]  # its signal's class
    assert rc["confidence"] < 0.9  # how it ended, not why


def test_the_rank_every_other_rank_finds_out_of_step_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 2 issues a barrier where ranks 0, 1 and 3 all-reduce: each of them names rank 2 (the first rank whose
    fingerprint differs from theirs), and rank 2 names rank 0."""
    ahead, odd = _fingerprint(311, "ALLREDUCE"), "CollectiveFingerPrint(SequenceNumber=311OpType=BARRIER)"
    lines = [_mismatch(r, 2, ahead, odd) for r in (0, 1, 3)] + [_mismatch(2, 0, odd, ahead)]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["signature"], rc["rank"]) == ("pytorch.c10d.collective_mismatch", 2), rc["explanation"]


def test_naming_the_lowest_rank_says_nothing_about_who_is_out_of_step(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two ranks with different shapes: rank 1 names rank 0, as it would whichever of them went astray."""
    log = tmp_path / "train.log"
    log.write_text(_mismatch(1, 0, _fingerprint(40, "ALLREDUCE"), _fingerprint(40, "ALLREDUCE").replace("4096", "4095"))
                   + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] == "pytorch.c10d.collective_mismatch"
    assert rc["rank"] is None, rc["explanation"]


def test_paddles_abort_line_names_its_one_failed_trainer_and_is_the_class(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "launch.log"
    log.write_text(
        "INFO 2026-12-07 09:12:40,101 launch_utils.py:471] Local start 4 processes. First process distributed "
        "environment info (Only For Debug):\n"
        "ERROR 2026-12-07 09:20:03,512 launch_utils.py:545] ABORT!!! Out of all 4 trainers, the trainer process "
        "with rank=[3] was aborted. Please check its log.\n"
        "INFO 2026-12-07 09:20:06,515 launch_utils.py:307] terminate all the procs\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["signature"], rc["rank"]) == ("paddle.launch.trainers_aborted", 3), rc["explanation"]
    assert "launcher" in rc["tags"]
    assert rc["confidence"] < 0.9


def test_several_trainers_found_dead_on_one_poll_name_no_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "launch.log"
    log.write_text(
        "ERROR 2026-12-07 09:20:03,512 launch_utils.py:545] ABORT!!! Out of all 2 trainers, the trainer process "
        "with rank=[0, 1] was aborted. Please check its log.\n"
        "INFO 2026-12-07 09:20:06,515 launch_utils.py:307] terminate all the procs\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] == "paddle.launch.trainers_aborted"
    assert rc["rank"] is None, rc["explanation"]


def test_a_cause_line_of_the_listed_trainer_stays_the_cause(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "launch.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "tools/train.py", line 96, in <module>\n'
        "MemoryError: std::bad_alloc\n"
        "ERROR 2026-12-07 09:20:03,512 launch_utils.py:545] ABORT!!! Out of all 8 trainers, the trainer process "
        "with rank=[6] was aborted. Please check its log.\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] != "paddle.launch.trainers_aborted", rc


def test_every_worker_aborting_its_ring_is_a_collective_abort_and_no_initiator(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every worker lost its ring peer; none says why: a list of suspects at most, never one named initiator."""
    for worker in range(3):
        (tmp_path / f"worker-{worker}.log").write_text(
            "INFO:tensorflow:global_step/sec: 2.0311\n"
            f"2026-12-07 08:11:0{worker}.128241: E tensorflow/core/common_runtime/ring_reducer.cc:369] Aborting "
            "RingReduce with Unavailable: Socket closed\n"
            f"2026-12-07 08:11:0{worker}.128323: W tensorflow/core/common_runtime/base_collective_executor.cc:203] "
            "BaseCollectiveExecutor::StartAbort Unavailable: Socket closed\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == "tensorflow.collective.aborted"
    assert rc["confidence"] < 0.5, rc


def test_a_cann_error_code_is_no_host_and_the_hccl_timeout_is_what_the_runtime_error_means(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/app/engine/model_agent.py", line 404, in _broadcast_inputs\n'
        "    dist.broadcast_object_list(inputs)\n"
        "RuntimeError: ACL stream synchronize failed.\n"
        "EI9999: Inner Error!\n"
        "EI9999: 2026-12-07-08:42:00.358.410  The error from device(chipId:1, dieId:0), serial number is 4, hccl "
        "fftsplus task timeout occurred during task execution, stream_id:5, sq_id:5, task_id:901, stuck notify num:1, "
        "timeout:30min(default).[FUNC:ProcessStarsHcclFftsPlusTimeoutErrorInfo][FILE:device_error_proc.cc][LINE:1435]\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] == "npu.hccl_task_timeout", rc["explanation"]
    assert rc["host"] != "EI9999"
    assert rc["confidence"] < 0.7  # a rank that waited: the one it waited on is not in this log


def test_hccls_communicator_set_up_failure_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "worker.log"
    log.write_text(
        "[ERROR] HCCL(5120,python):2026-12-07-08:01:12.441.920 [op_base.cc:974][5301][Init][CommRootInfoConfig]"
        "errNo[0x000000000500000b]HcclCommInitRootInfo failed.\n"
        "RuntimeError: create:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:HCCL function error: "
        "HcclCommInitRootInfo(numRanks, &hcclID, rank, &(comm->hcclComm_)), error code is 11\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] == "npu.hccl_comm_init_failed", rc["explanation"]


def _agent(code: int, local: int, pid: int) -> str:
    return (f"E1207 09:02:11.651000 2601 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed "
            f"(exitcode: {code}) local_rank: {local} (pid: {pid}) of binary: /usr/bin/python3")


def test_a_worker_that_aborted_is_named_by_how_it_ended_and_the_cause_is_unknown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "torchrun.log"
    log.write_text("W1207 09:02:11.065000 2601 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] "
                   "Sending process 2604 closing signal SIGTERM\n" + _agent(-6, 1, 2605) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["signature"], rc["rank"]) == ("torchrun.worker_sigabrt", 1), rc["explanation"]
    assert rc["confidence"] < 0.5


def test_what_the_aborted_worker_printed_stays_the_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "torchrun.log"
    log.write_text("[rank1]: terminate called after throwing an instance of 'c10::Error'\n"
                   "[rank1]:   what():  CUDA error: an illegal memory access was encountered\n" + _agent(-6, 1, 2605)
                   + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] != "torchrun.worker_sigabrt", rc
