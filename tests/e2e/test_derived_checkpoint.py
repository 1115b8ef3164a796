"""A checkpoint save that started and never finished (correlator/derived.py, pytorch.checkpoint.save_hang).

The start and finish lines, as upstream prints them:
- pytorch/torchtitan torchtitan/components/checkpoint.py CheckpointManager.save:
  logger.info("Saving the checkpoint (or staging if async is enabled).") ... logger.info("Finished saving the
  checkpoint (or staging if async is enabled) " f"in {time.monotonic() - begin:.2f} seconds.")
- NVIDIA/Megatron-LM megatron/training/checkpointing.py save_checkpoint (print_rank_0): f"[{now}] saving checkpoint
  at iteration {iteration:7d} to {save_dir} in {ckpt_format} format" ... f"  [{now}] successfully saved checkpoint
  from iteration {int(iteration):7d} to {args.save} [ t 1/8, p 1/1 ]"
A watchdog line (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp) is what the others print once the save holds
them past the collective timeout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

_TITAN = "[rank{r}]:[titan] 2026-03-02 09:{m}:{s},102 - root - INFO - "
_WATCHDOG = ("[rank{r}]:[E302 09:25:{s}.123456789 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
             "operation timeout: WorkNCCL(SeqNum=4120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
             "ran for 600012 milliseconds before timing out.")


def _diagnose(capsys: pytest.CaptureFixture[str], *paths: Path) -> dict[str, object]:
    assert main(["diagnose", *map(str, paths), "--format", "json"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def _titan_rank(r: int, finishes: bool, then: str = "") -> str:
    lines = [_TITAN.format(r=r, m=10, s="00") + "step: 1000  loss:  3.41  memory: 61.20GiB(77.30%)  tps: 7,538",
             _TITAN.format(r=r, m=10, s="01") + "Saving the checkpoint (or staging if async is enabled).",
             _TITAN.format(r=r, m=10, s="14") + "Finished saving the checkpoint (or staging if async is enabled) in "
             "13.02 seconds.",
             _TITAN.format(r=r, m=14, s="55") + "step: 2000  loss:  3.12  memory: 61.20GiB(77.30%)  tps: 7,540",
             _TITAN.format(r=r, m=14, s="55") + "Saving the checkpoint (or staging if async is enabled)."]
    if finishes:
        lines.append(_TITAN.format(r=r, m=15, s="08") + "Finished saving the checkpoint (or staging if async is "
                     "enabled) in 12.87 seconds.")
    return "\n".join(lines + ([then] if then else [])) + "\n"


def test_every_rank_stuck_in_the_save_without_a_traceback(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Four ranks start the step-2000 save, none finishes, all time out: the job died inside the save."""
    for r in range(4):
        (tmp_path / f"rank{r}.log").write_text(_titan_rank(r, False, _WATCHDOG.format(r=r, s=f"1{r}")))
    d = _diagnose(capsys, tmp_path)
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] == "pytorch.checkpoint.save_hang"
    assert rc["rank"] is None and rc["host"] is None  # no rank finished: nobody stands out
    assert "checkpoint save" in " ".join(rc["explanation"])
    assert any("Saving the checkpoint" in ev["text"] for ev in rc["evidence"])
    assert "Finished saving" in str(d["verification"])


def test_the_one_rank_that_did_not_finish_the_save_is_named(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Ranks 0, 1 and 3 finish the step-2000 save and time out in the next collective; rank 2 never finishes."""
    for r in range(4):
        (tmp_path / f"rank{r}.log").write_text(_titan_rank(r, r != 2, "" if r == 2 else _WATCHDOG.format(r=r, s="30")))
    rc = _diagnose(capsys, tmp_path)["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] == "pytorch.checkpoint.save_hang"
    assert rc["rank"] == 2
    assert "3 other rank(s) finished" in " ".join(rc["explanation"])


def test_megatron_rank0_save_that_never_finished(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Megatron prints both lines on rank 0 only: the iteration-1000 save finished, the 2000 one did not."""
    log = "\n".join([
        " [2026-03-02 09:10:01.102311] saving checkpoint at iteration    1000 to /ckpt/gpt-8b in torch_dist format",
        "  [2026-03-02 09:10:40.551020] successfully saved checkpoint from iteration    1000 to /ckpt/gpt-8b "
        "[ t 1/8, p 1/1 ]",
        " iteration     2000/  500000 | consumed samples:      2048000 | elapsed time per iteration (ms): 1510.2",
        " [2026-03-02 09:14:55.102311] saving checkpoint at iteration    2000 to /ckpt/gpt-8b in torch_dist format",
        _WATCHDOG.format(r=0, s="12"),
    ]) + "\n"
    (tmp_path / "rank0.log").write_text(log)
    rc = _diagnose(capsys, tmp_path / "rank0.log")["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] == "pytorch.checkpoint.save_hang"
    assert rc["rank"] is None


def test_a_finished_save_before_a_cause_leaves_the_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The save finished; a CUDA OOM on rank 1 afterwards is the cause."""
    oom = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
           "capacity of 79.15 GiB of which 1.02 GiB is free.")
    for r in range(2):
        (tmp_path / f"rank{r}.log").write_text(_titan_rank(r, True, oom if r == 1 else ""))
    rc = _diagnose(capsys, tmp_path)["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] != "pytorch.checkpoint.save_hang"
    assert rc["rank"] == 1


def test_a_log_that_stops_inside_a_save_with_nothing_after_is_no_failure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A running job's log copied mid-save: nothing says the job died in it."""
    (tmp_path / "rank0.log").write_text(_titan_rank(0, False))
    assert _diagnose(capsys, tmp_path / "rank0.log")["verdict"] == "no_failure_found"


def test_an_older_torchtitan_last_step_save_has_no_finish_line_to_miss(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchtitan before its checkpointer refactor (components/checkpoint.py, CheckpointManager.save) returned from
    the last step's save before logging "Finished saving ...", having logged "Saving a full checkpoint at last
    step, step N.": a failure at shutdown afterwards is not a hang inside that save."""
    lines = [_TITAN.format(r=0, m=20, s="00") + "Saving the checkpoint (or staging if async is enabled).",
             _TITAN.format(r=0, m=20, s="00") + "Saving a model only checkpoint in torch.bfloat16 at last step, "
             "step 3000.",
             _WATCHDOG.format(r=0, s="40")]
    (tmp_path / "rank0.log").write_text("\n".join(lines) + "\n")
    rc = _diagnose(capsys, tmp_path / "rank0.log")["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] != "pytorch.checkpoint.save_hang"


_TABLE_KILLED = "\n".join(["torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", *F.failure_table(
    "train.py", "2026-03-02_09:16:02", "node001", 1, 1, -9, 4242, "Signal 9 (SIGKILL) received by PID 4242")]) + "\n"


def test_a_rank_sigkilled_during_the_save_is_reported_as_killed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Staging a checkpoint to host memory can bring the OOM killer: the SIGKILLed rank (torchrun's table,
    torch/distributed/elastic/multiprocessing/errors/__init__.py) is the answer, the unfinished save a runner-up."""
    for r in range(2):
        (tmp_path / f"rank{r}.log").write_text(_titan_rank(r, False))
    (tmp_path / "launcher.log").write_text(_TABLE_KILLED)
    rc = _diagnose(capsys, tmp_path)["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] != "pytorch.checkpoint.save_hang"
    assert rc["rank"] == 1
    assert "exit code -9 ended it" in " ".join(rc["explanation"])  # the save is said, as a runner-up
