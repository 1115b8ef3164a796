"""vLLM's multiprocessing executor: a worker process's CUDA OOM names its rank through the device it runs on.
Fixtures written from the formats upstream prints:

- vllm/executor/multiproc_gpu_executor.py (_init_executor): rank 0 runs in the engine's own process; each rank
  r in 1..world_size-1 is a worker process created with rank=r, local_rank=r, on one node;
- vllm/executor/multiproc_worker_utils.py (_add_prefix): each worker's lines start "(VllmWorkerProcess pid=N) ",
  and an exception in one is logged as "ERROR MM-DD HH:MM:SS multiproc_worker_utils.py:NNN] ..." line by line;
- vllm/worker/worker.py (init_device): the worker's device is cuda:{local_rank};
- c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate X. GPU %d has a total capacity of ..."
  names the process's own device.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

_STAMP = "ERROR 10-14 12:32:47 multiproc_worker_utils.py:233]"


def _oom(pid: int, device: int) -> list[str]:
    head = f"(VllmWorkerProcess pid={pid}) {_STAMP}"
    return [f"{head} Exception in worker VllmWorkerProcess while processing method determine_num_available_blocks.",
            f"{head} Traceback (most recent call last):",
            f'{head}   File "/usr/lib/python3.11/site-packages/vllm/worker/worker.py", line 223, in '
            "determine_num_available_blocks",
            f"{head}     self.model_runner.profile_run()",
            f"{head} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.88 GiB. GPU {device} has a total "
            "capacity of 21.96 GiB of which 1.29 GiB is free. Including non-PyTorch memory, this process has 20.66 "
            "GiB memory in use."]


@pytest.mark.parametrize("device", [2, 3])
def test_a_vllm_worker_process_oom_is_the_rank_of_its_device(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             device: int) -> None:
    """The OOM of the worker process on GPU d is rank d's, not rank 0's (the engine's own process, whose lines
    carry no prefix): the log names no rank otherwise."""
    lines = ["INFO 10-14 12:31:02 config.py:899] Defaulting to use mp for distributed inference",
             *(f"(VllmWorkerProcess pid={2400 + r}) INFO 10-14 12:31:09 multiproc_worker_utils.py:215] Worker ready; "
               "awaiting tasks" for r in (1, 2, 3)),
             *_oom(2400 + device, device)]
    (tmp_path / "serve.log").write_text("\n".join(lines) + "\n")
    assert main(["diagnose", str(tmp_path / "serve.log"), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["signature"], rc["rank"]) == ("cuda.oom", device)
