"""deploy/slurm/epilog.sh and `firstfault collect slurm`, run as Slurm would run them, with fake scontrol, sacct
and logger on PATH printing what the real ones print (formats: collect/slurm.py), against a local ingest server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.ingest_api import FakeIngest

ROOT = Path(__file__).resolve().parents[2]
EPILOG = ROOT / "deploy" / "slurm" / "epilog.sh"
FIRSTFAULT = Path(sys.executable).parent / "firstfault"
SRUN_ERR = ("srun: error: gpu002: task 9: Killed\n"
            "srun: Terminating StepId=4242.0\n"
            "slurmstepd: error: *** STEP 4242.0 ON gpu001 CANCELLED AT 2026-12-03T10:14:05 ***\n")


def show_job(out: Path, err: Path) -> str:
    """`scontrol show job 4242` while the job completes (slurm_sprint_job_info's lines, abridged)."""
    return f"""JobId=4242 JobName=pretrain
   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A
   JobState=COMPLETING Reason=NonZeroExitCode Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0
   Partition=gpu AllocNode:Sid=login1:41233
   SubmitTime=2026-12-03T09:59:40 EligibleTime=2026-12-03T09:59:40
   StartTime=2026-12-03T10:00:00 EndTime=2026-12-03T10:14:06 Deadline=N/A
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=gpu[001-002]
   BatchHost=gpu001
   NumNodes=2 NumCPUs=128 NumTasks=16 CPUs/Task=8 ReqB:S:C:T=0:0:*:*
   Command=/home/alice/train.sbatch
   WorkDir=/home/alice
   StdErr={err}
   StdIn=/dev/null
   StdOut={out}
   Power=
"""


SACCT = """JobID|State|ExitCode|NodeList
4242|FAILED|1:0|gpu[001-002]
4242.batch|FAILED|1:0|gpu001
4242.extern|COMPLETED|0:0|gpu[001-002]
4242.0|FAILED|0:9|gpu[001-002]
4242.1|FAILED|137:0|gpu002
"""


# the kernel log as `journalctl -k -o short-iso` prints it on gpu002, and as `dmesg --time-format iso` does
KERNEL = ("2026-12-03T10:14:01+0000 gpu002 kernel: NVRM: Xid (PCI:0000:07:00): 79, pid=4711, name=python, "
          "GPU has fallen off the bus.\n")
RING = ("2026-12-03T08:02:11,000000+00:00 e1000e: eth0 NIC Link is Up\n"
        "2026-12-03T10:14:01,123456+00:00 NVRM: Xid (PCI:0000:07:00): 79, pid=4711, name=python, GPU has fallen "
        "off the bus.\n")
UNREADABLE = "echo 'Failed to read: Operation not permitted' >&2; exit 1"


def _bin(tmp_path: Path, scontrol: str, sacct: str, journalctl: str = UNREADABLE, dmesg: str = UNREADABLE) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in {"scontrol": scontrol, "sacct": sacct, "journalctl": journalctl, "dmesg": dmesg,
                       "logger": f'cat >> {tmp_path / "syslog"}'}.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _job_files(tmp_path: Path) -> tuple[Path, Path]:
    out, err = tmp_path / "pretrain-4242.out", tmp_path / "pretrain-4242.err"
    out.write_text("step 1200 loss 1.93\nstep 1210 loss 1.92\n")
    err.write_text(SRUN_ERR)
    return out, err


def _epilog(tmp_path: Path, bin_dir: Path, url: str, context: str, **env: str) -> tuple[int, float]:
    environ = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "4242", "SLURM_SCRIPT_CONTEXT": context,
               "FIRSTFAULT": str(FIRSTFAULT), "FIRSTFAULT_URL": url, "FIRSTFAULT_LOG_ROOT": str(tmp_path / "none"),
               "HOME": str(tmp_path), **env}
    start = time.monotonic()
    done = subprocess.run(["bash", str(EPILOG)], env=environ, capture_output=True, timeout=60, check=False)
    return done.returncode, time.monotonic() - start


