"""torchrun's agent names its workers' pids as it tears a node down, in local-rank order; a kernel line naming one
of those pids names its rank (correlator/teardown_pids.py). Fixtures written from pytorch/pytorch
torch/distributed/elastic/multiprocessing/api.py: SubprocessContext._start builds ``subprocess_handlers`` ``for
local_rank in range(self.nprocs)``; _poll calls close(), whose _close logs "Sending process %s closing signal %s"
for each handler still running in that order, then logs "failed (exitcode: %s) local_rank: %s (pid: %s) of binary:
%s" for the first failure; DefaultLogsSpecs.reify files each worker's output under
<log dir>/<run id>_<random>/attempt_<restart>/<local rank>/. The Xid's `pid=` is the GPU's process
(open-gpu-kernel-modules src/nvidia/src/kernel/gpu/rc/kernel_rc.c), Xid 119's text the GSP RPC timeout's.
A restart makes new process groups whose SeqNums count from 0 again (collectives.attempt_of).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

AGENT = "[{lvl}1207 13:44:23.{us} 53369 site-packages/torch/distributed/elastic/multiprocessing/api.py:{ln}] "
TIMEOUT = ("[rank{rank}]:[E1207 13:44:23.838641896 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
           "collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=_ALLGATHER_BASE, NumelIn=33554432, "
           "NumelOut=33554432, Timeout(ms)=600000) ran for 600086 milliseconds before timing out.\n")
XID = ("Dec 07 13:19:51 gpu-b02 kernel: NVRM: Xid (PCI:0000:5d:00): 119, pid={pid}, name=python, Timeout after 6s "
       "of waiting for RPC response from GPU3 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).\n")
TABLE = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-07_13:44:23
  host      : {host}.internal
  rank      : {rank} (local_rank: {local})
  exitcode  : -6 (pid: {pid})
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID {pid}
============================================================
"""


def _console(host: str, base: int, failed: int, pids: list[int], sigterms: list[int]) -> str:
    lines = [AGENT.format(lvl="W", us="908000", ln=897) + f"Sending process {pid} closing signal SIGTERM\n"
             for pid in sigterms]
    lines.append(AGENT.format(lvl="E", us="906000", ln=869) +
                 f"failed (exitcode: -6) local_rank: {failed} (pid: {pids[failed]}) of binary: /usr/bin/python3\n")
    return "".join(lines) + TABLE.format(host=host, rank=base + failed, local=failed, pid=pids[failed])


def _job(root: Path, sigterm_all: bool = True, seqs: tuple[int, int] = (116, 116)) -> Path:
    """Two nodes of four workers; on gpu-b02 (ranks 4-7) local rank 1 aborted first and local rank 3's GPU
    logged Xid 119. Every rank timed out in one collective (the GPU hung inside it)."""
    for node, host in enumerate(("gpu-b01", "gpu-b02")):
        base = 4 * node
        pids = [4100 + 10 * node + k for k in range(4)]
        failed = 1 if node == 1 else 0
        sigterms = [pid for k, pid in enumerate(pids) if k != failed and (sigterm_all or k != 3)]
        (root / "console").mkdir(parents=True, exist_ok=True)
        (root / "console" / f"{host}.log").write_text(_console(host, base, failed, pids, sigterms))
        for local in range(4):
            for attempt, seq in enumerate(seqs):
                folder = root / "logs" / host / f"none_j80lzxeu/attempt_{attempt}/{local}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "stderr.log").write_text(TIMEOUT.format(rank=base + local, seq=seq))
    (root / "journal").mkdir()
    (root / "journal" / "gpu-b02.log").write_text(XID.format(pid=4113))
    return root


