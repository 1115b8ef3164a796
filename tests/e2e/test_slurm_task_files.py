"""srun's per-task output files: the index after the job id is the rank where each file is one process's.

Fixtures written from the formats upstream prints:

- srun --output's filename pattern (SchedMD/slurm doc/man/man1/srun.1, "filename pattern"): %x the job's name,
  %j the job id, %t the task id relative to the step (SLURM_PROCID), %n the node id relative to the job;
- c10's watchdog timeout under its "[rankN]:" prefix (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp);
- c10's CUDA OOM message (c10/cuda/CUDACachingAllocator.cpp), in a Python traceback;
- torchrun's tee prefix "[default{local_rank}]:" (torch/distributed/elastic/multiprocessing/tail_log.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

_OOM = ["Traceback (most recent call last):", '  File "/workspace/train.py", line 171, in train_step',
        "    loss.backward()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
        "79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 78.11 GiB memory in use."]


def _diagnose(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(root), "--format", "json"]) == 0
    rc: dict[str, object] = json.loads(capsys.readouterr().out)["root_cause"]
    return rc


def test_a_task_files_index_is_the_rank_of_its_one_process(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """srun --output=logs/%x-%j-%t.out, one process a task: task 5's file holds the OOM and no rank prefix, the
    others' watchdog timeouts print their own ranks, each its file's index. Task 5 is rank 5."""
    files = {f"logs/gpt-5512345-{t}.out": (_OOM if t == 5 else [F.watchdog_timeout(t, F.T0, 4821)])
             for t in range(8)}
    rc = _diagnose(F.write(tmp_path, files), capsys)
    assert (rc["signature"], rc["rank"]) == ("cuda.oom", 5)


def test_a_nodes_file_is_not_read_as_one_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """srun --output=logs/%x-%j-%n.out with torchrun on each node: a file holds a node's workers under
    "[defaultN]:" prefixes, so its index (node 1) is no rank: the OOM is local rank 3's, not rank 1's."""
    files = {f"logs/gpt-5512345-{n}.out": [f"[default{local}]:" + line for local in range(4)
                                           for line in ([F.watchdog_timeout(4 * n + local, F.T0, 4821)]
                                                        if (n, local) != (1, 3) else _OOM)]
             for n in range(2)}
    rc = _diagnose(F.write(tmp_path, files), capsys)
    assert rc["signature"] == "cuda.oom" and rc["rank"] != 1