def test_the_controller_epilog_ships_the_output_files_and_the_end_state(tmp_path: Path, ingest: FakeIngest) -> None:
    out, err = _job_files(tmp_path)
    (tmp_path / "show").write_text(show_job(out, err))
    (tmp_path / "sacct").write_text(SACCT)
    bin_dir = _bin(tmp_path, f'[ "$*" = "show job 4242" ] && cat {tmp_path / "show"}',
                   f'[ "$*" = "-j 4242 -o JobID,State,ExitCode,NodeList -P" ] && cat {tmp_path / "sacct"}')
    code, _ = _epilog(tmp_path, bin_dir, ingest.base, "epilog_slurmctld", SLURM_JOB_EXIT_CODE="256",
                      SLURM_CLUSTER_NAME="c1", SLURM_JOB_PARTITION="gpu")
    assert code == 0
    got = ingest.sources()
    assert got == {"pretrain-4242.out": (None, "gpu001", "stdout", out.read_bytes()),
                   "pretrain-4242.err": (None, "gpu001", "stderr", SRUN_ERR.encode())}
    [event] = ingest.jobs
    assert (event.state, event.scheduler, event.cluster, event.labels) == ("failed", "slurm", "c1",
                                                                           {"partition": "gpu"})
    assert event.hosts == ["gpu001", "gpu002"]
    # the batch script exited 1 on gpu001; gpu002's one-node step was killed (137): steps spanning both name none
    assert event.exit_codes == {"gpu001": 1, "gpu002": 137}


def _compute_node(tmp_path: Path, **fakes: str) -> Path:
    out, err = _job_files(tmp_path)
    (tmp_path / "show").write_text(show_job(out, err))
    bin_dir = _bin(tmp_path, f'cat {tmp_path / "show"}', "echo 'JobID|State|ExitCode|NodeList'", **fakes)
    fake_hostname = bin_dir / "hostname"
    fake_hostname.write_text("#!/bin/sh\necho gpu002\n")
    fake_hostname.chmod(0o755)
    return bin_dir


def test_a_compute_node_that_is_not_the_batch_host_ships_only_its_kernel_log(tmp_path: Path,
                                                                              ingest: FakeIngest) -> None:
    """The Xid that ended the job is in gpu002's kernel log, which no rank prints: each node's epilog ships it,
    read from the journal since the job's StartTime (less a margin for clocks)."""
    journal = f'[ "$*" = "-k -q -o short-iso --no-pager --since 2026-12-03 09:58:00" ] && printf "{KERNEL}"'
    assert _epilog(tmp_path, _compute_node(tmp_path, journalctl=journal), ingest.base, "epilog")[0] == 0
    assert ingest.sources() == {"kernel.log": (None, "gpu002", "dmesg", KERNEL.encode())}
    assert ingest.jobs == []  # the controller's epilog sends the end state


def test_without_the_journal_the_ring_buffer_is_read_from_the_jobs_start(tmp_path: Path,
                                                                         ingest: FakeIngest) -> None:
    bin_dir = _compute_node(tmp_path, dmesg=f'[ "$*" = "--time-format iso" ] && printf "{RING}"')
    assert _epilog(tmp_path, bin_dir, ingest.base, "epilog")[0] == 0
    [(name, (_, host, stream, data))] = ingest.sources().items()
    assert (name, host, stream) == ("kernel.log", "gpu002", "dmesg")
    assert data.decode() == RING.splitlines(keepends=True)[1]  # the link-up line at 08:02 is another job's


def test_an_unreadable_kernel_log_ships_nothing_and_says_why(tmp_path: Path, ingest: FakeIngest) -> None:
    assert _epilog(tmp_path, _compute_node(tmp_path), ingest.base, "epilog")[0] == 0
    assert ingest.shards == [] and ingest.jobs == []
    assert "kernel log not read" in (tmp_path / "syslog").read_text()


