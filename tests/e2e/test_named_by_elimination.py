"""A task the coordination service names, placed on the one host that did not name it
(correlator/named_by_elimination.py). Fixtures written from the formats upstream prints:

- every surviving JAX process ends with the coordination agent's fatal error (xla/tsl/distributed_runtime/
  coordination: "Terminating process because the JAX distributed service detected fatal errors. ... absl::Status:
  UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):", then one task name a line,
  "/job:jax_worker/replica:0/task:N", then "The tasks have crashed. ..."), in absl's glog format;
- the task number is the process index (jax.process_index()), the rank; one process per host;
- XLA's NCCL status (xla/service/gpu/nccl_api.cc, ToStatus: "%s:%d: NCCL operation %s failed: %s. Last NCCL
  warning(error) log entry (may be unrelated) '%s'.", with ncclGetErrorString(ncclRemoteError): "remote process
  exited or there was a network error"), printed by the dead process's ring neighbours instead of the report;
- XLA's device allocator: "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying
  to allocate N bytes."; the kernel's OOM killer (linux mm/oom_kill.c) in dmesg.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

_HOSTS = ("gpu-j01", "gpu-j02", "gpu-j03", "gpu-j04", "gpu-j05")
_START = "I0423 16:00:01.500000  {pid} distributed.py:101] Connecting to JAX distributed service on 10.0.0.1:1234"
_FATAL = ("F0423 17:04:47.604206  {pid} client.h:77] Terminating process because the JAX distributed service detected "
          "fatal errors. This most likely indicates that another task died; see the other task logs for more "
          "details. absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):")
_OOM = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
        "8589934592 bytes.")


_REMOTE = ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: external/xla/xla/service/gpu/nccl_api.cc:580: NCCL "
           "operation ncclGroupEnd() failed: remote process exited or there was a network error. Last NCCL "
           "warning(error) log entry (may be unrelated) 'socketProgress: Connection closed by remote peer "
           "10.0.0.{peer}<49586>'.")


def _job(tmp_path: Path, dead: int, silent: tuple[int, ...] = (), cause: bool = True, dmesg: bool = False,
         neighbours: tuple[int, ...] = ()) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    for task, host in enumerate(_HOSTS):
        lines = [_START.format(pid=4100 + task),
                 f"I0423 16:30:00.000000  {4100 + task} train.py:233] step 100, loss 8.0"]
        if task == dead and cause and not dmesg:
            lines += ["Traceback (most recent call last):", '  File "/workspace/train_jax.py", line 201, in <module>',
                      "    state, metrics = p_train_step(state, batch)", _OOM]
        elif task in neighbours:
            lines.append(_REMOTE.format(peer=10 + dead))
        elif task != dead and task not in silent:
            lines += [_FATAL.format(pid=4100 + task), f"/job:jax_worker/replica:0/task:{dead}",
                      "The tasks have crashed. Check the task logs for an earlier error to debug further."]
        (logs / f"{host}.log").write_text("\n".join(lines) + "\n")
    if dmesg:
        (tmp_path / "dmesg").mkdir()
        (tmp_path / "dmesg" / f"{_HOSTS[dead]}.log").write_text(
            "[3766135.399395] Out of memory: Killed process 3345269 (python) total-vm:592000000kB, "
            "anon-rss:552000000kB, file-rss:81920kB, shmem-rss:0kB, UID:1000 pgtables:1104000kB oom_score_adj:0\n")
    return tmp_path


def _root(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, int | None, str | None]:
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    return rc["signature"], rc["rank"], rc["host"]


def test_the_named_task_is_the_host_with_the_cause_that_did_not_name_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _root(_job(tmp_path, dead=2), capsys) == ("cuda.oom", 2, "gpu-j03")


def test_the_kernels_kill_on_the_silent_host_is_the_named_tasks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The process's own log just stops; its node's dmesg says why."""
    assert _root(_job(tmp_path, dead=3, dmesg=True), capsys) == ("host.oom_killer", 3, "gpu-j04")


def test_the_one_host_whose_log_holds_no_report_is_the_named_tasks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No cause was collected; every other host printed the report."""
    assert _root(_job(tmp_path, dead=1, cause=False), capsys)[1:] == (1, "gpu-j02")


def test_two_silent_hosts_leave_the_named_task_without_a_host(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Another host's report is missing too: either could be task 1's, so neither is named, and task 1 without its
    host (it may have gone down with its node) is not answered as confident."""
    path = _job(tmp_path, dead=1, silent=(4,), cause=False)
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["rank"], rc["host"]) == (1, None) and rc["confidence"] < 0.7


def test_hosts_that_lost_the_task_as_a_peer_are_not_where_it_ran(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The dead task's ring neighbours print NCCL's remote error, not the report: they were alive to see it go, so
    the one log with neither is the task's host. Found only by elimination, the answer stays under 0.9."""
    path = _job(tmp_path, dead=2, cause=False, neighbours=(1, 3))
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["rank"], rc["host"]) == (2, "gpu-j03")
    assert 0.7 <= rc["confidence"] < 0.9 and "placed by elimination" in rc["explanation"][-1]


def test_a_neighbours_report_does_not_place_the_task_where_two_logs_are_silent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _job(tmp_path, dead=2, cause=False, neighbours=(1,), silent=(3,))
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["rank"], rc["host"]) == (2, None) and rc["confidence"] < 0.7


def test_under_srun_the_lost_task_is_on_the_node_srun_says_failed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Under Slurm, JAX's process index is the task's SLURM_PROCID (jax/_src/clusters/slurm_cluster.py,
    get_process_id), the task srun numbers. srun names the failed node ("srun: error: Node failure on HOST") and
    places each task it saw end ("srun: error: HOST: task N: Aborted", slurm src/srun), printed on the submitting
    node, so no line's speaker is the lost node: the task no srun line places is the failed node's."""
    logs = tmp_path / "logs"
    logs.mkdir()
    hosts = ("r4n58", "r4n59", "r4n60")
    for task, host in enumerate(hosts):
        lines = [_START.format(pid=4100 + task)]
        if task != 2:
            lines += [_FATAL.format(pid=4100 + task), "/job:jax_worker/replica:0/task:2",
                      "The tasks have crashed. Check the task logs for an earlier error to debug further."]
        (logs / f"pretrain-9191196-{host}.out").write_text("\n".join(lines) + "\n")
    (tmp_path / "slurm-9191196.out").write_text(
        "srun: error: Node failure on r4n60\nsrun: error: r4n59: task 1: Aborted\nsrun: error: r4n58: task 0: Aborted\n"
        "slurmstepd: error: *** JOB 9191196 ON r4n58 CANCELLED AT 2026-10-05T19:14:33 DUE TO NODE FAILURE, SEE "
        "SLURMCTLD LOG FOR DETAILS ***\n")
    _sig, rank, host = _root(tmp_path, capsys)
    assert (rank, host) == (2, "r4n60")
