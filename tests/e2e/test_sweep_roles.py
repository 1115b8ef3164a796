"""Roles of catalog entries added by the issue-thread coverage sweep (docs/accuracy.md): what survivors print about a
dead peer never beats the peer's own failure, and a process's failure header yields to the exception under it.

Formats, from the files that print them:
- HCCL's EI0006 "Getting socket times out. Reason: %s" (CANN error-code table, Communication_Error_Get_Socket) on
  the ranks that waited; torch_npu's caching allocator "NPU out of memory. Tried to allocate ..."
  (torch_npu/csrc/core/npu/NPUCachingAllocator.cpp) on the rank that failed; torchrun's `[rankN]:` prefix.
- JAX's fate-sharing "Terminating process because the JAX distributed service detected fatal errors" (LOG(QFATAL)
  in xla/pjrt/distributed/client.h, glog prefix `F<mmdd> <time> <tid> client.h:<line>]`) on every surviving task,
  and the TPU runtime's "RESOURCE_EXHAUSTED: ... Attempting to allocate <size>. That was not possible." on the task
  that ran out of HBM.
- vLLM's "EngineCore failed to start." (logger.exception in run_engine_core, vllm/v1/engine/core.py) followed by
  the traceback whose last line is the cause.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main


def _diagnose(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["root_cause"]  # type: ignore[no-any-return]


def test_hccl_socket_timeouts_on_survivors_point_at_the_rank_that_ran_out_of_npu_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [f"[rank{r}]: step 40 loss 1.{r}2" for r in range(4)]
    lines.append("[rank2]: RuntimeError: NPU out of memory. Tried to allocate 3.00 GiB (NPU 2; 60.97 GiB total "
                 "capacity; 58.10 GiB already allocated; 58.10 GiB current active; 0.91 GiB free; 59.00 GiB "
                 "reserved in total by PyTorch)")
    for r in (0, 1, 3):
        lines.append(f"[rank{r}]: EI0006: [PID: 31{r}07] 2025-09-14-02:13:{10 + r}.903.115 Getting socket times out. "
                     "Reason: Remote Rank did not send the data in time. Please check the reason for the rank being "
                     "stuck")
    (tmp_path / "npu-node-0.log").write_text("\n".join(lines) + "\n")
    rc = _diagnose(tmp_path / "npu-node-0.log", capsys)
    assert (rc["signature"], rc["rank"]) == ("npu.oom", 2)


def test_jax_fate_sharing_on_every_task_leaves_the_task_that_failed_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fatal = ("F0929 17:42:48.594200 1044529 client.h:77] Terminating process because the JAX distributed service "
             "detected fatal errors. This most likely indicates that another task died; see the other task logs for "
             "more details. Disable Python buffering, i.e. `python -u`, to be sure to see all the previous output. "
             "absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):")
    for host in ("tpu-vm-0", "tpu-vm-2", "tpu-vm-3"):
        (tmp_path / f"{host}.log").write_text(f"I0929 17:40:01.000000 1044529 train.py:88] step 300\n{fatal}\n")
    (tmp_path / "tpu-vm-1.log").write_text(
        "I0929 17:40:01.000000 2211 train.py:88] step 300\n"
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to "
        "allocate 1.50G. That was not possible. There are 812.44M free.; (0x0x0_HBM0)\n")
    rc = _diagnose(tmp_path, capsys)
    assert (rc["signature"], rc["host"]) == ("tpu.hbm_oom", "tpu-vm-1")


def test_vllm_engine_core_header_yields_to_the_exception_its_traceback_ends_with(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefix = "(EngineCore_DP0 pid=144388) ERROR 08-18 20:42:56 [core.py:1330] "
    lines = [prefix + "EngineCore failed to start.",
             prefix + "Traceback (most recent call last):",
             prefix + '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 1321, in '
                      'run_engine_core',
             prefix + "    engine_core = EngineCoreProc(*args, **kwargs)",
             prefix + "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                      "when initializing the engine.",
             "(APIServer pid=144200) RuntimeError: Engine core initialization failed. See root cause above. "
             "Failed core proc(s): {}"]
    (tmp_path / "server.log").write_text("\n".join(lines) + "\n")
    rc = _diagnose(tmp_path / "server.log", capsys)
    assert rc["signature"] == "vllm.kv_cache_insufficient"
