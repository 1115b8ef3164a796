"""Two failures named by a service rather than by the failing process itself.

- Multi-host JAX: the coordination service on task 0 marks the task whose heartbeats stopped as failed and says
  which it was ("Task /job:<job>/replica:<r>/task:<N> heartbeat timeout. This indicates that the remote task has
  failed, got preempted, or crashed unexpectedly.": xla/tsl/distributed_runtime/coordination/coordination_service.cc),
  then every other task stops. Task N is the process index: the rank to name, although it printed nothing.
- TCPStore clients that cannot resolve MASTER_ADDR (torch/csrc/distributed/c10d/socket.cpp: "The IPv4 network
  addresses of (host, port) cannot be retrieved (gai error: -2 - Name or service not known)."): every worker fails
  the same way, a fault of the job's configuration, not of one rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause


def test_the_task_whose_heartbeat_stopped_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for task in range(8):
        lines = [f"I1203 10:00:0{task}.000000 14064 trainer.py:501] Training: step 9120"]
        if task == 0:
            lines.append("2026-12-03 10:03:15.140058: E external/xla/xla/tsl/distributed_runtime/coordination/"
                         "coordination_service.cc:954] /job:jax_worker/replica:0/task:5 has been set to ERROR in "
                         "coordination service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:5 heartbeat timeout. "
                         "This indicates that the remote task has failed, got preempted, or crashed unexpectedly.")
        if task != 5:
            lines.append("2026-12-03 10:03:16.000000: E external/xla/xla/tsl/distributed_runtime/coordination/"
                         "coordination_service_agent.cc:710] Coordination agent is set to ERROR: UNAVAILABLE: "
                         "another task in the cluster failed")
        (tmp_path / f"process_{task}.log").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == "jax.coordination.task_heartbeat_timeout"
    assert rc["rank"] == 5
    # the heartbeats come from the agent's own thread (coordination_service_agent.cc), not the training loop: a
    # task whose log just stops was killed or lost its host, it did not hang in its own code
    assert rc["category"] == "host" and "hung" not in rc["title"]


def test_a_task_that_raised_its_own_error_is_named_by_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _heartbeat_job(tmp_path, dead=2, own=["Traceback (most recent call last):",
                                          '  File "input_pipeline.py", line 77, in next_batch',
                                          "ValueError: shard 000231 holds 0 records"])
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["rank"] == 2 and rc["signature"] == "python.exception"


def _heartbeat_job(tmp_path: Path, dead: int, own: list[str]) -> None:
    for task in range(4):
        lines = [f"I1203 10:00:0{task}.000000 14064 trainer.py:501] Training: step 9120"]
        if task == dead:
            lines += own
        else:
            lines += ["F1203 10:03:16.000000 14064 client.h:77] Terminating process because the JAX distributed "
                      "service detected fatal errors. This most likely indicates that another task died; see the "
                      "other task logs for more details. absl::Status: UNAVAILABLE: The following tasks are "
                      "unhealthy (stopped sending heartbeats):", f"/job:jax_worker/replica:0/task:{dead}",
                      "The tasks have crashed. Check the task logs for an earlier error to debug further."]
        (tmp_path / f"process_{task}.log").write_text("\n".join(lines) + "\n")


def test_an_unresolvable_master_addr_on_every_worker_is_the_jobs_configuration(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for rank in range(1, 4):
        (tmp_path / f"worker-{rank}.log").write_text(
            "Traceback (most recent call last):\n"
            '  File "train.py", line 40, in <module>\n'
            "    dist.init_process_group('nccl')\n"
            f"[W1203 10:00:0{rank}.000000000 socket.cpp:755] [c10d] The IPv4 network addresses of (trainer-master-0, "
            "29500) cannot be retrieved (gai error: -2 - Name or service not known).\n"
            "torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of "
            "(trainer-master-0, 29500).\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == "pytorch.store.master_unresolved"
    assert rc["rank"] is None
