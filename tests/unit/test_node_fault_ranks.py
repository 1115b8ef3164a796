"""A node's kernel line about one of its processes or GPUs, and the one rank the job's collectives single out: one
failure (correlator/host_fault_ranks.py). Fixtures from the formats upstream prints:

- linux kernel/hung_task.c, check_hung_task: "INFO: task %s:%d blocked for more than %ld seconds.";
- NVIDIA's kernel module (kernel_rc.c): "NVRM: Xid (PCI:%s): %d, pid=%s, name=%s, ..." with the host's pid;
- PyTorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: the watchdog's "Watchdog caught collective operation
  timeout: WorkNCCL(SeqNum=%d, ...)" and, on the other ranks, the dump signal's "Received a dump signal due to a
  collective timeout from rank %d and we will try our best to dump the debug info. Last enqueued NCCL work: %d,
  last completed NCCL work: %d." (a rank that enqueued fewer never joined the collective the others wait in).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

HUNG = ("[Mon Dec  7 10:08:30 2026] INFO: task pt_main_thread:3270616 blocked for more than 245 seconds.\n"
        "[Mon Dec  7 10:08:30 2026] \"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message.\n")
XID = ("[Mon Dec  7 10:08:30 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
       "off the bus.\n")


def _root(root: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> tuple[object, ...]:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert main(["diagnose", str(root), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    return rc["signature"], rc["rank"], rc["host"]


def _rank_line(r: int, lagging: int) -> str:
    if r == 0:  # the rank whose watchdog fired first
        return (f"[rank{r}]:[E1207 10:10:03.000000000 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank "
                f"{r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=10, OpType=ALLREDUCE, "
                "NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600100 milliseconds before timing out.\n")
    enqueued = 9 if r == lagging else 10
    return (f"[rank{r}]:[E1207 10:10:04.000000000 ProcessGroupNCCL.cpp:1541] [PG ID 0 PG GUID 0(default_pg) Rank "
            f"{r}] Received a dump signal due to a collective timeout from  rank 0 and we will try our best to dump "
            f"the debug info. Last enqueued NCCL work: {enqueued}, last completed NCCL work: 9.\n")


def _job(kernel: str, lagging: int = 6) -> dict[str, str]:
    """Eight ranks printing into one log with no host on their lines; the kernel log of one of the two nodes."""
    return {"train.log": "".join(_rank_line(r, lagging) for r in range(8)), "dmesg/gpu-n2.log": kernel}


def test_a_hung_task_is_the_rank_that_never_joined(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _root(tmp_path, _job(HUNG), capsys) == ("host.hung_task", 6, "gpu-n2")


def test_an_xid_of_an_unnamed_process_is_the_rank_that_never_joined(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert _root(tmp_path, _job(XID, lagging=3), capsys) == ("xid.79", 3, "gpu-n2")


def test_a_lagging_rank_known_on_another_node_is_not_paired(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 6's own lines say it runs on gpu-n1: gpu-n2's hung task is some other process's."""
    files = _job(HUNG)
    files["train.log"] = files["train.log"].replace("[rank6]:", "gpu-n1: [rank6]:")
    assert _root(tmp_path, files, capsys)[:2] != ("host.hung_task", 6)


def test_two_lagging_ranks_leave_the_node_line_unranked(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    files = _job(HUNG)
    files["train.log"] = files["train.log"].replace("Rank 2] Received a dump signal due to a collective timeout "
                                                    "from  rank 0 and we will try our best to dump the debug info. "
                                                    "Last enqueued NCCL work: 10",
                                                    "Rank 2] Received a dump signal due to a collective timeout "
                                                    "from  rank 0 and we will try our best to dump the debug info. "
                                                    "Last enqueued NCCL work: 9")
    assert _root(tmp_path, files, capsys)[:2] != ("host.hung_task", 6)


def test_an_xid_a_rank_saw_stays_with_that_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 5 printed the CUDA error of a GPU that fell off the bus (cudaErrorLaunchFailure): gpu_faults.py ties the
    node's one Xid to it; the lagging rank 3 is collateral of it, not the Xid's place."""
    files = _job(XID, lagging=3)
    files["train.log"] += ("[rank5]:[E1207 10:00:01.000000000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID "
                           "0(default_pg) Rank 5] Process group watchdog thread terminated with exception: CUDA "
                           "error: unspecified launch failure\n")
    assert _root(tmp_path, files, capsys)[:2] == ("xid.79", 5)


def test_a_rank_only_absent_from_the_timeouts_is_not_singled_out(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Seven of eight ranks (NCCL's init lines on gpu-n1 say the job has eight) time out in #10 and rank 7, placed
    nowhere, prints nothing: its silence is an inference (it may have died, been killed, or its log lost), not
    its sequence numbers; the other node's hung task stays that node's."""
    init = "".join(f"gpu-n1:{900 + r}:{900 + r} [{r}] NCCL INFO comm 0x55d0c0000000 rank {r} nranks 8 cudaDev {r} "
                   f"nvmlDev {r} busId {0x1b + r:x}000 commId 0x6b3f0c9e1d2a4f10 - Init COMPLETE\n" for r in range(7))
    timeouts = "".join(_rank_line(0, 9).replace("[rank0]", f"[rank{r}]").replace("Rank 0]", f"Rank {r}]")
                       for r in range(7))
    rc = _root(tmp_path, {"train.log": init + timeouts, "dmesg/gpu-n2.log": HUNG}, capsys)
    assert rc[:2] != ("host.hung_task", 7)
