"""Formats added from real logs, each written here from its upstream source.

- JAX's coordination service aborts the job when a task registers again under a new incarnation: "/job:<job>/
  replica:<r>/task:<N> unexpectedly tried to connect with a different incarnation. It has likely restarted."
  (xla/tsl/distributed_runtime/coordination/coordination_service.cc). Task N restarted: the process to name.
- paddle.distributed.launch ends with "Container rank N status failed cmd [...] code C log F"
  (python/paddle/distributed/launch/controllers/controller.py): an exit report that names the rank.
- libtpu's driver: "Received Error Interrupt! fatal: true" on the host whose TPU chip halted.
- Ascend CANN: "rtDeviceSynchronize execute failed, reason=[...]" (a device exception, or a task timeout while an
  HCCL collective waits on a peer).
- NCCL's INFO back trace, "<file>:<line> -> <result code>" a frame (src/include/checks.h NCCLCHECK): where an error
  travelled, never more than the line that set it.
- busybox nslookup's "can't resolve '<name>'" from a pod's start-up script that waits for the master.
- JAX's failed RegisterTask call to the coordination service (XLA names the RPC after the status).
- paddle's container report with a signal code ("code -6"): the code is how the worker ended."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

_COORD = "external/xla/xla/tsl/distributed_runtime/coordination"


def test_the_task_that_came_back_with_a_new_incarnation_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for task in range(4):
        lines = [f"I1203 10:00:0{task}.000000 1406{task} train.py:88] step 4410 loss 2.113"]
        if task == 0:
            lines += [f"2026-12-03 10:02:11.837611: E {_COORD}/coordination_service.cc:962] /job:jax_worker/replica:0/"
                      "task:2 unexpectedly tried to connect with a different incarnation. It has likely restarted.",
                      f"2026-12-03 10:02:11.837685: E {_COORD}/coordination_service.cc:2163] Use error polling to "
                      "propagate the following error to all tasks: ABORTED: /job:jax_worker/replica:0/task:2 "
                      "unexpectedly tried to connect with a different incarnation. It has likely restarted."]
        lines.append(f"E1203 10:02:12.000{task}00 387 coordination_service_agent.cc:455] Polled an error from "
                     "coordination service (this can be an error from this or another task).")
        (tmp_path / f"process_{task}.log").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == "jax.coordination.task_restarted"
    assert rc["rank"] == 2


@pytest.mark.parametrize("trimmed", [True, False])
def test_tasks_that_cannot_register_with_the_coordinator_fail_the_jobs_configuration(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], trimmed: bool) -> None:
    """Every task's jax.distributed.initialize fails its RegisterTask call to the coordination service. XLA names
    the failed call after the status: "RPC: /tensorflow.CoordinationService/RegisterTask" once the gRPC detail is
    trimmed (xla/tsl/distributed_runtime/coordination/coordination_service_error_util.cc), "... while calling
    /tensorflow.CoordinationService/RegisterTask:" before (xla/tsl/distributed_runtime/rpc/grpc_state.h). What
    they share (the coordinator's address, port, firewall) failed: no one task is named."""
    for task in range(4):
        tail = ("RPC: /tensorflow.CoordinationService/RegisterTask" if trimmed else
                "Additional GRPC error information from remote target unknown_target_for_coordination_leader while "
                "calling /tensorflow.CoordinationService/RegisterTask:")
        (tmp_path / f"worker_{task}.log").write_text(
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.11/site-packages/jax/_src/distributed.py", line 116, in initialize\n'
            "    self.client.connect()\n"
            "jaxlib._jax.XlaRuntimeError: DEADLINE_EXCEEDED: Deadline Exceeded\n" + tail + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == "jax.coordination.register_failed"
    assert rc["rank"] is None and rc["host"] is None


def test_paddles_container_report_names_the_rank_when_nothing_else_speaks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "launch.log").write_text(
        "LAUNCH INFO 2026-12-03 02:35:54,384 Pod failed\n"
        "LAUNCH ERROR 2026-12-03 02:35:54,385 Container failed !!!\n"
        "Container rank 5 status failed cmd ['/usr/bin/python3', '-u', 'tools/train.py', '--eval'] code 1 log "
        "log/workerlog.5\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == "paddle.launch.container_failed"
    assert rc["rank"] == 5


@pytest.mark.parametrize(("code", "signature"), [(-6, "torchrun.worker_sigabrt"), (-9, "torchrun.worker_sigkilled"),
                                                 (1, "paddle.launch.container_failed")])
def test_a_signal_in_paddles_container_report_is_how_the_worker_ended(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], code: int, signature: str) -> None:
    """The launcher reports the child's returncode, negative for the signal that ended it (Python's
    subprocess.Popen.returncode): "code -6" is an abort, "code -9" a SIGKILL, as torchrun's "exitcode: -6" is;
    its entry names no signal of its own, so the code is the class. A plain "code 1" says only that it failed."""
    (tmp_path / "launch.log").write_text(
        "LAUNCH INFO 2026-12-03 02:04:51,548 Pod failed\n"
        "LAUNCH ERROR 2026-12-03 02:04:51,549 Container failed !!!\n"
        f"Container rank 3 status failed cmd ['/usr/bin/python3', '-u', 'tools/train.py', '--amp'] code {code} log "
        "log/workerlog.3\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["rank"]) == (signature, 3)


def test_a_cause_line_above_paddles_container_report_is_the_class(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "launch.log").write_text(
        "Traceback (most recent call last):\n"
        '  File "tools/train.py", line 172, in <module>\n'
        "    main()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.15 GiB of which 1.02 GiB is free.\n"
        "LAUNCH INFO 2026-12-03 02:35:54,384 Pod failed\n"
        "LAUNCH ERROR 2026-12-03 02:35:54,385 Container failed !!!\n"
        "Container rank 0 status failed cmd ['/usr/bin/python3', '-u', 'tools/train.py'] code 1 log log/workerlog.0\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] != "paddle.launch.container_failed"
    assert "oom" in rc["signature"]


def test_the_tpu_host_whose_chip_raised_a_fatal_interrupt_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = []
    for ip in ("10.130.0.54", "10.130.0.55", "10.130.0.56"):
        lines.append(f"(train_task pid=3929{ip[-1]}, ip={ip}) I0827 23:40:00.000000 1 train.py:90] step 1200")
    lines += ["(train_task pid=39295, ip=10.130.0.55) E0827 23:43:41.200122   39475 synchronous_driver.cc:820] "
              "[/dev/accel0 tpu1013:pe1:0] !!!! FATAL ERROR !!!! for [/dev/accel0 tpu1013:pe1:0] , fatal_error: true",
              "(train_task pid=39295, ip=10.130.0.55) E0827 23:43:41.200136   39689 error_handler.cc:100] Received "
              "Error Interrupt! fatal: true, running_timer: 0xeacdaccd3b4ec"]
    (tmp_path / "ray.log").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == "tpu.fatal_error_interrupt"
    assert rc["host"] == "10.130.0.55"


@pytest.mark.parametrize(("reason", "signature"), [("sdma copy error", "npu.device_exception"),
                                                   ("task timeout", "npu.device_sync_timeout")])
def test_ascends_device_synchronize_failure_is_classed_by_its_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], reason: str, signature: str) -> None:
    (tmp_path / "train.log").write_text(
        "[W NPUStream.cpp:365] Warning: NPU warning, error code is 107020[Error]: .\n"
        "EH9999: Inner Error!\n"
        f"        rtDeviceSynchronize execute failed, reason=[{reason}][FUNC:FuncErrorReason]"
        "[FILE:error_message_manage.cc][LINE:53]\n")
    assert cli_root_cause(tmp_path, capsys)["signature"] == signature


def test_an_nccl_back_trace_alone_says_which_result_code_and_that_it_is_unsure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frames = ["misc/socket.cc:564", "misc/socket.cc:615", "bootstrap.cc:270", "init.cc:1303"]
    (tmp_path / "train.log").write_text(
        "".join(f"nd20-01:191191:219889 [0] NCCL INFO {frame} -> 2\n" for frame in frames)
        + "nd20-01:191191:219889 [0] NCCL INFO group.cc:64 -> 2 [Async thread]\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == "nccl.trace.system_error"
    assert rc["confidence"] < 0.5


def test_a_back_trace_never_outranks_the_line_a_rank_says_of_its_own_abort(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "train.log").write_text(
        "".join(f"n124:31224{d}:32696{d} [{d}] NCCL INFO misc/socket.cc:881 -> 3\n" for d in range(4))
        + "[rank6]:[E624 04:14:29.224103812 ProcessGroupNCCL.cpp:684] [Rank 6] Some NCCL operations have failed or "
          "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
          "corrupted/incomplete data.\n"
        + "[rank6]:[E624 04:14:29.224139849 ProcessGroupNCCL.cpp:698] [Rank 6] To avoid data inconsistency, we are "
          "taking the entire process down.\n")
    assert not cli_root_cause(tmp_path, capsys)["signature"].startswith("nccl.trace.")



def test_where_every_line_is_a_consequence_a_wrapper_is_not_the_one_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NCCL's `ncclAsyncJobComplete: job ... failed, job error N` (group.cc) only carries a result code up; the
    abort line printed after it says what the rank went through."""
    (tmp_path / "train.log").write_text(
        "n124:312247:326969 [0] group.cc:89 NCCL WARN ncclAsyncJobComplete: job 0x55d1c2a0 failed, job error 3\n"
        "[rank6]:[E624 04:14:29.224103812 ProcessGroupNCCL.cpp:684] [Rank 6] Some NCCL operations have failed or "
        "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.\n"
        "[rank6]:[E624 04:14:29.224139849 ProcessGroupNCCL.cpp:698] [Rank 6] To avoid data inconsistency, we are "
        "taking the entire process down.\n")
    assert cli_root_cause(tmp_path, capsys)["signature"] != "nccl.group.async_job_failed"

def test_a_start_up_script_that_cannot_resolve_the_master_is_the_jobs_configuration(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "worker-0.log").write_text(
        "nslookup: can't resolve 'job-7f3a-master-0': Name does not resolve\n"
        "waiting for master\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n")
    assert cli_root_cause(tmp_path, capsys)["signature"] == "pytorch.store.master_unresolved"


def test_rays_oom_summary_wrapped_by_a_terminal_still_names_its_node(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The raylet's summary (src/ray/raylet/node_manager.cc) cut by the terminal before "node (ID: ..., IP: ...)"."""
    (tmp_path / "driver.log").write_text(
        "(raylet) [2026-12-03 09:57:19,206 E 393463 393463] (raylet) node_manager.cc:3277: 2 Workers (tasks / actors) "
        "killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at \n"
        "node (ID: 8289f87b78d161ae21bf723c7c57838345a56248dd48a2c3f0d5ac73, IP: 172.24.0.226) over the last time "
        "period. To see more information about the Workers killed on this node, use `ray logs raylet.out -ip "
        "172.24.0.226`\n"
        "(raylet) \n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["host"]) == ("ray.oom_killed", "172.24.0.226")


def test_the_peer_a_proxys_failed_connect_lost_is_the_suspect_not_the_proxy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One message: NCCL's socket WARN naming the peer (misc/socket.cc), the back trace, then the proxy's WARN naming
    its own rank (proxy.cc: "[Proxy Service %d] Failed to execute operation %s from rank %d, retcode %d")."""
    head = "gpu-22:183006:183220 [1]"
    (tmp_path / "gpu-22.log").write_text(
        f"{head} misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.200.84.247<58355> failed : Broken pipe\n"
        + "".join(f"{head} NCCL INFO {frame} -> 6\n" for frame in
                  ("misc/socket.cc:535", "transport/net_socket.cc:368", "include/net.h:26", "proxy.cc:991"))
        + f"{head} proxy.cc:1119 NCCL WARN [Proxy Service 9] Failed to execute operation Connect from rank 9, "
          "retcode 6\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["host"] == "10.200.84.247" and rc["rank"] is None, rc["explanation"]
