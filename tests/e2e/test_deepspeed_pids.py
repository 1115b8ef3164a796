"""A DeepSpeed worker the kernel's OOM killer names by pid, found by its rank: the launcher names each node's
workers in local-rank order (correlator/deepspeed_pids.py). Fixtures written from the formats upstream prints:

- deepspeed/launcher/launch.py, main: `nnodes={n}, num_local_procs={p}, node_rank={r}`, `dist_world_size={w}`;
  workers started `for local_rank in range(0, num_local_procs)` (RANK = global_rank_mapping[node][local_rank]) and
  kept in `processes`; sigkill_handler: `Killing subprocess {pid}` for each, in that order; recent releases also
  `process {pid} spawned with command: {cmd}` as each starts;
- deepspeed/launcher/multinode_runner.py PDSHRunner: pdsh -S -f 1024 -w HOSTS, each line `host: ...` (pdsh);
- ProcessGroupNCCL.cpp's watchdog on a survivor; the kernel's OOM kill (linux mm/oom_kill.c) in the node's dmesg.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

HOSTS = ("ds-node-a1", "ds-node-a2")
STAMP = "[2024-03-02 10:46:47,607] [INFO]"


def _pid(node: int, local: int) -> int:
    return 40000 + 1000 * node + 37 * local


def _job(root: Path, nproc: tuple[int, int] = (4, 4), spawned: bool = False, victim: tuple[int, int] = (1, 2)) -> Path:
    lines = []
    world = sum(nproc)
    for node, host in enumerate(HOSTS):
        lines.append(f"{host}: {STAMP} [launch.py:152:main] nnodes=2, num_local_procs={nproc[node]}, node_rank={node}")
        lines.append(f"{host}: {STAMP} [launch.py:164:main] dist_world_size={world}")
        if spawned:
            lines += [f"{host}: {STAMP} [launch.py:256:main] process {_pid(node, k)} spawned with command: "
                      f"['/usr/bin/python3', '-u', 'train.py', '--local_rank={k}']" for k in range(nproc[node])]
    survivor = 0
    lines.append(f"{HOSTS[survivor]}: [E302 10:46:40.269891388 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
                 "collective operation timeout: WorkNCCL(SeqNum=8812, OpType=ALLREDUCE, NumelIn=1048576, "
                 "NumelOut=1048576, Timeout(ms)=600000) ran for 600293 milliseconds before timing out.")
    for node, host in enumerate(HOSTS):
        lines += [f"{host}: {STAMP} [launch.py:315:sigkill_handler] Killing subprocess {_pid(node, k)}"
                  for k in range(nproc[node])]
    root.mkdir(parents=True)
    (root / "deepspeed_train.log").write_text("\n".join(lines) + "\n")
    (root / "dmesg").mkdir()
    node, local = victim
    (root / "dmesg" / f"{HOSTS[node]}.log").write_text(
        f"[2506528.734809] Out of memory: Killed process {_pid(node, local)} (python) total-vm:522000000kB, "
        "anon-rss:482000000kB, file-rss:81920kB, shmem-rss:0kB, UID:1000 pgtables:964000kB oom_score_adj:0\n")
    return root


def _root(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    rc: dict[str, object] = json.loads(capsys.readouterr().out)["root_cause"]
    return rc


@pytest.mark.parametrize("spawned", [False, True])
def test_the_killed_pid_is_the_rank_its_launcher_started_it_as(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               spawned: bool) -> None:
    """Node 1's third worker (local rank 2) is rank 1 * 4 + 2."""
    rc = _root(_job(tmp_path / "job", spawned=spawned), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("host.oom_killer", 6, HOSTS[1])


def test_nodes_of_different_sizes_leave_the_pid_unranked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """global_rank_mapping numbers the nodes' workers one node after another: with 3 and 4 workers, node_rank * p is
    not that numbering, so no rank is read from it (the host still is)."""
    rc = _root(_job(tmp_path / "job", nproc=(3, 4)), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("host.oom_killer", None, HOSTS[1])
