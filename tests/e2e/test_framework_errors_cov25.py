"""Framework errors added by the cov25 coverage sweep, read in a job rather than line by line: a compile failure on
one rank is that rank's cause, and a configuration every rank rejects names no rank. Fixtures written from the
formats upstream prints:

- torch/_dynamo/exc.py: BackendCompilerFailed's message "backend='inductor' raised:" then the inner error; Triton's
  PTXASError (triton/runtime/errors.py); torchrun's "[rankN]:" prefix on each worker's stderr;
- ProcessGroupNCCL.cpp's watchdog on the ranks left waiting in the next collective;
- torch/distributed/fsdp/_flat_param.py: "Must flatten tensors with uniform requires_grad when use_orig_params=False";
- deepspeed/runtime/engine.py (_load_zero_checkpoint): "The checkpoint being loaded used a DP world size of ...".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

_TIMEOUT = ("[rank{r}]:[E1205 10:30:01.005271823 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=204, OpType=ALLREDUCE, NumelIn=8652160, NumelOut=8652160, "
            "Timeout(ms)=1800000) ran for 1800068 milliseconds before timing out.")


def test_the_rank_whose_compile_failed_is_named_not_the_ranks_that_timed_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [f"[rank{r}]: step 100 | loss 2.31" for r in range(4)]
    lines += ["[rank2]: Traceback (most recent call last):",
              "[rank2]:   File \"/opt/train.py\", line 88, in <module>",
              "[rank2]: torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
              "[rank2]: PTXASError: PTXAS error: Internal Triton PTX codegen error"]
    lines += [_TIMEOUT.format(r=r) for r in (0, 1, 3)]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["rank"]) == ("pytorch.compile.backend_failed", 2)


@pytest.mark.parametrize(("line", "signature"), [
    ("ValueError: Must flatten tensors with uniform requires_grad when use_orig_params=False",
     "pytorch.fsdp.flat_param_not_uniform"),
    ("deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded used a DP world size of 8 but "
     "the current world size is 16. Automatic adjustment of ZeRO's optimizer state partitioning with a new world "
     "size is not currently supported.", "deepspeed.checkpoint.dp_world_size_changed"),
])
def test_a_configuration_every_rank_rejects_names_no_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          line: str, signature: str) -> None:
    lines = ["W1205 10:00:00.000000 123 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable"]
    lines += [f"[rank{r}]: {line}" for r in range(4)]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == signature
    assert rc["rank"] is None
