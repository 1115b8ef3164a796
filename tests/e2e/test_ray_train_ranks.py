"""Ray Train: the worker the raylet's memory monitor killed, named by its rank. Fixtures written from the formats
upstream prints:

- Ray Train's worker table (ray/train/_internal/backend_executor.py, _create_rank_world_size_mappings): "Started
  distributed worker processes:" then "- (node_id=..., ip=A, pid=P) world_rank=R, local_rank=L, node_rank=N" a
  worker, printed by the trainer actor under Ray's "(TorchTrainer pid=..., ip=...)" prefix;
- the OOM kill (src/ray/raylet/node_manager.cc, the memory monitor's message, raised to the driver as
  ray.exceptions.OutOfMemoryError): "Task was killed due to the node running low on memory." then "Memory on the
  node (IP: A, ID: ...) where the task (actor ID: ..., name=RayTrainWorker.__init__, pid=P, memory used=...) was
  running was ...";
- the survivors' NCCL errors under "(RayTrainWorker pid=..., ip=...)".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

_NODES = ("10.182.233.224", "10.182.203.143")


def _pid(rank: int) -> int:
    return 310000 + 97 * rank


def _driver(killed: int, table: bool) -> str:
    lines = ["(TorchTrainer pid=1965887) Started distributed worker processes: "] if table else []
    for rank in range(8):
        ip = _NODES[rank // 4]
        if table:
            lines.append(f"(TorchTrainer pid=1965887) - (node_id=1edc4c000{rank // 4}e1f2a3b4, ip={ip}, "
                         f"pid={_pid(rank)}) world_rank={rank}, local_rank={rank % 4}, node_rank={rank // 4}")
    lines.append("(RayTrainWorker pid=310000, ip=10.182.233.224) step 550 | loss 5.0571")
    ip = _NODES[killed // 4]
    lines += ["ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
              f"Memory on the node (IP: {ip}, ID: 1edc4cc0ffee) where the task (actor ID: 3fa1c0000a, "
              f"name=RayTrainWorker.__init__, pid={_pid(killed)}, memory used=71.20GB) was running was 238.90GB / "
              "251.40GB (0.950278), which exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: "
              "9b000a) because it was the most recently scheduled task."]
    for rank in (r for r in range(8) if r != killed):
        lines.append(f"(RayTrainWorker pid={_pid(rank)}, ip={_NODES[rank // 4]}) [E326 00:11:30.438295453 "
                     f"ProcessGroupNCCL.cpp:1521] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group watchdog "
                     "thread terminated with exception: NCCL error: remote process exited or there was a network "
                     "error, NCCL version 2.19.3")
    return "\n".join(lines) + "\n"


def _root(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[str, int | None, str | None]:
    (tmp_path / "driver.log").write_text(text)
    assert main(["diagnose", str(tmp_path / "driver.log"), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    return rc["signature"], rc["rank"], rc["host"]


def test_the_killed_workers_pid_in_the_worker_table_names_its_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _root(tmp_path, capsys, _driver(killed=6, table=True)) == ("ray.oom_killed", 6, "10.182.203.143")


def test_without_the_table_the_node_is_named_and_no_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _root(tmp_path, capsys, _driver(killed=6, table=False)) == ("ray.oom_killed", None, "10.182.203.143")


@pytest.mark.parametrize("actor_died", [False, True])
def test_a_peer_address_is_the_node_the_worker_table_puts_its_ranks_on(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      actor_died: bool) -> None:
    """NCCL's IB completion error (src/transport/net_ib.cc: "NET/IB : Got completion from peer %s with status=%d
    ...") on a worker of the second node names the first node's address. No line but the worker table names that
    node's ranks' host (their lines carry Ray's prefix only): the table's ip= is it, so the peer is that node and
    not an address no log maps, which had left the reporter to blame itself."""
    lines = ["(TorchTrainer pid=1965887) Started distributed worker processes: "]
    lines += [f"(TorchTrainer pid=1965887) - (node_id=1edc4c000{r // 4}e1f2a3b4, ip={_NODES[r // 4]}, pid={_pid(r)}) "
              f"world_rank={r}, local_rank={r % 4}, node_rank={r // 4}" for r in range(8)]
    lines += [f"(RayTrainWorker pid={_pid(r)}, ip={_NODES[r // 4]}) step 550 | loss 5.0571" for r in range(8)]
    lines += [f"(RayTrainWorker pid={_pid(5)}, ip={_NODES[1]}) worker-b:{_pid(5)}:{_pid(5) + 37} [1] "
              f"transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer {_NODES[0]}<31146> with "
              "status=12 opcode=0 len=0 vendor err 129 (Send)"]
    if actor_died:  # ray/exceptions.py ActorDiedError: the driver's report, a victim's line about that node
        lines += ["ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
                  "\tclass_name: RayTrainWorker", "\tactor_id: 3fa1c00000", f"\tpid: {_pid(0)}",
                  "\tnamespace: 743800", f"\tip: {_NODES[0]}"]
    (tmp_path / "driver.log").write_text("\n".join(lines) + "\n")
    assert main(["diagnose", str(tmp_path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert rc["host"] == _NODES[0] and rc["rank"] != 5
    # the node's own lines are only a victim's: the IB error that points at it says what failed
    assert rc["signature"].startswith("nccl.ib.")


def _raylet_death(ip: str, pid: int, repeated: int = 1) -> str:
    """The raylet's report of a worker that exited (src/ray/raylet/node_manager.cc), as Ray prints it on the
    driver under "(raylet) "; Ray's log deduplication appends "[repeated Nx across cluster]" to one line that
    stands for N alike (python/ray/_private/ray_logging)."""
    folded = f" [repeated {repeated}x across cluster]" if repeated > 1 else ""
    return ("(raylet) A worker died or was killed while executing a task by an unexpected system error. To "
            "troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffffffffffffffff3fe85624f7 "
            f"Worker ID: fead2dfe78eeee17dd89 Node ID: 201f2cc4bc593d83 Worker IP address: {ip} Worker port: 10046 "
            f"Worker PID: {pid} Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a "
            f"connection error code 2. End of file.{folded}")


@pytest.mark.parametrize("repeated", [1, 3])
def test_ray_trains_failed_worker_index_names_the_dead_workers_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], repeated: int) -> None:
    """Ray Train's trainer logs "Worker {i} has failed." for the worker whose call raised RayActorError
    (ray/train/_internal/utils.py, check_for_failure; worker i runs world_rank=i, backend_executor.py
    start_training). With the raylet's report of the one worker process that died, that process is rank i. A
    report Ray folded from several deaths ("[repeated 3x across cluster]") names none of them for sure: no rank."""
    text = "\n".join([_raylet_death(_NODES[1], _pid(6), repeated),
                      "(TorchTrainer pid=1965887) Worker 6 has failed."]) + "\n"
    signature, rank, host = _root(tmp_path, capsys, text)
    assert (signature, host) == ("ray.worker_crashed", _NODES[1])
    assert rank == (6 if repeated == 1 else None)


@pytest.mark.parametrize(("width", "whole"), [(120, True), (170, True), (150, False), (160, False)])
def test_a_raylet_report_wrapped_by_the_terminal_names_its_node_from_a_later_row(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], width: int, whole: bool) -> None:
    """A terminal wraps the raylet's one-line report at its width and a paste keeps the rows: the address is on a
    row after the one the catalog matches. It is the same report's, so its node is named (and, with Ray Train's
    "Worker N has failed.", its rank). Where the wrap cuts into the address or the pid (at 150 and 160 columns
    here), no row says them whole, and nothing is named rather than half an address or a pid's first digits."""
    report = _raylet_death(_NODES[1], _pid(6))
    rows = [report[i:i + width] for i in range(0, len(report), width)]
    assert "Worker IP address" not in rows[0]
    assert whole == any(f"Worker IP address: {_NODES[1]} Worker port: 10046 Worker PID: {_pid(6)} Worker" in row
                        for row in rows)
    text = "\n".join([*rows, "(TorchTrainer pid=1965887) Worker 6 has failed."]) + "\n"
    assert _root(tmp_path, capsys, text) == (("ray.worker_crashed", 6, _NODES[1]) if whole
                                             else ("ray.worker_crashed", None, None))
