"""A cause printed without a prefix in the console of a launcher that names one process the first to fail is that
process's own line.

- Open MPI's mpirun without --tag-output prints every rank's output unlabelled, and after the job its report of
  the first process to exit non-zero (orte/tools/orterun/help-orterun.txt, "orterun:non-zero-exit"): "The first
  process to do so was:", "Process name: [[jobid,1],vpid]", "Exit code: 1"; vpid is the MPI_COMM_WORLD rank.
- torchrun's failure table heads its earliest failed worker "Root Cause (first observed failure)"
  (torch/distributed/elastic/multiprocessing/errors).
"""

from __future__ import annotations

from correlator.diagnose import diagnose
from scan.engine import default_matcher, scan_source
from schemas.diagnosis import Diagnosis

_OOM = ("Traceback (most recent call last):\n"
        '  File "/workspace/megatron-lm/pretrain_gpt.py", line 231, in train_step\n'
        "    loss = model(batch)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 2 has a total capacity of "
        "79.19 GiB of which 0.39 GiB is free.\n")


def _diagnose(text: str) -> Diagnosis:
    m = default_matcher()
    return diagnose([scan_source(m, "mpirun.out", [text.encode()], 2026, 0)], m.catalog)


def _mpirun_report(rank: int) -> str:
    return ("-" * 74 + "\nPrimary job  terminated normally, but 1 process returned\n"
            "a non-zero exit code. Per user-direction, the job has been aborted.\n" + "-" * 74 + "\n"
            "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
            "the job to be terminated. The first process to do so was:\n\n"
            f"  Process name: [[2649926,1],{rank}]\n  Exit code:    1\n" + "-" * 74 + "\n")


def test_mpiruns_first_process_printed_the_unlabelled_cause() -> None:
    init = "".join(f"node{r // 8}:{4100 + r}:{4200 + r} [{r % 8}] NCCL INFO comm 0x9c1e rank {r} nranks 24 cudaDev "
                   f"{r % 8} busId 5e000 commId 0x5b1c - Init COMPLETE\n" for r in (2, 9, 18))
    rc = _diagnose(init + "iteration 801 | lm loss: 1.80\n" + _OOM + _mpirun_report(18)).root_cause
    assert rc is not None and rc.signature == "cuda.oom"
    assert (rc.rank, rc.host) == (18, "node2")


def test_without_the_report_the_unlabelled_cause_names_no_rank_of_mpiruns() -> None:
    rc = _diagnose("iteration 801 | lm loss: 1.80\n" + _OOM).root_cause
    assert rc is not None and rc.signature == "cuda.oom" and rc.rank != 18


def test_torchruns_first_observed_failure_printed_the_unprefixed_cause() -> None:
    table = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n" + "=" * 60 + "\n"
             "Root Cause (first observed failure):\n[0]:\n  time      : 2026-12-01_10:08:51\n"
             "  host      : node-c\n  rank      : 21 (local_rank: 5)\n  exitcode  : 1 (pid: 2507097)\n"
             "  error_file: <N/A>\n"
             "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
             + "=" * 60 + "\n")
    rc = _diagnose(_OOM + table).root_cause
    assert rc is not None and rc.signature == "cuda.oom"
    assert (rc.rank, rc.host) == (21, "node-c")
