"""Jobs launched by Open MPI's mpirun (Horovod's horovodrun, nccl-tests): `--tag-output` puts `[jobid,rank]<stream>:`
before every line (mpirun(1): "Tag each line of output to stdout, stderr, and stddiag with [jobid, MCW_rank]
<stdxxx>"), and mpirun reports the first rank to die on a signal ("mpirun noticed that process rank %d with PID
%d on node %s exited on signal %d (%s)."). TensorFlow's allocator says OOM in its own words
(ResourceExhaustedError: "OOM when allocating tensor with shape[...] and type T on <device> by allocator A").
With --timestamp-output the tag follows the time (asctime: "Fri Aug 11 12:31:45 2023[1,0]<stdout>:")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause


def _tagged(rank: int, lines: list[str], stream: str = "stderr") -> list[str]:
    return [f"[1,{rank}]<{stream}>:{line}" for line in lines]


def test_a_horovod_rank_out_of_gpu_memory_is_named_by_its_mpi_tag(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    for rank in range(4):
        lines += _tagged(rank, [f"step 120 loss {2.1 + rank / 10:.2f}"], "stdout")
    lines += _tagged(2, [
        "2019-06-17 17:13:42.247944: W tensorflow/core/framework/op_kernel.cc:1273] OP_REQUIRES failed at "
        "strided_slice_op.cc:139 : Resource exhausted: OOM when allocating tensor with shape[2,1023,50257] and type "
        "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
        "Traceback (most recent call last):",
        '  File "train.py", line 88, in <module>',
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
        "shape[2,1023,50257] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"])
    log = tmp_path / "horovod.log"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["signature"], rc["rank"]) == ("cuda.oom", 2), rc["explanation"]


def test_mpiruns_signal_report_names_the_rank_and_node_whose_traceback_is_untagged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --tag-output nothing but mpirun's report says whose the crash was."""
    log = tmp_path / "mpirun.out"
    log.write_text("\n".join([
        "step 300 loss 1.93", "[gpu07:4242] *** Process received signal ***",
        "[gpu07:4242] Signal: Segmentation fault (11)", "[gpu07:4242] *** End of error message ***",
        "-" * 74, "mpirun noticed that process rank 5 with PID 4242 on node gpu07 exited on signal 11 "
        "(Segmentation fault).", "-" * 74]) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["rank"], rc["host"]) == (5, "gpu07"), rc["explanation"]


def test_every_rank_failing_alike_on_one_host_names_the_host(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Both ranks the log shows, on tomte401, fail NCCL's connection set-up with the same CUDA error (NVIDIA/nccl
    src/transport.cc via CUDACHECK: "Cuda failure '%s'"): no rank is the cause, but the host they share is where
    to look (its driver, its container), not "the whole job"."""
    lines = []
    for rank, pid in ((0, 1850301), (1, 1850304)):
        lines += [f"Fri Aug 11 12:31:45 2023[1,{rank}]<stdout>:tomte401:{pid}:{pid + 31040} [{rank}] transport.cc:154 "
                  "NCCL WARN Cuda failure 'invalid argument'",
                  f"Fri Aug 11 12:31:45 2023[1,{rank}]<stdout>:tomte401:{pid}:{pid + 31057} [{rank}] proxy.cc:1519 "
                  f"NCCL WARN [Proxy Service {rank}] Failed to execute operation Connect from rank {rank}, retcode 3"]
    log = tmp_path / "nccl-tests.out"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["rank"], rc["host"]) == (None, "tomte401"), rc["explanation"]


def test_a_node_fault_two_ranks_report_on_no_named_node_lists_suspects(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """NCCL's /dev/shm segment that cannot be created (src/misc/shmutils.cc: "Error while creating shared memory
    segment %s (size %zu)") is the node's: two ranks print it, so the answer is a node, not a rank. Nothing here
    (no hostname, no NCCL header, no hostfile) says which node ranks 6 and 7 ran on, so the answer can name
    nobody, and says it is not sure rather than answering as if the whole job shared the fault."""
    lines: list[str] = []
    for rank in (7, 6):
        lines += _tagged(rank, [
            "Traceback (most recent call last):",
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
            "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
            "Last error:",
            f"Error while creating shared memory segment /dev/shm/nccl-p0pfgf{rank} (size 9637888)"])
    for rank in (5, 8):
        lines += _tagged(rank, [
            f"[E1102 23:00:29.668529749 ProcessGroupNCCL.cpp:1521] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
            "Process group watchdog thread terminated with exception: NCCL error: remote process exited or there "
            "was a network error, NCCL version 2.20.5",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."])
    log = tmp_path / "mpirun.out"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] == "nccl.shm.dev_shm_full"
    assert (rc["rank"], rc["host"]) == (None, None)
    assert rc["confidence"] < 0.5, rc["explanation"]
    # With the job's hostfile beside it (Open MPI's "host slots=N"; by slot, the default scheduling policy, fills
    # each host's slots in the file's order: docs.open-mpi.org launching-apps/scheduling.rst), ranks 6 and 7 are
    # the fourth host's two slots: the node is named.
    (tmp_path / "hosts.txt").write_text("".join(f"trn-e-{38 + n} slots=2\n" for n in range(5)))
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("nccl.shm.dev_shm_full", None, "trn-e-41"), rc["explanation"]


def test_mpiruns_map_by_node_deals_the_ranks_across_the_hostfiles_hosts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`mpirun --hostfile hostfile --map-by node` deals ranks one a host in turn (mpirun(1), --map-by node), so of
    four hosts with two slots each, rank 5 is the second host's: its kernel's OOM kill is rank 5's, as mpirun's own
    report says ("mpirun noticed that process rank %d with PID %d on node %s exited on signal %d (%s).")."""
    (tmp_path / "hostfile").write_text("".join(f"gpu-{n} slots=2\n" for n in range(4)))
    lines = ["$ mpirun -np 8 --hostfile hostfile --map-by node --tag-output python train_hvd.py"]
    for rank in range(8):
        lines += _tagged(rank, [f"step 120 loss {2.1 + rank / 10:.2f}"], "stdout")
    lines += ["-" * 74, "mpirun noticed that process rank 5 with PID 45487 on node gpu-1 exited on signal 9 (Killed).",
              "-" * 74]
    (tmp_path / "mpirun.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "dmesg").mkdir()
    (tmp_path / "dmesg" / "gpu-1.txt").write_text(
        "[3766135.399395] Out of memory: Killed process 45487 (python3) total-vm:324009984kB, anon-rss:158334976kB, "
        "file-rss:1632319kB, shmem-rss:3861828kB, UID:1000 pgtables:316669kB oom_score_adj:0\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["rank"], rc["host"]) == (5, "gpu-1"), rc["explanation"]
