"""When only exit codes speak, the verdict says the cause is unknown and what the codes show
(correlator/unexplained.py).

torchrun's failure table, as pytorch/pytorch torch/distributed/elastic/multiprocessing/errors/__init__.py prints
it (_MSG_FORMAT_TEMPLATE, _FAILURE_FORMAT_TEMPLATE): without an error file (`error_file: <N/A>`) the traceback row
is `To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html` for an exit code and
`Signal 6 (SIGABRT) received by PID n` for a signal (ProcessFailure.__post_init__). The agent's line is
torch/distributed/elastic/multiprocessing/api.py's `failed (exitcode: N) local_rank: L (pid: P) of binary: ...`;
srun's is src/srun/step_launch.c's `srun: error: HOST: task N: Exited with exit code N`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

_AGENT = ("E0302 10:59:45.301000 140538811684672 torch/distributed/elastic/multiprocessing/api.py:869] failed "
          "(exitcode: {code}) local_rank: 1 (pid: 51234) of binary: /usr/bin/python3")
_TRACEBACK = """\
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 263, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
"""


def _table(code: int, traceback: str) -> str:
    table = F.failure_table("pretrain.py", "2026-03-02_10:59:45", "gpu-node-2", 5, 1, code, 51234, traceback)
    return _TRACEBACK + "\n".join(table) + "\nsrun: error: gpu-node-2: task 1: Exited with exit code 1\n"
_NO_FILE = F.NO_TRACEBACK


def _diagnose(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, object]:
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def _log(tmp_path: Path, code: int, traceback: str, before: str = "") -> Path:
    path = tmp_path / "slurm-88231.out"
    path.write_text(before + _AGENT.format(code=code) + "\n" + _table(code, traceback))
    return path


def test_a_table_without_a_traceback_says_the_cause_is_unknown(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    d = _diagnose(capsys, _log(tmp_path, 1, _NO_FILE))
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert d["verdict"] == "suspects"  # not sure: the rank is a suspect, not an initiator
    assert rc["signature"] == "torchrun.no_error_file"
    why = " ".join(rc["explanation"])
    assert "the cause is not in these logs" in why
    assert "exit code 1 on rank 5" in why and "uncaught Python exception" in why
    suspects = d["suspects"]
    assert isinstance(suspects, list) and 5 in [s["rank"] for s in suspects]
    assert "@torch.distributed.elastic.multiprocessing.errors.record" in str(d["fix"])


def test_a_sigabrt_row_says_what_the_signal_means(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _diagnose(capsys, _log(tmp_path, -6, "Signal 6 (SIGABRT) received by PID 51234"))
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    why = " ".join(rc["explanation"])
    assert "the cause is not in these logs" in why
    assert "exit code -6 on rank 5 means SIGABRT" in why
    assert d["verdict"] == "suspects"


def test_a_cause_in_the_logs_is_reported_as_the_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    oom = ("[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
           "capacity of 79.15 GiB of which 1.02 GiB is free.\n")
    rc = _diagnose(capsys, _log(tmp_path, 1, _NO_FILE, before=oom))["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] != "torchrun.no_error_file"
    assert rc["rank"] == 5
    assert "the cause is not in these logs" not in " ".join(rc["explanation"])


def test_a_sigkill_keeps_its_own_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SIGKILL has an entry of its own (the OOM killer or the scheduler): that is what it reports."""
    rc = _diagnose(capsys, _log(tmp_path, -9, "Signal 9 (SIGKILL) received by PID 51234"))["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] == "torchrun.worker_sigkilled"


# c10's watchdog exception as the process prints it on its way down: c10/util/Exception.cpp's what() lists the
# C++ frames (`frame #N: symbol + offset (address in library)`), and ProcessGroupNCCL.cpp's watchdog thread
# (ncclCommWatchdog -> watchdogHandler -> WorkNCCL::checkAndSetException -> checkForNCCLErrorsInternal) is where
# an asynchronous NCCL error on the communicator is found.
_WATCHDOG_FRAMES = "".join(
    f"frame #{n}: {symbol} + 0x{off:x} (0x7fc0e54{n}f7f0 in /opt/venv/lib/python3.11/site-packages/torch/lib/"
    f"{lib})\n"
    for n, (symbol, off, lib) in enumerate([
        ("c10::Error::Error(c10::SourceLocation, std::string)", 0x96, "libc10.so"),
        ("c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::NCCLComm>&)", 0x220,
         "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException()", 0x7c, "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::watchdogHandler()", 0x213, "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", 0x10c, "libtorch_cuda.so"),
        ("<unknown function>", 0xdbbf4, "../../../.././libstdc++.so.6"),
    ]))


def test_a_watchdog_abort_with_only_exit_reports_is_a_consequence_whose_cause_is_elsewhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The watchdog's frames, then (with no header between, as an excerpt or an interleaved console shows them)
    the launcher's traceback: two messages, so the ChildFailedError line does not swallow the frames. The abort is
    what these logs show; what the watchdog found went wrong elsewhere: the class is the abort, the rank its
    exit code names a suspect, and the note says the cause is not here."""
    d = _diagnose(capsys, _log(tmp_path, -6, "Signal 6 (SIGABRT) received by PID 51234", before=_WATCHDOG_FRAMES))
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] == "pytorch.c10d.watchdog_abort"
    assert d["verdict"] == "suspects"
    why = " ".join(rc["explanation"])
    assert "consequences of a failure elsewhere" in why and "exit code -6 on rank 5 means SIGABRT" in why
    suspects = d["suspects"]
    assert isinstance(suspects, list) and 5 in [s["rank"] for s in suspects]


def test_the_launchers_teardown_of_another_worker_is_not_what_happened(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The agent, tearing the group down (torch/distributed/elastic/multiprocessing/api.py, _close: "Sending
    process P closing signal SIGTERM" to each survivor, then "Unable to shutdown process P via SIGTERM, forcefully
    exiting via SIGKILL" for one that would not stop), and the worker that failed first reported with its -6:
    the SIGKILL of a survivor is the launcher's cleanup, after the failure. What these logs show happened is the
    abort; the note still says the cause is elsewhere, and the rank is a suspect."""
    teardown = "".join(
        f"W0901 05:20:14.018000 5475 torch/distributed/elastic/multiprocessing/api.py:900] Sending process {pid} "
        "closing signal SIGTERM\n" for pid in (51233, 51235, 51236))
    teardown += ("W0901 05:20:44.019000 5475 torch/distributed/elastic/multiprocessing/api.py:919] Unable to shutdown "
                 "process 51235 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL\n")
    d = _diagnose(capsys, _log(tmp_path, -6, "Signal 6 (SIGABRT) received by PID 51234", before=teardown))
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] == "torchrun.worker_sigabrt"
    assert d["verdict"] == "suspects"
    assert "the cause is not in these logs" in " ".join(rc["explanation"])