@pytest.mark.parametrize("trouble", ["down", "hung scontrol", "no sacct"])
def test_the_epilog_exits_0_in_bounded_time_and_logs_why(tmp_path: Path, ingest: FakeIngest, trouble: str) -> None:
    out, err = _job_files(tmp_path)
    (tmp_path / "show").write_text(show_job(out, err))
    (tmp_path / "sacct").write_text(SACCT)
    scontrol = "exec sleep 30" if trouble == "hung scontrol" else f'cat {tmp_path / "show"}'
    sacct = "exit 1" if trouble == "no sacct" else f'cat {tmp_path / "sacct"}'
    ingest.down = trouble == "down"
    code, took = _epilog(tmp_path, _bin(tmp_path, scontrol, sacct), ingest.base, "epilog_slurmctld",
                         SLURM_JOB_EXIT_CODE="9", FIRSTFAULT_EPILOG_TIMEOUT="8")
    assert code == 0 and took < 12
    syslog = (tmp_path / "syslog").read_text()
    if trouble == "down":
        assert "HTTP 503" in syslog and ingest.jobs == []
    elif trouble == "hung scontrol":  # sacct still answers: the end state is sent, the output paths are unknown
        assert "scontrol show job 4242: no answer" in syslog
        assert [j.state for j in ingest.jobs] == ["failed"] and ingest.shards == []
    else:  # no sacct: the wait status says SIGKILL (9), on the batch host scontrol names
        assert "sacct" in syslog and "exit 1" in syslog
        [event] = ingest.jobs
        assert (event.state, event.exit_codes) == ("failed", {"gpu001": -9})


@pytest.mark.parametrize(("expr", "hosts"), [
    ("gpu[001-003,010],login1", ["gpu001", "gpu002", "gpu003", "gpu010", "login1"]),
    ("rack[1-2]-gpu[07-08]", ["rack1-gpu07", "rack1-gpu08", "rack2-gpu07", "rack2-gpu08"]),
    ("node7", ["node7"]),
    ("", []),
])
def test_slurm_hostlists_expand_as_scontrol_show_hostnames_does(expr: str, hosts: list[str]) -> None:
    from collect.slurm import expand_hostlist

    assert expand_hostlist(expr) == hosts


@pytest.mark.parametrize("service", ["accepts and never answers", "nothing listening"])
def test_the_epilog_exits_0_in_bounded_time_against_a_hanging_or_stopped_service(tmp_path: Path,
                                                                                  service: str) -> None:
    """A stopped firstfault (connection refused) and a hung one (the TCP handshake completes, no byte ever comes
    back) each end the epilog within FIRSTFAULT_EPILOG_TIMEOUT plus timeout(1)'s grace, exit 0, reason logged."""
    import socket

    out, err = _job_files(tmp_path)
    (tmp_path / "show").write_text(show_job(out, err))
    (tmp_path / "sacct").write_text(SACCT)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    if service == "accepts and never answers":
        listener.listen(64)  # the kernel completes every handshake; nobody ever reads or writes
    else:
        listener.close()  # the port is free: connections are refused
    try:
        code, took = _epilog(tmp_path, _bin(tmp_path, f'cat {tmp_path / "show"}', f'cat {tmp_path / "sacct"}'),
                             f"http://127.0.0.1:{port}", "epilog_slurmctld", SLURM_JOB_EXIT_CODE="9",
                             FIRSTFAULT_EPILOG_TIMEOUT="12")  # firstfault's own: 5 s less (7 s)
    finally:
        listener.close()
    assert code == 0 and took < 12 + 2  # the bound and timeout -k's 2 s
    syslog = (tmp_path / "syslog").read_text()
    assert "collect slurm failed" in syslog, "the epilog says nothing about what it could not deliver"
    if service == "accepts and never answers":
        assert "timed out" in syslog
