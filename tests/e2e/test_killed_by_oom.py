"""A rank its launcher reports SIGKILLed and the one host whose kernel OOM-killed a process no line places: one
death seen from two sides (correlator/killed_by_oom.py). Fixtures written from the formats upstream prints:

- horovodrun's own launcher (horovod/runner/gloo_run.py, launch_gloo): "Horovod detected that one or more
  processes exited with non-zero status, thus causing the job to be terminated. The first process to do so
  was:\\nProcess name: {name}\\nExit code: {code}", the name the process's index in the allocation plan (its rank);
- the kernel's OOM killer (linux mm/oom_kill.c): "Out of memory: Killed process %d (%s) total-vm:..." in dmesg,
  then SIGKILL, which the launcher reports as -9.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

REPORT = """Process 1 exit with status code {code}.
Terminating remaining workers after failure of Process 1.
Traceback (most recent call last):
  File "/usr/local/bin/horovodrun", line 8, in <module>
    sys.exit(run_commandline())
  File "/usr/local/lib/python3.10/dist-packages/horovod/runner/gloo_run.py", line 287, in launch_gloo
    raise RuntimeError('Horovod detected that one or more processes exited with non-zero '
RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the job to be \
terminated. The first process to do so was:
Process name: 1
Exit code: {code}
"""
OOM = ("[501231.583361] Out of memory: Killed process 957729 (python) total-vm:845000000kB, anon-rss:805000000kB, "
       "file-rss:81920kB, shmem-rss:0kB, UID:1000 pgtables:1610000kB oom_score_adj:0\n")


def _job(root: Path, code: int = -9, hosts: tuple[str, ...] = ("gpu-h14",)) -> Path:
    (root / "dmesg").mkdir(parents=True)
    (root / "horovodrun.log").write_text(REPORT.format(code=code))
    for host in hosts:
        (root / "dmesg" / f"{host}.log").write_text(OOM)
    return root


def test_the_sigkilled_rank_is_on_the_host_whose_kernel_killed(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_root_cause(_job(tmp_path / "job"), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("host.oom_killer", 1, "gpu-h14")
    assert float(str(rc["confidence"])) < 0.9  # placed by elimination: a log not collected could move it


@pytest.mark.parametrize(("code", "hosts"), [(1, ("gpu-h14",)), (-9, ("gpu-h14", "gpu-h15"))],
                         ids=["not-killed", "two-hosts-killed"])
def test_no_pairing_without_one_kill_on_each_side(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  code: int, hosts: tuple[str, ...]) -> None:
    """Exit code 1 is not the kernel's kill; two hosts that killed a process leave rank 1's host unknown."""
    rc = cli_root_cause(_job(tmp_path / "job", code, hosts), capsys)
    assert not (rc["rank"] == 1 and rc["host"] in hosts)


def _init(host: str, rank: int, nranks: int = 16) -> str:
    """NCCL's init line (src/init.cc: "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx ... - Init
    COMPLETE"), as a node's first process prints it under NCCL_DEBUG=INFO."""
    return (f"{host}:4242:4242 [0] NCCL INFO comm 0x55d0c0000000 rank {rank} nranks {nranks} cudaDev 0 nvmlDev 0 "
            f"busId 1b000 commId 0x6b3f0c9e1d2a4f10 - Init COMPLETE\n")


def test_a_node_with_a_known_rank_may_run_the_killed_one(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Two nodes of eight ranks, each known by the one rank that printed NCCL's init line: rank 13, SIGKILLed,
    is placed on the node whose kernel killed, though rank 8 is known there too."""
    root = _job(tmp_path / "job")
    report = REPORT.format(code=-9).replace("Process 1", "Process 13").replace("Process name: 1", "Process name: 13")
    (root / "horovodrun.log").write_text(_init("gpu-h13", 0) + _init("gpu-h14", 8) + report)
    rc = cli_root_cause(root, capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("host.oom_killer", 13, "gpu-h14")
