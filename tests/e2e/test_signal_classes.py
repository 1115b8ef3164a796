"""A launcher's report of how a rank ended names the crash's class when it names the signal.

- Open MPI's mpirun: "mpirun noticed that process rank R with PID P on node H exited on signal N (<strsignal>)."
  (orte/tools/orterun/help-orterun.txt, proc-aborted-strsignal); with nothing else in the logs the signal is the
  class (SIGSEGV: a native crash), not "a rank was killed by a signal".
- torchrun's failure table with no error file ("error_file: <N/A>", "traceback : Signal 6 (SIGABRT) received by
  PID", torch/distributed/elastic/multiprocessing/errors): the cause is not in the logs (the note says so) but the
  signal says how the worker ended, and that is the class.
"""

from __future__ import annotations

from correlator.diagnose import diagnose
from scan.engine import default_matcher, scan_source
from schemas.diagnosis import Diagnosis


def _diagnose(text: str, name: str = "job.log") -> Diagnosis:
    m = default_matcher()
    return diagnose([scan_source(m, name, [text.encode()], 2026, 0)], m.catalog)


def _mpirun(signal: str) -> str:
    return ("step 120 loss 2.31\n" * 3 + "-" * 74 + "\n"
            f"mpirun noticed that process rank 3 with PID 41022 on node gpu-node-2 exited on signal {signal}.\n"
            + "-" * 74 + "\n")


def test_mpiruns_segfault_report_is_a_segfault() -> None:
    rc = _diagnose(_mpirun("11 (Segmentation fault)")).root_cause
    assert rc is not None and "SIGSEGV" in rc.title and rc.rank == 3


def test_mpiruns_abort_report_is_an_abort() -> None:
    rc = _diagnose(_mpirun("6 (Aborted)")).root_cause
    assert rc is not None and "SIGABRT" in rc.title and rc.rank == 3


def test_mpiruns_illegal_instruction_report_is_a_sigill_on_that_node() -> None:
    # signal(7): SIGILL is 4, strsignal "Illegal instruction"; a CPU without the instruction the build uses
    rc = _diagnose(_mpirun("4 (Illegal instruction)")).root_cause
    assert rc is not None and rc.signature == "torchrun.worker_sigill"
    assert (rc.rank, rc.host) == (3, "gpu-node-2")


def test_torchruns_sigill_row_is_a_sigill() -> None:
    rc = _diagnose(_table(-4, "SIGILL")).root_cause
    assert rc is not None and rc.signature == "torchrun.worker_sigill" and rc.rank == 5


def test_mpiruns_report_of_a_signal_without_an_entry_stays_mpiruns() -> None:
    rc = _diagnose(_mpirun("8 (Floating point exception)")).root_cause
    assert rc is not None and rc.signature == "mpi.process_signaled"


def _table(code: int, signal: str) -> str:
    return ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
            "============================================================\n"
            "train.py FAILED\n"
            "------------------------------------------------------------\n"
            "Failures:\n  <NO_OTHER_FAILURES>\n"
            "------------------------------------------------------------\n"
            "Root Cause (first observed failure):\n[0]:\n"
            "  time      : 2026-11-24_17:05:40\n  host      : gpu-node-4\n  rank      : 5 (local_rank: 1)\n"
            f"  exitcode  : {code} (pid: 2195196)\n  error_file: <N/A>\n"
            f"  traceback : Signal {-code} ({signal}) received by PID 2195196\n"
            "============================================================\n")


def test_a_table_without_an_error_file_takes_its_signals_class_and_says_the_cause_is_unknown() -> None:
    rc = _diagnose(_table(-6, "SIGABRT")).root_cause
    assert rc is not None and rc.signature == "torchrun.worker_sigabrt" and rc.rank == 5
    assert any("the cause is not in these logs" in line for line in rc.explanation)
    assert rc.confidence < 0.7
