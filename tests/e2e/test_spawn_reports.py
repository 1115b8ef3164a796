"""torch.multiprocessing.spawn reports the first worker to fail by its process index (torch/multiprocessing/
spawn.py: ProcessRaisedException "-- Process %d terminated with the following error:" before the worker's own
traceback; ProcessExitedException "process %d terminated with signal %s" / "with exit code %d"). The index is the
local rank the script gives the worker (detectron2/engine/launch.py: global = machine_rank * gpus + index): on a
one-node job it is the rank, on several nodes it names no global rank by itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

SPAWN_TRACE = [
    "Traceback (most recent call last):",
    '  File "tools/train_net.py", line 161, in <module>',
    "    args=(args,),",
    '  File "/usr/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 118, in join',
    "    raise ProcessRaisedException(msg, error_index, failed_process.pid)",
    "torch.multiprocessing.spawn.ProcessRaisedException: ",
    "",
    "-- Process {index} terminated with the following error:",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 69, in _wrap',
    "    fn(i, *args)",
    '  File "/usr/lib/python3.10/site-packages/PIL/ImageFile.py", line 249, in load',
    '    "image file is truncated "',
    "OSError: image file is truncated (12 bytes not processed)",
]


def test_the_spawned_process_that_raised_is_the_rank_on_one_node(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(["[12/03 10:00:01 d2.utils.events]:  iter: 4199  total_loss: 0.61", *SPAWN_TRACE])
                   .replace("{index}", "3") + "\n")
    assert cli_root_cause(log, capsys)["rank"] == 3


def test_on_several_nodes_the_process_index_is_not_a_global_rank(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    for node in ("gpu-a01", "gpu-a02"):
        lines = [f"{node}:4242:4300 [0] NCCL INFO comm 0x5 rank {0 if node == 'gpu-a01' else 8} nranks 16 "
                 "cudaDev 0 nvmlDev 0 busId 1b000 commId 0x1 - Init COMPLETE"]
        if node == "gpu-a02":
            lines += [line.replace("{index}", "3") for line in SPAWN_TRACE]
        (tmp_path / f"{node}.log").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["rank"], rc["host"]) == (None, "gpu-a02")  # the node whose process failed, no guessed rank


JOIN_TRACE = [
    "Traceback (most recent call last):",
    '  File "train.py", line 97, in <module>',
    "    mp.spawn(worker, nprocs=4, args=(cfg,))",
    '  File "/opt/conda/lib/python3.9/site-packages/torch/multiprocessing/spawn.py", line 149, in join',
    "    raise ProcessExitedException(",
]


@pytest.mark.parametrize(("line", "signature"), [
    ("torch.multiprocessing.spawn.ProcessExitedException: process 2 terminated with signal SIGKILL",
     "pytorch.mp.spawn_process_sigkilled"),
    # torch before ProcessExitedException raised a plain Exception with the same text
    ("Exception: process 2 terminated with signal SIGKILL", "pytorch.mp.spawn_process_sigkilled"),
    ("torch.multiprocessing.spawn.ProcessExitedException: process 2 terminated with signal SIGSEGV",
     "pytorch.mp.spawn_process_segfault"),
])
def test_a_spawned_process_killed_by_a_signal_is_the_rank_on_one_node(line: str, signature: str, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(["epoch 0 iter 120 loss 2.31", *JOIN_TRACE, line]) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["rank"], rc["signature"]) == (2, signature)


def test_the_error_under_spawns_head_says_what_failed_and_whom_it_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Process 0 raised, and what it raised is c10d's monitored barrier naming rank 2 (distributed_c10d.py
    monitored_barrier on rank 0: "Rank 2 failed to pass monitoredBarrier in 1800000 ms"): rank 2 is the one that
    never arrived, and spawn's head only says who reported it."""
    trace = [*SPAWN_TRACE[:-3], '  File "/workspace/train.py", line 120, in main',
             "    dist.monitored_barrier(timeout=timedelta(minutes=30))",
             "RuntimeError: Rank 2 failed to pass monitoredBarrier in 1800000 ms"]
    log = tmp_path / "train.log"
    log.write_text("\n".join(["[12/03 10:00:01 d2.utils.events]:  iter: 4199  total_loss: 0.61", *trace])
                   .replace("{index}", "0") + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["signature"], rc["rank"]) == ("pytorch.c10d.monitored_barrier", 2)