def test_the_xid_pid_is_the_rank_the_agent_sigtermed_at_that_local_rank(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_root_cause(_job(tmp_path / "job"), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("xid.119", 7, "gpu-b02")


def test_no_rank_when_a_sigterm_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two pids for four workers: another worker had exited too, and which local rank each pid is is unknown."""
    rc = cli_root_cause(_job(tmp_path / "job", sigterm_all=False), capsys)
    assert rc["rank"] != 7 or float(str(rc["confidence"])) < 0.7


def test_a_restart_seqnum_is_not_compared_with_the_attempt_before(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """attempt_0 timed out in #4307, attempt_1 in #116: no rank 'never joined #4307'."""
    rc = cli_root_cause(_job(tmp_path / "job", seqs=(4307, 116)), capsys)
    assert (rc["signature"], rc["rank"]) == ("xid.119", 7)
    assert not any("never joined" in line for line in rc["explanation"])


def _console_only_job(root: Path, sigterm_all: bool = True) -> Path:
    """The same two nodes with nothing but each agent's console, filed by node index (node0.log, node1.log), and
    the kernel's journal by the short host name: the failure table alone ties a local rank to a global one on
    each node (rank 0 local 0, rank 5 local 1) and names the node by its FQDN (the agent's socket.getfqdn())."""
    (root / "console").mkdir(parents=True)
    for node, host in enumerate(("gpu-b01", "gpu-b02")):
        pids = [4100 + 10 * node + k for k in range(4)]
        failed = 1 if node == 1 else 0
        sigterms = [pid for k, pid in enumerate(pids) if k != failed and (sigterm_all or k != 3)]
        text = _console(host, 4 * node, failed, pids, sigterms)
        (root / "console" / f"node{node}.log").write_text(TIMEOUT.format(rank=4 * node + failed, seq=116) + text)
    (root / "journal").mkdir()
    (root / "journal" / "gpu-b02.log").write_text(XID.format(pid=4112))
    return root


def test_the_node_s_first_rank_numbers_its_sigtermed_workers(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Local rank 2 of the node whose first rank is 4 (rank 5 is its local rank 1) is rank 6."""
    rc = cli_root_cause(_console_only_job(tmp_path / "job"), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("xid.119", 6, "gpu-b02")


def test_no_rank_by_the_first_rank_when_a_sigterm_is_missing(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Two pids: three workers a node would not divide the second node's first rank (4), so nothing is placed."""
    rc = cli_root_cause(_console_only_job(tmp_path / "job", sigterm_all=False), capsys)
    assert rc["rank"] != 6


SPAWN_TERM = "W0823 21:17:15.940344 140000002725038 torch/multiprocessing/spawn.py:160] Terminating process {pid} via \
signal SIGTERM\n"
SPAWN_RAISE = """Traceback (most recent call last):
  File "/workspace/train.py", line 301, in <module>
    mp.spawn(main, args=(world_size,), nprocs=world_size, join=True)
  File "/usr/local/lib/python3.10/dist-packages/torch/multiprocessing/spawn.py", line 284, in start_processes
    while not context.join():
  File "/usr/local/lib/python3.10/dist-packages/torch/multiprocessing/spawn.py", line 203, in join
    raise ProcessExitedException(
torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGABRT
"""


def _spawn_job(root: Path, other_rank: int = 6) -> Path:
    """torch.multiprocessing.spawn (spawn.py, ProcessContext.join): process 1 aborted; the seven still alive are
    SIGTERMed in process-index order (0, 2, 3, ..., 7); Xid 119 names the pid of index 3."""
    pids = [5100 + 7 * k for k in range(8)]
    # no rank prefix (no TORCH_DISTRIBUTED_DEBUG): each line names its rank in ProcessGroupNCCL's own "[Rank N]"
    text = "".join("[E823 21:17:15.224250286 ProcessGroupNCCL.cpp:616] " + TIMEOUT.split("] ", 1)[1]
                   .format(rank=r, seq=78212) for r in (other_rank, 1))
    text += "".join(SPAWN_TERM.format(pid=pid) for k, pid in enumerate(pids) if k != 1) + SPAWN_RAISE
    root.mkdir(parents=True)
    (root / "train.log").write_text(text)
    (root / "dmesg").mkdir()
    (root / "dmesg" / "gpu-b02.log").write_text(XID.format(pid=pids[3]))
    return root


def test_mp_spawn_s_sigtermed_pids_are_its_process_indexes(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_root_cause(_spawn_job(tmp_path / "job"), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("xid.119", 3, "gpu-b02")


def test_mp_spawn_s_indexes_are_no_ranks_where_the_job_is_larger(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A rank 12 timed out too: the eight processes are one node's of a larger job, index 3 is not rank 3."""
    rc = cli_root_cause(_spawn_job(tmp_path / "job", other_rank=12), capsys)
    assert rc["rank"] != 3
