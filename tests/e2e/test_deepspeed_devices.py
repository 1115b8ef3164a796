"""A DeepSpeed worker's own CUDA OOM, found by its rank from the device index it names (correlator/deepspeed_pids.py).
Fixtures written from the formats upstream prints and the device each worker takes:

- deepspeed/launcher/launch.py, main: `nnodes={n}, num_local_procs={p}, node_rank={r}`, `dist_world_size={w}`;
  global_rank_mapping numbers the nodes' slots one node after another; set_visible_devices_envs sets the node's
  CUDA_VISIBLE_DEVICES to its world_info slots and each worker gets --local_rank=k (LOCAL_RANK);
- deepspeed/runtime/engine.py, _set_distributed_vars: set_device(device_rank), device_rank = local_rank by default;
- c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate X. GPU %d has a total capacity of ..."
  naming the process's device index (counted within CUDA_VISIBLE_DEVICES): worker k's is k;
- deepspeed/launcher/multinode_runner.py PDSHRunner: pdsh -S -f 1024 -w HOSTS, each line `host: ...` (pdsh).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

HOSTS = ("ds-gpu-07", "ds-gpu-08", "ds-gpu-09")
STAMP = "[2025-01-14 08:12:03,118] [INFO]"


def _oom(device: int) -> str:
    return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU {device} has a total "
            "capacity of 79.15 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 78.01 "
            "GiB memory in use. Of the allocated memory 75.30 GiB is allocated by PyTorch, and 1.9 GiB is reserved "
            "by PyTorch but unallocated.")


def _job(root: Path, nproc: tuple[int, ...] = (4, 4, 4), oom_on: tuple[int, int] = (1, 3),
         pdsh: bool = True) -> Path:
    world = sum(nproc)
    lines = []
    for node, host in enumerate(HOSTS):
        said = [f"{STAMP} [launch.py:152:main] nnodes={len(HOSTS)}, num_local_procs={nproc[node]}, node_rank={node}",
                f"{STAMP} [launch.py:164:main] dist_world_size={world}",
                f"{STAMP} [launch.py:166:main] Setting CUDA_VISIBLE_DEVICES="
                + ",".join(str(k) for k in range(nproc[node]))]
        lines += [f"{host}: {line}" if pdsh else line for line in said]
    node, device = oom_on
    said = ["Traceback (most recent call last):", '  File "train.py", line 88, in <module>',
            "    loss = engine(batch)", _oom(device)]
    lines += [f"{HOSTS[node]}: {line}" if pdsh else line for line in said]
    lines.append(f"{HOSTS[0]}: [rank0]:[E114 08:40:12.118394220 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0("
                 "default_pg) Rank 0] Process group watchdog thread terminated with exception: NCCL error: remote "
                 "process exited or there was a network error, NCCL version 2.21.5")
    root.mkdir(parents=True)
    (root / "train.log").write_text("\n".join(lines) + "\n")
    return root


def _root(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    rc: dict[str, object] = json.loads(capsys.readouterr().out)["root_cause"]
    return rc


@pytest.mark.parametrize(("node", "device", "rank"), [(1, 3, 7), (2, 0, 8), (0, 2, 2)])
def test_the_oom_device_on_a_node_is_its_local_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      node: int, device: int, rank: int) -> None:
    """Node r's device k is local rank k: rank r * 4 + k."""
    rc = _root(_job(tmp_path / "job", oom_on=(node, device)), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("cuda.oom", rank, HOSTS[node])


def test_nodes_of_different_sizes_leave_the_device_unranked(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """With 4, 3 and 4 slots global_rank_mapping is not node_rank * p + k: no rank is read from the device."""
    rc = _root(_job(tmp_path / "job", nproc=(4, 3, 4), oom_on=(2, 1)), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("cuda.oom", None, HOSTS[2])


def test_without_pdsh_host_prefixes_the_device_names_no_rank(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A log without the node's name on its lines: device 3 is local rank 3 on some node, not a rank."""
    rc = _root(_job(tmp_path / "job", oom_on=(1, 3), pdsh=False), capsys)
    assert (rc["signature"], rc["rank"]) == ("cuda.oom", None)
