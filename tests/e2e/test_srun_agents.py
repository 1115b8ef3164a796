"""`srun --label` over a per-node launcher: the label numbers the node's agent, not a rank.

srun(1) "-l, --label: prepend task number to lines of stdout/err". With `--ntasks-per-node=1` and torchrun or
`accelerate launch` as the task, task N is node N's agent, which spawns that node's workers; a worker's own line
("1: RuntimeError: CUDA error: ...") carries its node's label, and the agent's failure table
(torch/distributed/elastic/multiprocessing/errors: "rank : 13 (local_rank: 5)", "host : node-b") names the rank.
"""

from __future__ import annotations

from correlator.diagnose import diagnose
from scan.engine import default_matcher, scan_source
from schemas.diagnosis import Diagnosis


def _table(task: int, host: str, rank: int, local: int, code: int, pid: int) -> str:
    rows = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
            "============================================================", "train.py FAILED",
            "------------------------------------------------------------", "Failures:", "  <NO_OTHER_FAILURES>",
            "------------------------------------------------------------", "Root Cause (first observed failure):",
            "[0]:", "  time      : 2026-12-01_10:08:51", f"  host      : {host}",
            f"  rank      : {rank} (local_rank: {local})", f"  exitcode  : {code} (pid: {pid})",
            "  error_file: <N/A>", "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
            "============================================================"]
    return "".join(f"{task}: {row}\n" for row in rows)


def _diagnose(text: str) -> Diagnosis:
    m = default_matcher()
    return diagnose([scan_source(m, "slurm-2772471.out", [text.encode()], 2026, 0)], m.catalog)


def test_a_workers_line_under_its_nodes_label_is_placed_by_the_agents_table() -> None:
    text = ("0: {'loss': 2.0070, 'epoch': 2.08}\n1: {'loss': 2.0010, 'epoch': 2.08}\n"
            "1: Traceback (most recent call last):\n"
            '1:   File "/home/ml/train.py", line 231, in train_step\n'
            "1: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
            + _table(1, "node-b", 13, 5, 1, 2507097)
            + "0: [rank2]:[E1201 10:18:51.089608 9580 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective "
              "operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
              "ran for 600031 milliseconds before timing out.\n"
            + _table(0, "node-a", 2, 2, -6, 2507001))
    rc = _diagnose(text).root_cause
    assert rc is not None and rc.signature == "cuda.ecc_uncorrectable"
    assert (rc.rank, rc.host) == (13, "node-b")


def test_without_an_agent_srun_labels_are_ranks() -> None:
    text = ("0: {'loss': 2.0070}\n3: {'loss': 2.0010}\n"
            "3: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
            "srun: error: node-b: task 3: Exited with exit code 1\n")
    rc = _diagnose(text).root_cause
    assert rc is not None and rc.rank == 3
