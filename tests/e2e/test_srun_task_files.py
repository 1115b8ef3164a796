"""srun's per-task output files name their task, the rank (correlator/task_files.py). srun(1), "IO Redirection":
the --output filename pattern's %t is the "task identifier (rank) relative to current job" and creates a separate
IO file per task (SchedMD/slurm src/common/fname.c; %x the job name, %j the job id, %N the node's short name; a
number after the percent zero-pads). Fixtures are written from those formats, srun's own error lines ("srun:
error: HOST: task N: Exited with exit code C"), and c10's CUDA out-of-memory message
(c10/cuda/CUDACachingAllocator.cpp, "CUDA out of memory. Tried to allocate ...")."""

from __future__ import annotations

from pathlib import Path

import pytest

from correlator.srun_output import task_of_file
from tests.e2e.scoring import cli_root_cause

_OOM = ["Traceback (most recent call last):", '  File "/workspace/train.py", line 179, in train_step',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.13 GiB. GPU 1 has a total capacity of "
        "79.10 GiB of which 0.65 GiB is free. Including non-PyTorch memory, this process has 77.21 GiB memory in "
        "use."]


def _job(root: Path, launch: str, victim: int = 5) -> Path:
    (root / "job.sbatch").write_text("#!/bin/bash\n#SBATCH --job-name=t5-xl\n#SBATCH --nodes=2\n"
                                     f"#SBATCH --ntasks-per-node=4\n{launch}\n")
    (root / "logs").mkdir()
    for task in range(8):
        lines = [f"step {50 * i} | loss 7.1 | lr 7.5e-06" for i in range(1, 4)]
        if task == victim:
            lines += _OOM
        (root / "logs" / f"t5-xl-6058953-{task}.out").write_text("\n".join(lines) + "\n")
    host = "r6n42" if victim >= 4 else "r6n41"
    (root / "slurm-6058953.out").write_text(
        f"srun: error: {host}: task {victim}: Exited with exit code 1\n"
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
        "srun: error: r6n41: tasks 0-3: Terminated\n")
    return root


def test_a_tasks_own_file_names_its_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _job(tmp_path, "srun --kill-on-bad-exit=1 --output=logs/%x-%j-%t.out python train.py --config cfg.yaml")
    rc = cli_root_cause(root, capsys)
    assert (rc["signature"], rc["rank"]) == ("cuda.oom", 5), rc["explanation"]


def test_a_file_per_node_launcher_names_no_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """srun starting torchrun: each task is a node's agent, its file's number the node's, not a rank."""
    root = _job(tmp_path, "srun --output=logs/%x-%j-%t.out torchrun --nnodes=2 --nproc-per-node=4 train.py")
    rc = cli_root_cause(root, capsys)
    assert rc["rank"] != 5, rc["explanation"]


def test_the_pattern_reads_padding_and_other_fields() -> None:
    sources = ["out/task-0003.log", "out/task-0012.log", "out/train-0003.log", "logs/a-12-node7.out"]
    assert task_of_file(["out/task-%4t.log"], sources) == {"out/task-0003.log": 3, "out/task-0012.log": 12}
    assert task_of_file(["/scratch/logs/%x-%j-%N.out"], sources) == {}  # no %t: a node's file
    assert task_of_file(["logs/%x-%j-node%t.out"], sources) == {"logs/a-12-node7.out": 7}
